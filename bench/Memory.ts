/**
 * Section 5, memory: the RSS of a `boxkit serve` child process holding N remembered idempotency keys, made by N box
 * creations (`POST /v1/boxes`, a distinct `Idempotency-Key` each, concurrency 64), measured after the boxes booted
 * (2 s later), nothing extrapolated. The creations stop after `idempotencyMaxSeconds` (so the suite keeps its time
 * limit on a slow machine); the keys actually remembered are then reported. The count of remembered keys is read back from `GET /_local/state`
 * (`idempotency_keys`) after the RSS was read. Baseline: the RSS of the raw node:http server at rest.
 *
 * Source: issue 6, part 5; spec Limits ("Idempotency-Key ... remembered at least 24 hours").
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { performance } from "node:perf_hooks"
import { request } from "undici"
import * as Child from "./Child.js"
import * as Load from "./Load.js"
import * as Proc from "./Proc.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"

/** The results of section 5. Memory in bytes, time in milliseconds. */
export interface MemoryResults {
  /** Box creations asked for, how many were answered 201, and whether the time cap stopped them early. */
  readonly keys: number
  readonly created: number
  readonly stoppedByTimeCap: boolean
  readonly timeCapSeconds: number
  /** `idempotency_keys` of GET /_local/state after the run. */
  readonly rememberedKeys: number
  readonly createMs: number
  /** RSS of the service at rest after start, after the creations, and its peak. */
  readonly idleRssBytes: number
  readonly rssBytes: number
  readonly peakRssBytes: number
  /** (rssBytes - idleRssBytes) / created. */
  readonly bytesPerKey: number
  /** The baseline: RSS of the raw node:http server at rest. */
  readonly baselineRssBytes: number
}

const settle = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

const rssOf = (server: Child.ServerProcess) => Proc.readMemory(server.servingPid) ?? { rssBytes: Number.NaN, peakRssBytes: Number.NaN }

/** Measures the baseline at rest, then the service before and after `settings.idempotencyKeys` creations. */
export const run = Effect.fn("Memory.run")(function*(settings: BenchSettings) {
  const baselineRssBytes = yield* Effect.scoped(Effect.gen(function*() {
    const raw = yield* Child.spawnServer({ label: "raw node:http", args: Scenarios.baselineArgs() })
    yield* settle(1000)
    return rssOf(raw).rssBytes
  }))
  return yield* Effect.scoped(Effect.gen(function*() {
    const server = yield* Child.spawnServer({ label: "boxkit serve", args: Scenarios.serviceArgs() })
    yield* settle(1000)
    const idle = rssOf(server)
    yield* Console.error(`  creating ${settings.idempotencyKeys} boxes with distinct Idempotency-Keys`)
    const start = performance.now()
    const result = yield* Load.autocannonRun(server.origin, Scenarios.createBox, {
      connections: settings.concurrency,
      amount: settings.idempotencyKeys,
      stopAfterSeconds: settings.idempotencyMaxSeconds
    })
    const createMs = performance.now() - start
    yield* settle(2000)
    const after = rssOf(server)
    const state = yield* Effect.promise(async () => {
      const response = await request(`${server.origin}/_local/state`)
      return (await response.body.json()) as { idempotency_keys?: number }
    })
    const created = result.statusCodeStats["201"]?.count ?? 0
    return {
      keys: settings.idempotencyKeys,
      created,
      stoppedByTimeCap: result.requests.sent < settings.idempotencyKeys,
      timeCapSeconds: settings.idempotencyMaxSeconds,
      rememberedKeys: state.idempotency_keys ?? Number.NaN,
      createMs,
      idleRssBytes: idle.rssBytes,
      rssBytes: after.rssBytes,
      peakRssBytes: after.peakRssBytes,
      bytesPerKey: (after.rssBytes - idle.rssBytes) / Math.max(1, created),
      baselineRssBytes
    } satisfies MemoryResults
  }))
})
