/**
 * Section 9, the client's own infrastructure beside the stock library it replaces: each pair makes the same call
 * (`POST /v1/apps/find`, the JSON answer decoded with the contract's schema) against the local service
 * (`boxkit serve`, a child process) over HTTP, once through the toolkit's own module and once through the
 * `effect` / `@effect/platform` API it stands in for, everything else equal. A pair is measured in rounds (own, then
 * stock; the next round stock first), at concurrency 1 and at `settings.concurrency`; each figure is the median of
 * the rounds, and each ratio the median of the rounds' ratios (own over stock for calls per second, stock over own
 * for latency and client CPU, so that above 1 means the own module is better). The rule the figures decide
 * (docs/decisions/0006-client-own-code-or-stock.md): own code stays only where a ratio reaches 1.5.
 *
 * Each pair is measured on the cheapest base the toolkit has, so the ratio credits the own module with the most it
 * can save: the rest of the call is the same on both sides. Modules the figures did not keep (the toolkit's
 * `Tracing.fn`, now `Effect.fn`; `Timeout.timeoutFail`, now `Effect.timeoutFail`) are no longer measured here; their
 * figures are in the decision record's appendix.
 *
 * Source: docs/decisions/0006-client-own-code-or-stock.md.
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Console, Effect, type Layer, ManagedRuntime } from "effect"
import { performance } from "node:perf_hooks"
import type { Apps } from "../src/Client/Apps.js"
import * as Child from "./Child.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"
import * as Stats from "./Stats.js"
import * as Variants from "./ClientStockVariants.js"

/** One side of a pair in one round. Latencies in milliseconds, CPU in microseconds of this process per call. */
export interface SideRun {
  readonly calls: number
  readonly failures: number
  readonly callsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly cpuMicrosPerCall: number
}

/** One pair at one concurrency: every round of both sides, and the medians. */
export interface PairRun {
  readonly pair: string
  readonly own: string
  readonly stock: string
  readonly concurrency: number
  readonly ownRounds: ReadonlyArray<SideRun>
  readonly stockRounds: ReadonlyArray<SideRun>
  /** Median over the rounds of own calls/s ÷ stock calls/s. */
  readonly callsPerSecondRatio: number
  /** Median over the rounds of stock p50 latency ÷ own p50 latency. */
  readonly latencyP50Ratio: number
  /** Median over the rounds of stock CPU per call ÷ own CPU per call. */
  readonly cpuPerCallRatio: number
}

/** The results of section 9. */
export interface ClientStockResults {
  readonly rounds: number
  readonly warmupSeconds: number
  readonly durationSeconds: number
  readonly runs: ReadonlyArray<PairRun>
}

/** The ratio a pair must reach on one figure for the own module to stay. */
export const keepRatio = 1.5

/** The calls of one side: made once per runtime (`make`), then run in a loop by every fiber. */
interface Side {
  readonly label: string
  readonly layer: Layer.Layer<HttpClient.HttpClient | Apps>
  readonly make: Variants.MakeCall
}

/** A pair of sides: the toolkit's own module and the stock API it replaces. */
interface Pair {
  readonly title: string
  readonly own: Side
  readonly stock: Side
}

/** Runs `side` with `concurrency` fibers for `seconds` after a warm-up; calls, failures, latencies, CPU. */
const measure = (
  runtime: ManagedRuntime.ManagedRuntime<HttpClient.HttpClient | Apps, never>,
  side: Side,
  concurrency: number,
  settings: Pick<BenchSettings, "warmupSeconds" | "durationSeconds">
): Promise<SideRun> =>
  runtime.runPromise(Effect.scoped(Effect.gen(function*() {
    const call = yield* side.make
    const loops = (seconds: number) =>
      Effect.gen(function*() {
        const latencies: Array<number> = []
        let failures = 0
        const deadline = performance.now() + seconds * 1000
        const loop = Effect.gen(function*() {
          while (performance.now() < deadline) {
            const began = performance.now()
            const outcome = yield* Effect.either(call)
            if (outcome._tag === "Right") latencies.push(performance.now() - began)
            else failures++
          }
        })
        const cpuBefore = process.cpuUsage()
        const start = performance.now()
        yield* Effect.all(Array.from({ length: concurrency }, () => loop), { concurrency: "unbounded", discard: true })
        const elapsed = (performance.now() - start) / 1000
        const cpu = process.cpuUsage(cpuBefore)
        return {
          calls: latencies.length,
          failures,
          callsPerSecond: latencies.length / elapsed,
          latencyP50Ms: Stats.percentile(latencies, 50),
          latencyP99Ms: Stats.percentile(latencies, 99),
          cpuMicrosPerCall: Stats.ratio(cpu.user + cpu.system, latencies.length)
        } satisfies SideRun
      })
    yield* loops(settings.warmupSeconds)
    return yield* loops(settings.durationSeconds)
  })))

