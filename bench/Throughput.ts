/**
 * Section 1, local service throughput: each scenario against a fresh `boxkit serve` child process, and the baseline
 * (the raw node:http server doing apps/find) in its own child process, all at the same concurrency, warm-up and
 * duration. Ratios are to the baseline of the same run.
 *
 * Source: BENCHMARKS.md section 1 (local service throughput) and its budget (apps/find at least 0.3x raw node:http).
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { request } from "undici"
import { IdempotentReplayedHeader } from "../src/Contract/Headers.js"
import * as Child from "./Child.js"
import * as Load from "./Load.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"

/** One scenario's result, with a check that its answers were what the scenario expects. */
export interface ScenarioResult extends Load.LoadResult {
  /** The HTTP status every answer should have. */
  readonly expectedStatus: number
  /** For the replay scenario: whether a probe answer carried `Idempotent-Replayed: true`. */
  readonly replayed?: boolean
  /** The serving path, when not the default (`platform`: `boxkit serve --server platform`). */
  readonly server?: string
}

/** The results of section 1. */
export interface ThroughputResults {
  readonly baseline: ScenarioResult
  readonly scenarios: ReadonlyArray<ScenarioResult>
}

/** Sends one request of `spec` with undici; returns its status and headers. */
export const once = (origin: string, spec: Load.LoadSpec) =>
  Effect.promise(async () => {
    const response = await request(origin + spec.path, {
      method: spec.method,
      headers: spec.headers,
      ...(spec.body !== undefined ? { body: spec.body } : {})
    })
    await response.body.text()
    return { status: response.statusCode, headers: response.headers }
  })

/** The load of every measured run: `settings.concurrency` connections, the warm-up, then the measured duration. */
export const shape = (settings: BenchSettings): Load.LoadShape => ({
  connections: settings.concurrency,
  warmupSeconds: settings.warmupSeconds,
  durationSeconds: settings.durationSeconds
})

/**
 * One scenario against a fresh server `node ARGS` (stopped at the end; `env` added to its environment): optionally
 * primed, then {@link Load.measure}d with {@link shape}. Also used by section 6 (Durability.ts) for the durable
 * create-box run.
 */
export const runOne = (
  settings: BenchSettings,
  label: string,
  args: ReadonlyArray<string>,
  spec: Load.LoadSpec,
  expectedStatus: number,
  prime?: (server: Child.ServerProcess) => Effect.Effect<Partial<ScenarioResult>>,
  env?: Record<string, string>
) =>
  Effect.scoped(Effect.gen(function*() {
    yield* Console.error(`  ${label}: ${spec.title}`)
    const server = yield* Child.spawnServer({ label, args, ...(env === undefined ? {} : { env }) })
    const extra = prime === undefined ? {} : yield* prime(server)
    const result = yield* Load.measure(server, spec, shape(settings))
    return { ...result, ...extra, expectedStatus } satisfies ScenarioResult
  }))

/** Runs the baseline, then every scenario, each against its own fresh server. */
export const run = Effect.fn("Throughput.run")(function*(settings: BenchSettings) {
  const baseline = yield* runOne(settings, "raw node:http", Scenarios.baselineArgs(), Scenarios.appsFind, 200)
  const service = (spec: Load.LoadSpec, status: number, prime?: (server: Child.ServerProcess) => Effect.Effect<Partial<ScenarioResult>>) =>
    runOne(settings, "boxkit serve", Scenarios.serviceArgs(), spec, status, prime)
  const scenarios: Array<ScenarioResult> = []
  scenarios.push(yield* service(Scenarios.appsFind, 200))
  scenarios.push(yield* service(Scenarios.secretsRetrieve, 200))
  scenarios.push(yield* service(Scenarios.createBox, 201))
  scenarios.push(
    yield* service(Scenarios.createBoxReplay, 201, (server) =>
      Effect.gen(function*() {
        // The first request settles the key; every later one is a replay of it.
        const first = yield* once(server.origin, Scenarios.createBoxReplay)
        if (first.status !== 201) return yield* Effect.dieMessage(`replay priming answered ${first.status}`)
        const probe = yield* once(server.origin, Scenarios.createBoxReplay)
        return { replayed: probe.status === 201 && probe.headers[IdempotentReplayedHeader] === "true" }
      }))
  )
  scenarios.push(yield* service(Scenarios.foregroundResponse, 200))
  // The stock serving path (docs/decisions/0001-two-serving-paths.md), for comparison; no budget.
  const platform = yield* runOne(settings, "boxkit serve --server platform", [...Scenarios.serviceArgs(), "--server", "platform"], Scenarios.appsFind, 200)
  scenarios.push({ ...platform, server: "platform" })
  return { baseline, scenarios } satisfies ThroughputResults
})
