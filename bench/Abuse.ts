/**
 * Section 7, abuse: the loads of the abuse probe (what one key holder can send within the limits and quotas of
 * docs/ASSUMPTIONS.md "Request body limits" and "Quotas"), each within the service's limits, against one fresh
 * `boxkit serve` in turn, as one API key would send them. For each load: the serving process's RSS before, at its peak
 * while the load runs (sampled every 100 ms) and 2 s after; the answers per second and their statuses; and whether
 * the service kept answering (a probe `GET /v1/secrets/GITHUB_TOKEN` every 200 ms with the same key must answer 200
 * each time). Budget: every peak under 600 MB, every probe answered.
 *
 * Source: BENCHMARKS.md "Budgets" (the abuse loads, within the service's limits, keep RSS under 600 MB and the
 * service answering).
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { performance } from "node:perf_hooks"
import { request } from "undici"
import * as Child from "./Child.js"
import * as Proc from "./Proc.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"

/** The RSS budget of every abuse load (bytes). */
export const rssBudgetBytes = 600e6

/** One load's figures. Memory in bytes, time in milliseconds. */
export interface AbuseLoad {
  readonly title: string
  readonly requests: number
  readonly statuses: Readonly<Record<string, number>>
  readonly durationMs: number
  readonly answersPerSecond: number
  readonly rssBeforeBytes: number
  readonly rssPeakBytes: number
  readonly rssAfterBytes: number
  /** Probes sent while the load ran, and how many did not answer 200. */
  readonly probes: number
  readonly probesFailed: number
}

/** The results of section 7. */
export interface AbuseResults {
  readonly loads: ReadonlyArray<AbuseLoad>
}

interface Sent {
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
}

const send = async (origin: string, sent: Sent): Promise<{ status: number; json: any }> => {
  const response = await request(origin + sent.path, {
    method: sent.method as "GET",
    headers: { authorization: `Bearer ${Scenarios.apiKey}`, "content-type": "application/json", ...sent.headers },
    ...(sent.body !== undefined ? { body: sent.body } : {})
  })
  const text = await response.body.text()
  let json: any = undefined
  try {
    json = text === "" ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.statusCode, json }
}

/** Sends `count` requests made by `make(index)` at `concurrency`, counting statuses (a failed request counts as 0). */
const pool = async (origin: string, count: number, concurrency: number, make: (index: number) => Sent) => {
  const statuses: Record<string, number> = {}
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const index = next++
      const status = await send(origin, make(index)).then((answer) => answer.status, () => 0)
      statuses[status] = (statuses[status] ?? 0) + 1
    }
  }))
  return statuses
}

const settle = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** Runs `load` against `server` while sampling its RSS and probing it; the figures of the run. */
const measure = async (
  server: Child.ServerProcess,
  title: string,
  requests: number,
  load: () => Promise<Record<string, number>>
): Promise<AbuseLoad> => {
  const rss = () => Proc.readMemory(server.servingPid)?.rssBytes ?? Number.NaN
  const rssBeforeBytes = rss()
  let rssPeakBytes = rssBeforeBytes
  let running = true
  const sampler = setInterval(() => {
    rssPeakBytes = Math.max(rssPeakBytes, rss())
  }, 100)
  let probes = 0
  let probesFailed = 0
  const probing = (async () => {
    while (running) {
      probes++
      const answer = await send(server.origin, { method: "GET", path: "/v1/secrets/GITHUB_TOKEN" }).catch(() => undefined)
      if (answer?.status !== 200) probesFailed++
      await settle(200)
    }
  })()
  const started = performance.now()
  const statuses = await load()
  const durationMs = performance.now() - started
  running = false
  await probing
  await settle(2000)
  clearInterval(sampler)
  rssPeakBytes = Math.max(rssPeakBytes, rss())
  const answered = Object.entries(statuses).filter(([status]) => status !== "0").reduce((sum, [, n]) => sum + n, 0)
  return {
    title,
    requests,
    statuses,
    durationMs,
    answersPerSecond: answered / (durationMs / 1000),
    rssBeforeBytes,
    rssPeakBytes,
    rssAfterBytes: rss(),
    probes,
    probesFailed
  }
}

