/**
 * Section 2, client overhead: `Apps.find` of the toolkit (BoxkitConfig.layer + Boxkit.layer, over undici) against the
 * raw node:http server, sequentially and at concurrency 64, beside raw `undici.request` making the same calls (POST
 * the same JSON, parse the JSON answer) with its own `undici.Agent`, as the toolkit has. Calls per second, latency,
 * and the CPU of this (the client) process per call from `process.cpuUsage()`.
 *
 * Source: BENCHMARKS.md section 2 (client overhead) and its budget (the toolkit client at least 0.5x raw undici at
 * concurrency 64).
 *
 * @since 0.1.0
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Console, Effect, Layer, ManagedRuntime } from "effect"
import { performance } from "node:perf_hooks"
import { Agent, request } from "undici"
import { Apps } from "../src/Client/Apps.js"
import * as Boxkit from "../src/Client/Boxkit.js"
import * as Child from "./Child.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"
import * as Stats from "./Stats.js"

/** One client run. Latencies in milliseconds, CPU in microseconds. */
export interface ClientRun {
  readonly client: "toolkit" | "toolkit-stock" | "undici"
  readonly concurrency: number
  readonly durationSeconds: number
  /** Calls that returned the App object. */
  readonly calls: number
  /** Calls that failed (should be 0). */
  readonly failures: number
  readonly callsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  /** CPU time (user + system) of this process during the measured run, per successful call. */
  readonly cpuMicrosPerCall: number
}

/** The results of section 2. */
export interface ClientResults {
  readonly runs: ReadonlyArray<ClientRun>
}

/** Bookkeeping of one measured run: a call's latency when it succeeded, a failure otherwise. */
interface Recorder {
  readonly deadline: number
  readonly success: (latencyMs: number) => void
  readonly failure: () => void
}

/** Runs `concurrency` call loops until `recorder.deadline` (a `performance.now()` time) and resolves when all ended. */
type Driver = (concurrency: number, recorder: Recorder) => Promise<void>

/** Runs `driver` for `seconds`; counts calls, failures, latencies and this process's CPU time. */
const drive = async (driver: Driver, concurrency: number, seconds: number) => {
  const latencies: Array<number> = []
  let failures = 0
  const cpuBefore = process.cpuUsage()
  const start = performance.now()
  await driver(concurrency, {
    deadline: start + seconds * 1000,
    success: (latencyMs) => latencies.push(latencyMs),
    failure: () => failures++
  })
  const elapsed = (performance.now() - start) / 1000
  const cpu = process.cpuUsage(cpuBefore)
  return { latencies, failures, elapsed, cpuMicros: cpu.user + cpu.system }
}

const measureCalls = async (
  client: ClientRun["client"],
  driver: Driver,
  concurrency: number,
  settings: BenchSettings
): Promise<ClientRun> => {
  await drive(driver, concurrency, settings.warmupSeconds)
  const run = await drive(driver, concurrency, settings.durationSeconds)
  return {
    client,
    concurrency,
    durationSeconds: run.elapsed,
    calls: run.latencies.length,
    failures: run.failures,
    callsPerSecond: run.latencies.length / run.elapsed,
    latencyP50Ms: Stats.percentile(run.latencies, 50),
    latencyP99Ms: Stats.percentile(run.latencies, 99),
    cpuMicrosPerCall: Stats.ratio(run.cpuMicros, run.latencies.length)
  }
}

/** Runs undici and the toolkit, sequentially and at `settings.concurrency`, against one raw node:http server. */
export const run = Effect.fn("ClientOverhead.run")(function*(settings: BenchSettings) {
  const server = yield* Child.spawnServer({ label: "raw node:http", args: Scenarios.baselineArgs() })
  const body = Scenarios.appsFind.body ?? ""
  const agent = yield* Effect.acquireRelease(Effect.sync(() => new Agent()), (agent) => Effect.promise(() => agent.close()))
  // Raw undici: plain async loops, each POSTing the JSON body and parsing the JSON answer.
  const undiciDriver: Driver = async (concurrency, recorder) => {
    const loop = async () => {
      while (performance.now() < recorder.deadline) {
        const began = performance.now()
        try {
          const response = await request(`${server.baseUrl}/apps/find`, {
            method: "POST",
            headers: Scenarios.appsFind.headers,
            body,
            dispatcher: agent
          })
          const json = (await response.body.json()) as { id?: unknown }
          if (response.statusCode === 200 && typeof json.id === "string") recorder.success(performance.now() - began)
          else recorder.failure()
        } catch {
          recorder.failure()
        }
      }
    }
    await Promise.all(Array.from({ length: concurrency }, loop))
  }
  // The toolkit as an Effect program uses it: `concurrency` fibers, each calling `Apps.find` in a loop.
  const runtime = yield* Effect.acquireRelease(
    Effect.sync(() =>
      ManagedRuntime.make(Boxkit.layer({ apiKey: Scenarios.apiKey, baseUrl: server.baseUrl }))
    ),
    (runtime) => Effect.promise(() => runtime.dispose())
  )
  // The same toolkit over the stock HttpClient (`NodeHttpClient.layerUndici`, brought with
  // `Boxkit.layerWithoutHttpClient`), for comparison; no budget.
  const stockRuntime = yield* Effect.acquireRelease(
    Effect.sync(() =>
      ManagedRuntime.make(
        Boxkit.layerWithoutHttpClient({ apiKey: Scenarios.apiKey, baseUrl: server.baseUrl }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
    ),
    (runtime) => Effect.promise(() => runtime.dispose())
  )
  const driverOf = (
    runtime: ManagedRuntime.ManagedRuntime<Apps, never>
  ): Driver => (concurrency, recorder) =>
    runtime.runPromise(Effect.gen(function*() {
      const apps = yield* Apps
      const loop = Effect.gen(function*() {
        while (performance.now() < recorder.deadline) {
          const began = performance.now()
          const outcome = yield* Effect.either(apps.find("bench-app", { mintIfMissing: true }))
          if (outcome._tag === "Right" && typeof outcome.right.id === "string") recorder.success(performance.now() - began)
          else recorder.failure()
        }
      })
      yield* Effect.all(Array.from({ length: concurrency }, () => loop), { concurrency: "unbounded", discard: true })
    }))
  const toolkitDriver = driverOf(runtime)
  const stockDriver = driverOf(stockRuntime)
  const runs: Array<ClientRun> = []
  for (const concurrency of [1, settings.concurrency]) {
    yield* Console.error(`  undici.request, concurrency ${concurrency}`)
    runs.push(yield* Effect.promise(() => measureCalls("undici", undiciDriver, concurrency, settings)))
    yield* Console.error(`  toolkit Apps.find, concurrency ${concurrency}`)
    runs.push(yield* Effect.promise(() => measureCalls("toolkit", toolkitDriver, concurrency, settings)))
  }
  yield* Console.error(`  toolkit Apps.find over NodeHttpClient.layerUndici, concurrency ${settings.concurrency}`)
  runs.push(yield* Effect.promise(() => measureCalls("toolkit-stock", stockDriver, settings.concurrency, settings)))
  return { runs } satisfies ClientResults
}, Effect.scoped)
