/**
 * Crash tests of `boxkit serve` with a durable store (docs/ASSUMPTIONS.md "Durable state (local service)"): the service
 * runs as a process (the command from its sources), is loaded with idempotent creates, secrets and background responses
 * with completion webhooks, is killed with SIGKILL while requests are in flight, and is started again on the same
 * store. Then every acknowledged record must be there, every acknowledged create must replay its box, a create in
 * flight at the kill retried with its key must make one box, and every acknowledged background response must complete
 * and have its webhook delivered.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** An answer of the service. */
export interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly json: any
}

/** The app of the example seed's organization acme. */
export const appId = "app_00000000-0000-4000-8000-000000000001"

/** One request to the service at `base` (`http://host:port`); rejects on a connection error. */
export const send = (
  base: URL,
  path: string,
  options: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {}
) =>
  new Promise<Answer>((resolve, reject) => {
    const request = http.request({
      host: base.hostname,
      port: base.port,
      path,
      method: options.method ?? "GET",
      agent: false,
      headers: {
        authorization: `Bearer ${options.key ?? "sk_acme_org"}`,
        "content-type": "application/json",
        ...options.headers
      }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("error", reject)
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown = undefined
        try {
          json = text === "" ? undefined : JSON.parse(text)
        } catch {
          json = text
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, json })
      })
    })
    request.on("error", reject)
    request.end(options.body === undefined ? undefined : JSON.stringify(options.body))
  })

/** Waits until `condition` holds, checking every 20 ms, at most `limitMillis`. */
export const waitFor = async (condition: () => Promise<boolean> | boolean, what: string, limitMillis = 60_000) => {
  const started = Date.now()
  while (!(await condition())) {
    if (Date.now() - started > limitMillis) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** A running `boxkit serve`. */
export interface Served {
  readonly child: ChildProcess
  readonly url: URL
  readonly output: () => string
  readonly exited: Promise<number | null>
}

/**
 * Starts `boxkit serve --port 0` with `args` and waits for its address: the command as users run it (`node
 * bin/boxkit.js`, which runs the bundle of the sources in its own process, so that SIGKILL reaches the service itself;
 * vitest's global setup builds the bundle, and bin/boxkit.js rebuilds it when a source is newer). About 0.7 s of CPU to
 * start, where node with tsx's loader over src/bin.ts took about 6 s, transforming the sources at each start.
 */
export const serve = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) =>
  new Promise<Served>((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/boxkit.js", "serve", "--port", "0", ...args], {
      cwd: process.cwd(),
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/\S+)\/v1/.exec(output)
      if (match !== null && /^state: .*\n/m.test(output)) resolve({ child, url: new URL(match[1]), output: () => output, exited })
    })
    child.on("exit", (code) => reject(new Error(`serve exited early with ${code}: ${output}`)))
  })

/** Kills a served process with SIGKILL and waits for it to be gone. */
export const kill = async (served: Served) => {
  served.child.kill("SIGKILL")
  await served.exited
}

/**
 * A webhook receiver: every POST answered 503 while `refusing` is set (the deliveries then wait in their retry
 * rounds), else 200; `received` counts the deliveries answered 200 by response id, `refused` the others.
 */