/** The pairs, against the service at `origin` (e.g. `http://127.0.0.1:40123`). */
const pairs = (origin: string): ReadonlyArray<Pair> => {
  const calls = Variants.calls(origin)
  const ownHttp = Variants.withApps(origin, Variants.ownHttpClient)
  const stockHttp = Variants.withApps(origin, NodeHttpClient.layerUndici)
  const side = (label: string, layer: Side["layer"], make: Side["make"]): Side => ({ label, layer, make })
  return [
    {
      title: "contract client",
      own: side("`ContractClient.make`", ownHttp, calls.contractClient),
      stock: side("`HttpApiClient.makeWith`", ownHttp, calls.httpApiClient)
    },
    {
      title: "attempt timeout",
      own: side("`UndiciHttpClient.withDeadline` (the toolkit's lean path)", ownHttp, Variants.timed(calls.contractClient, "deadline")),
      stock: side("`Effect.timeoutFail`", ownHttp, Variants.timed(calls.contractClient, "effect"))
    },
    {
      title: "HTTP client (contract client call)",
      own: side("`UndiciHttpClient.layer`", ownHttp, calls.contractClient),
      stock: side("`NodeHttpClient.layerUndici`", stockHttp, calls.contractClient)
    },
    {
      title: "HTTP client (toolkit `Apps.find`)",
      own: side("`Boxkit.layer`", ownHttp, Variants.appsFind),
      stock: side("`Boxkit.layerWithoutHttpClient` + `NodeHttpClient.layerUndici`", stockHttp, Variants.appsFind)
    }
  ]
}

/** Measures `pair` at `concurrency` in `rounds` rounds, alternating which side goes first. */
const measurePair = (pair: Pair, concurrency: number, rounds: number, settings: BenchSettings) =>
  Effect.gen(function*() {
    const runtimes = {
      own: yield* Effect.acquireRelease(Effect.sync(() => ManagedRuntime.make(pair.own.layer)), (runtime) => Effect.promise(() => runtime.dispose())),
      stock: yield* Effect.acquireRelease(Effect.sync(() => ManagedRuntime.make(pair.stock.layer)), (runtime) => Effect.promise(() => runtime.dispose()))
    }
    const ownRounds: Array<SideRun> = []
    const stockRounds: Array<SideRun> = []
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (["own", "stock"] as const) : (["stock", "own"] as const)
      for (const which of order) {
        yield* Console.error(`  ${pair.title}, concurrency ${concurrency}, round ${round + 1}: ${pair[which].label}`)
        const result = yield* Effect.promise(() => measure(runtimes[which], pair[which], concurrency, settings))
        ;(which === "own" ? ownRounds : stockRounds).push(result)
      }
    }
    const ratios = (of: (own: SideRun, stock: SideRun) => number) =>
      Stats.median(ownRounds.map((own, index) => of(own, stockRounds[index])))
    return {
      pair: pair.title,
      own: pair.own.label,
      stock: pair.stock.label,
      concurrency,
      ownRounds,
      stockRounds,
      callsPerSecondRatio: ratios((own, stock) => Stats.ratio(own.callsPerSecond, stock.callsPerSecond)),
      latencyP50Ratio: ratios((own, stock) => Stats.ratio(stock.latencyP50Ms, own.latencyP50Ms)),
      cpuPerCallRatio: ratios((own, stock) => Stats.ratio(stock.cpuMicrosPerCall, own.cpuMicrosPerCall))
    } satisfies PairRun
  }).pipe(Effect.scoped)

/** Rounds per pair: 3 in the full run (the median is reported), 1 in the quick check. */
const roundsOf = (settings: BenchSettings) => (settings.mode === "full" ? 3 : 1)

/** Shorter runs than section 2: many pairs, each measured in rounds. */
const timingOf = (settings: BenchSettings) =>
  settings.mode === "full" ? { warmupSeconds: 2, durationSeconds: 5 } : { warmupSeconds: 1, durationSeconds: 1 }

/** Runs every pair against one `boxkit serve`. */
export const run = Effect.fn("ClientStock.run")(function*(settings: BenchSettings) {
  const server = yield* Child.spawnServer({ label: "boxkit serve", args: Scenarios.serviceArgs() })
  const rounds = roundsOf(settings)
  const timing = timingOf(settings)
  const runs: Array<PairRun> = []
  for (const pair of pairs(server.origin)) {
    for (const concurrency of [1, settings.concurrency]) {
      runs.push(yield* measurePair(pair, concurrency, rounds, { ...settings, ...timing }))
    }
  }
  return { rounds, ...timing, runs } satisfies ClientStockResults
}, Effect.scoped)

/**
 * The figures that decide a pair (docs/decisions/0006-client-own-code-or-stock.md): the latency of one call (p50 at
 * concurrency 1), and under load (the highest concurrency measured) calls per second and client CPU per call. The p50
 * at concurrency 64 is not one of them: with 64 calls in flight it is queueing, the inverse of calls per second.
 */
export const decidingRatios = (runs: ReadonlyArray<PairRun>, pair: string) => {
  const of = runs.filter((run) => run.pair === pair)
  const single = of.find((run) => run.concurrency === 1)
  const loaded = of.reduce<PairRun | undefined>((best, run) => best === undefined || run.concurrency > best.concurrency ? run : best, undefined)
  return {
    latencyP50: single?.latencyP50Ratio ?? Number.NaN,
    callsPerSecond: loaded?.callsPerSecondRatio ?? Number.NaN,
    cpuPerCall: loaded?.cpuPerCallRatio ?? Number.NaN
  }
}

/** True when one of the pair's {@link decidingRatios} reaches {@link keepRatio}: the own module pays for itself. */
export const pays = (runs: ReadonlyArray<PairRun>, pair: string): boolean => {
  const ratios = decidingRatios(runs, pair)
  return Math.max(ratios.latencyP50, ratios.callsPerSecond, ratios.cpuPerCall) >= keepRatio
}
