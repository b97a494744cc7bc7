/**
 * Section 3, webhook fan-out: N background responses (`POST /v1/responses` with `background: true`,
 * `metadata.completion_webhook` and `metadata.webhook_token`) submitted at bounded concurrency to a `boxkit serve`
 * child process; the completions arrive at a receiver built with `WebhookReceiver.makeHttpApp` in this process.
 * Measured: the time from the first submission until the last response's first hand-over to the handler, deliveries
 * lost (accepted ids not handed over when the wait ended), and duplicates handed to the handler after the receiver's
 * de-duplication (must be 0); also every POST that reached the receiver (duplicates before de-duplication). The
 * section has a time cap (`webhookMaxSeconds`): no submission starts after three quarters of it (those unanswered
 * then are aborted), and the wait ends with it.
 *
 * Baseline: the same number of POSTs of a completion body, at the same concurrency, from raw `undici.request` to a
 * raw node:http receiver in this process that checks the token, parses the JSON and de-duplicates in a Set: the
 * practical limit of delivering that many webhooks on this machine.
 *
 * Where the time goes: the CPU time (utime + stime, `/proc`) of the service's process group and of this process
 * (the submissions and the toolkit's receiver) from the first submission until the wait ended, and of this process
 * during the baseline. The two processes share the machine's cores, so on a loaded machine these per-webhook figures
 * say more than the wall time: the slower of the two sets the pace.
 *
 * Source: BENCHMARKS.md section 3 (webhook fan-out) and its budget (10,000 webhooks delivered, none lost, in at most
 * 5.2x the baseline's time of the same run: docs/decisions/0008-webhook-budget.md); spec "Events / Completion webhook"
 * rules 1-5.
 *
 * @since 0.1.0
 */
import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Console, Effect, Layer, Redacted, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { setMaxListeners } from "node:events"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import { Agent, request } from "undici"
import * as WebhookReceiver from "../src/Client/WebhookReceiver.js"
import { ModelResponse } from "../src/Domain/ModelResponse.js"
import * as Child from "./Child.js"
import * as Proc from "./Proc.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"

/** The results of section 3. Times in milliseconds. */
export interface WebhookResults {
  readonly responses: number
  readonly concurrency: number
  /** Submissions sent: fewer than {@link responses} when the time cap stopped them. */
  readonly submitted: number
  readonly stoppedByTimeCap: boolean
  readonly timeCapSeconds: number
  /** Submissions answered 202 (the rest failed and are not expected to be delivered). */
  readonly accepted: number
  /** Submissions answered otherwise or failed on the network, and those still unanswered (aborted) at the cap. */
  readonly submitFailures: number
  readonly submitsAborted: number
  /** From the first submission until the last submission was answered. */
  readonly submitMs: number
  /** From the first submission until the last accepted response was first handed to the handler. */
  readonly lastDeliveryMs: number
  /** Accepted responses not handed to the handler when the section's time cap ended the wait. */
  readonly lost: number
  /** Hand-overs to the handler beyond the first per response id (after the receiver's de-duplication). */
  readonly duplicatesHandled: number
  /** POSTs that reached the receiver, and how many more there were than responses handed over (repeats). */
  readonly deliveriesReceived: number
  readonly duplicateDeliveries: number
  /** Accepted responses handed over per second, over {@link lastDeliveryMs}. */
  readonly deliveriesPerSecond: number
  /** The baseline: time for the same number of raw POSTs of a completion body, and its body size in bytes. */
  readonly baselineMs: number
  readonly baselineBodyBytes: number
  /**
   * CPU time (user + system) from the first submission until the wait ended: of the service's process group, and of
   * this process (the submissions and the toolkit's receiver); and of this process during the baseline (raw client
   * and raw receiver together). Absent in results measured before they were recorded.
   */
  readonly serviceCpuMs?: number
  readonly benchCpuMs?: number
  readonly baselineCpuMs?: number
}

/** This process's CPU time (user + system) since `since` (a `process.cpuUsage()`), in milliseconds. */
const cpuMsSince = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / 1000
}

/**
 * Runs `task(i)` for i in 0..count-1 with at most `concurrency` running at once; no task starts after `deadline` (a
 * `performance.now()` time). Returns how many started.
 */