/** A fresh service for one load (each load starts from the same state). */
const withServer = <A>(label: string, use: (server: Child.ServerProcess) => Promise<A>) =>
  Effect.scoped(Effect.gen(function*() {
    // The service as users run it, quotas included (the other sections lift them).
    const server = yield* Child.spawnServer({
      label,
      args: ["bin/boxkit.js", "serve", "--port", "0", "--seed", Scenarios.seedFile]
    })
    yield* Effect.promise(() => settle(1000))
    return yield* Effect.promise(() => use(server))
  }))

const createBox = (name: string): Sent => ({
  method: "POST",
  path: "/v1/boxes",
  body: JSON.stringify({ name, app_id: Scenarios.seededAppId, image: { base: "debian" } })
})

/** Runs every abuse load, each against its own fresh service. */
export const run = Effect.fn("Abuse.run")(function*(settings: BenchSettings) {
  const scale = settings.mode === "full" ? 1 : 0.2
  const n = (count: number) => Math.max(1, Math.round(count * scale))
  const loads: Array<AbuseLoad> = []
  const step = (title: string, requests: number, load: (server: Child.ServerProcess) => Promise<Record<string, number>>) =>
    Effect.flatMap(Console.error(`  ${title}`), () =>
      Effect.map(withServer(title, (server) => measure(server, title, requests, () => load(server))), (result) => {
        loads.push(result)
      }))

  const megabyteInput = "word ".repeat(209_715) // 1 MiB
  yield* step(`${n(300)} background responses with a 1 MiB input, 2 at a time`, n(300), (server) =>
    pool(server.origin, n(300), 2, (index) => ({
      method: "POST",
      path: "/v1/responses",
      body: JSON.stringify({ model: "boxkit-abuse", input: `${index} ${megabyteInput}`, background: true })
    })))

  const fullMetadata = Object.fromEntries(Array.from({ length: 16 }, (_, index) => [`key-${index}`, "v".repeat(512)]))
  yield* step(`${n(2_000)} responses with the largest metadata (16 pairs of 512 characters), 4 at a time`, n(2_000), (server) =>
    pool(server.origin, n(2_000), 4, () => ({
      method: "POST",
      path: "/v1/responses",
      body: JSON.stringify({ model: "boxkit-abuse", input: "x", metadata: fullMetadata })
    })))

  yield* step(`${n(200)} clipboard writes of 8 MiB over 50 boxes, 2 at a time`, n(200), async (server) => {
    const ids: Array<string> = []
    for (let index = 0; index < 50; index++) ids.push((await send(server.origin, createBox(`clip-${index}`))).json.box_id)
    for (const id of ids) {
      while ((await send(server.origin, { method: "GET", path: `/v1/boxes/${id}` })).json.status !== "running") {
        await settle(50)
      }
    }
    const eightMiB = Buffer.alloc(8 * 1024 * 1024, "c")
    return pool(server.origin, n(200), 2, (index) => ({
      method: "PUT",
      path: `/v1/boxes/${ids[index % ids.length]}/clipboard`,
      headers: { "content-type": "text/plain" },
      body: eightMiB
    }))
  })

  yield* step(`${n(5_000)} box creations, 16 at a time`, n(5_000), (server) =>
    pool(server.origin, n(5_000), 16, (index) => createBox(`many-${index}`)))

  yield* step(`${n(2_000)} background responses whose webhook port is dead, 16 at a time, then 60 s of retries`, n(2_000), async (server) => {
    const statuses = await pool(server.origin, n(2_000), 16, () => ({
      method: "POST",
      path: "/v1/responses",
      body: JSON.stringify({
        model: "boxkit-abuse",
        input: "x",
        background: true,
        metadata: { completion_webhook: "http://127.0.0.1:9/dead" }
      })
    }))
    await settle(settings.mode === "full" ? 60_000 : 10_000)
    return statuses
  })

  const deep = `{"model":"boxkit-abuse","input":"x","reasoning":${"[".repeat(5_000)}1${"]".repeat(5_000)}}`
  yield* step(`${n(2_000)} bodies nested 5,000 deep, 8 at a time`, n(2_000), (server) =>
    pool(server.origin, n(2_000), 8, () => ({ method: "POST", path: "/v1/responses", body: deep })))

  return { loads } satisfies AbuseResults
})