export const receiver = async () => {
  const received = new Map<string, number>()
  let refused = 0
  const control = { refusing: false }
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      if (control.refusing) {
        refused++
        response.writeHead(503).end()
        return
      }
      try {
        const id = JSON.parse(Buffer.concat(chunks).toString("utf8")).id as string
        received.set(id, (received.get(id) ?? 0) + 1)
      } catch {
        // Not a response object: counted nowhere.
      }
      response.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    control,
    refused: () => refused,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** What the load got acknowledged (a 2xx answer) before the kill, and what was in flight. */
export interface Acknowledged {
  /** Create-box idempotency key → box id, for every create answered 201. */
  readonly creates: Map<string, string>
  /** Keys of creates sent and never answered (in flight at the kill, or refused by it). */
  readonly unanswered: Set<string>
  /** Secret names answered 2xx. */
  readonly secrets: Set<string>
  /** Background response ids answered 2xx. */
  readonly responses: Set<string>
}

/** The body of the create-box request of load item `index`. */
export const createBody = (prefix: string, index: number) => ({ name: `${prefix}-${index}`, app_id: appId, image: { base: "debian" } })

/**
 * Loads the services at `urls` (worker `i` sends to `urls[i % length]`) with `workers` concurrent loops, each round
 * one idempotent create, one secret and one background response with a webhook to `webhookUrl`, until `stop()` turns
 * true; a connection error (the kill) ends a loop. `acknowledged` grows as answers come; `done` settles when every
 * loop ended.
 */
export const load = (
  urls: ReadonlyArray<URL>,
  options: { readonly prefix: string; readonly workers: number; readonly webhookUrl: string; readonly stop: () => boolean }
): { readonly acknowledged: Acknowledged; readonly done: Promise<void> } => {
  const acknowledged: Acknowledged = { creates: new Map(), unanswered: new Set(), secrets: new Set(), responses: new Set() }
  let next = 0
  const loop = async (worker: number) => {
    const url = urls[worker % urls.length]
    while (!options.stop()) {
      const index = next++
      const key = `${options.prefix}-key-${index}`
      try {
        acknowledged.unanswered.add(key)
        const created = await send(url, "/v1/boxes", {
          method: "POST",
          body: createBody(options.prefix, index),
          headers: { "idempotency-key": key }
        })
        acknowledged.unanswered.delete(key)
        if (created.status === 201) acknowledged.creates.set(key, created.json.box_id)
        const name = `${options.prefix}-secret-${index}`
        const secret = await send(url, "/v1/secrets", { method: "POST", body: { name, value: `value-${index}` } })
        if (secret.status >= 200 && secret.status < 300) acknowledged.secrets.add(name)
        const response = await send(url, "/v1/responses", {
          method: "POST",
          body: {
            model: "boxkit-local",
            input: `crash test ${index}`,
            background: true,
            metadata: { completion_webhook: options.webhookUrl }
          }
        })
        if (response.status >= 200 && response.status < 300) acknowledged.responses.add(response.json.id)
      } catch {
        return
      }
    }
  }
  const done = Promise.all(Array.from({ length: options.workers }, (_, worker) => loop(worker))).then(() => undefined)
  return { acknowledged, done }
}

/**
 * The crash itself: loads `targets` (see {@link load}) while `hook` refuses every webhook, kills `victim` with
 * SIGKILL once 40 background responses were acknowledged (the loops have requests in flight then), waits for the
 * loops to end, and lets `hook` accept again. Returns what was acknowledged.
 */
export const loadThenKill = async (
  targets: ReadonlyArray<URL>,
  victim: Served,
  hook: Awaited<ReturnType<typeof receiver>>,
  prefix: string
): Promise<Acknowledged> => {
  hook.control.refusing = true
  let killed = false
  const loading = load(targets, { prefix, workers: 16, webhookUrl: hook.url, stop: () => killed })
  await waitFor(() => loading.acknowledged.responses.size >= 40, "40 acknowledged background responses")
  await kill(victim)
  killed = true
  await loading.done
  hook.control.refusing = false
  return loading.acknowledged
}

/** What was found after the restart. */
export interface Found {
  readonly acknowledgedCreates: number
  readonly replayed: number
  readonly unansweredRetried: number
  readonly duplicates: number
  readonly secretsFound: number
  readonly responsesCompleted: number
  readonly webhooksDelivered: number
}

/**
 * Checks the restarted service at `url` against what was acknowledged: every acknowledged create replays its box
 * (`Idempotent-Replayed: true`), every unanswered create retried with its key answers 201, no name has two boxes,
 * every acknowledged secret reads back, every acknowledged background response completes and reaches the receiver.
 */
export const verify = async (
  url: URL,
  prefix: string,
  acknowledged: Acknowledged,
  received: Map<string, number>
): Promise<Found> => {
  let replayed = 0
  for (const [key, boxId] of acknowledged.creates) {
    const index = Number(key.slice(`${prefix}-key-`.length))
    const again = await send(url, "/v1/boxes", { method: "POST", body: createBody(prefix, index), headers: { "idempotency-key": key } })
    if (again.status !== 201 || again.json.box_id !== boxId || again.headers["idempotent-replayed"] !== "true") {
      throw new Error(`acknowledged create ${key} (${boxId}) answered ${again.status} ${JSON.stringify(again.json)}`)
    }
    replayed++
  }
  let unansweredRetried = 0
  for (const key of acknowledged.unanswered) {
    const index = Number(key.slice(`${prefix}-key-`.length))
    // As a client retries: an answer "still in flight" (the key's running owner is not yet known to be gone: another
    // instance's heartbeat is recent) is retried until the key is taken over.
    let retried: Answer | undefined
    await waitFor(async () => {
      retried = await send(url, "/v1/boxes", { method: "POST", body: createBody(prefix, index), headers: { "idempotency-key": key } })
      return retried.json?.error?.code !== "idempotent_request_in_flight"
    }, `the key ${key} to be taken over`)
    if (retried!.status !== 201) throw new Error(`retried create ${key} answered ${retried!.status} ${JSON.stringify(retried!.json)}`)
    unansweredRetried++
  }
  const state = await send(url, "/_local/state")
  const names = new Map<string, number>()
  for (const box of state.json.boxes as Array<{ name: string }>) {
    if (box.name.startsWith(`${prefix}-`)) names.set(box.name, (names.get(box.name) ?? 0) + 1)
  }
  const duplicates = [...names.values()].filter((count) => count > 1).length
  let secretsFound = 0
  for (const name of acknowledged.secrets) {
    const secret = await send(url, `/v1/secrets/${name}`)
    if (secret.status === 200) secretsFound++
  }
  let responsesCompleted = 0
  for (const id of acknowledged.responses) {
    await waitFor(async () => {
      const read = await send(url, `/v1/responses/${id}`)
      return read.status === 200 && read.json.status === "completed"
    }, `response ${id} to complete`)
    responsesCompleted++
  }
  await waitFor(() => [...acknowledged.responses].every((id) => received.has(id)), "every webhook to be delivered")
  const webhooksDelivered = [...acknowledged.responses].filter((id) => received.has(id)).length
  return {
    acknowledgedCreates: acknowledged.creates.size,
    replayed,
    unansweredRetried,
    duplicates,
    secretsFound,
    responsesCompleted,
    webhooksDelivered
  }
}