const pool = async (count: number, concurrency: number, task: (index: number) => Promise<void>, deadline = Infinity) => {
  let next = 0
  const worker = async () => {
    while (next < count && performance.now() < deadline) await task(next++)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return next
}

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** The baseline: `count` POSTs of `body` from undici to a raw node:http receiver, at `concurrency`. */
const rawFanOut = (count: number, concurrency: number, body: string, token: string) =>
  Effect.promise(async () => {
    const seen = new Set<string>()
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        if (req.headers.authorization !== `Bearer ${token}`) {
          res.writeHead(401).end()
          return
        }
        const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: string; n: number }
        seen.add(`${parsed.id}-${parsed.n}`)
        res.writeHead(200, { "content-type": "application/json" }).end("{\"received\":true}")
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`
    const agent = new Agent()
    const start = performance.now()
    await pool(count, concurrency, async (index) => {
      // A distinct id per POST, as each completion has its own response id.
      const response = await request(url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: body.replace(/^\{/, `{"n":${index},`),
        dispatcher: agent
      })
      await response.body.text()
    })
    const elapsed = performance.now() - start
    await agent.close()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    if (seen.size !== count) throw new Error(`raw fan-out received ${seen.size} of ${count}`)
    return elapsed
  })

/** Submits the background responses, waits for their webhooks, and runs the baseline with a completion body. */
export const run = Effect.fn("Webhooks.run")(function*(settings: BenchSettings) {
  const count = settings.webhooks
  const token = randomUUID()
  const firstHandedAt = new Map<string, number>()
  let handled = 0
  let received = 0
  let sample: ModelResponse | undefined

  // The receiver of the toolkit, wrapped to count every POST that reaches it (before de-duplication).
  const app = yield* WebhookReceiver.makeHttpApp({
    token: Redacted.make(token),
    handler: (response) =>
      Effect.sync(() => {
        handled++
        if (!firstHandedAt.has(response.id)) firstHandedAt.set(response.id, performance.now())
        sample ??= response
      })
  })
  const counted = Effect.zipRight(
    Effect.sync(() => {
      received++
    }),
    app
  )
  const receiverContext = yield* Layer.build(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
  // Served as `WebhookReceiver.layer` serves it (no span per request unless asked for).
  yield* WebhookReceiver.serve(counted).pipe(Effect.provide(receiverContext))
  const webhookUrl = yield* HttpServer.addressFormattedWith((address) => Effect.succeed(`${address}/webhooks`)).pipe(
    Effect.provide(receiverContext)
  )

  const server = yield* Child.spawnServer({ label: "boxkit serve", args: Scenarios.serviceArgs() })
  const agent = yield* Effect.acquireRelease(Effect.sync(() => new Agent()), (agent) => Effect.promise(() => agent.close()))
  yield* Console.error(`  submitting ${count} background responses (concurrency ${settings.concurrency})`)
  const accepted = new Set<string>()
  let submitFailures = 0
  let submitsAborted = 0
  const serviceTicksAtStart = Proc.groupCpuTicks(server.pgid)
  const benchCpuAtStart = process.cpuUsage()
  const start = performance.now()
  const submitDeadline = start + settings.webhookMaxSeconds * 750
  const waitDeadline = start + settings.webhookMaxSeconds * 1000
  // Submissions still unanswered at the submission deadline are aborted, so the cap holds on a saturated service.
  const abort = new AbortController()
  setMaxListeners(settings.concurrency * 4, abort.signal)
  const abortTimer = setTimeout(() => abort.abort(), submitDeadline - start)
  const submitted = yield* Effect.promise(() =>
    pool(count, settings.concurrency, async (index) => {
      try {
        const response = await request(`${server.baseUrl}/responses`, {
          method: "POST",
          headers: Scenarios.jsonHeaders,
          body: JSON.stringify({
            model: "boxkit-bench",
            input: `Background request ${index}.`,
            background: true,
            metadata: { completion_webhook: webhookUrl, webhook_token: token }
          }),
          dispatcher: agent,
          signal: abort.signal
        })
        const json = (await response.body.json()) as { id?: unknown }
        if (response.statusCode === 202 && typeof json.id === "string") accepted.add(json.id)
        else submitFailures++
      } catch {
        if (abort.signal.aborted) submitsAborted++
        else submitFailures++
      }
    }, submitDeadline).finally(() => clearTimeout(abortTimer))
  )
  const submitMs = performance.now() - start
  yield* Console.error(
    `  waiting for ${accepted.size} webhooks (at most ${((waitDeadline - performance.now()) / 1000).toFixed(0)} s more)`
  )
  const pending = () => {
    let missing = 0
    for (const id of accepted) if (!firstHandedAt.has(id)) missing++
    return missing
  }
  yield* Effect.promise(async () => {
    while (pending() > 0 && performance.now() < waitDeadline) await sleep(5)
    // A grace period for late duplicates (which de-duplication must keep from the handler).
    await sleep(1000)
  })
  const serviceCpuMs = Proc.ticksToMicros(Proc.groupCpuTicks(server.pgid) - serviceTicksAtStart) / 1000
  const benchCpuMs = cpuMsSince(benchCpuAtStart)
  let last = start
  for (const id of accepted) last = Math.max(last, firstHandedAt.get(id) ?? last)
  const lost = pending()
  const deliveriesReceived = received
  const duplicateDeliveries = Math.max(0, deliveriesReceived - firstHandedAt.size)

  const body = sample === undefined
    ? JSON.stringify({ id: "resp_baseline", object: "response" })
    : JSON.stringify(Schema.encodeSync(ModelResponse)(sample))
  yield* Console.error(`  baseline: ${count} raw POSTs of a ${Buffer.byteLength(body)}-byte completion body`)
  const baselineCpuAtStart = process.cpuUsage()
  const baselineMs = yield* rawFanOut(count, settings.concurrency, body, token)
  const baselineCpuMs = cpuMsSince(baselineCpuAtStart)

  return {
    responses: count,
    concurrency: settings.concurrency,
    submitted,
    stoppedByTimeCap: submitted < count || submitsAborted > 0 || lost > 0,
    timeCapSeconds: settings.webhookMaxSeconds,
    accepted: accepted.size,
    submitFailures,
    submitsAborted,
    submitMs,
    lastDeliveryMs: last - start,
    lost,
    duplicatesHandled: handled - firstHandedAt.size,
    deliveriesReceived,
    duplicateDeliveries,
    deliveriesPerSecond: (accepted.size - lost) / ((last - start) / 1000),
    baselineMs,
    baselineBodyBytes: Buffer.byteLength(body),
    serviceCpuMs,
    benchCpuMs,
    baselineCpuMs
  } satisfies WebhookResults
}, Effect.scoped)
