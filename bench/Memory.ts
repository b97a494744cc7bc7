/**
 * Section 5, memory: the RSS of a `boxkit serve` child process holding N remembered idempotency keys, made by N box
 * creations (`POST /v1/boxes`, a distinct `Idempotency-Key` each, concurrency 64), measured after the boxes booted
 * (2 s later), nothing extrapolated. The creations stop after `idempotencyMaxSeconds` (so the suite keeps its time
 * limit on a slow machine); the keys actually remembered are then reported. The count of remembered keys is read back from `GET /_local/state`
 * (`idempotency_keys`) after the RSS was read. Baseline: the RSS of the raw node:http server at rest.
 *
 * The load floor: a second fresh `boxkit serve` answers as many requests that remember nothing (replays of one key:
 * the same route, body and answer size, no box and no key added), its RSS read 2 s after the last answer. What the
 * service holds per key is then told apart from what any run of that many requests leaves behind in the process
 * (V8's young generation grown to its maximum, code optimized, allocator pages).
 *
 * The measurement itself ({@link createKeys}) is shared with section 6 (Durability.ts), which runs it against
 * `boxkit serve --data-dir`.
 *
 * Source: BENCHMARKS.md section 5 (memory) and its budget (100,000 idempotency keys in at most 150 MB of RSS); spec
 * Limits ("Idempotency-Key ... remembered at least 24 hours").
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

/**
 * What {@link createKeys} measured on one service: box creations asked for, how many were answered 201, whether the
 * time cap stopped them early, the keys the service remembers, and its RSS before and after. Memory in bytes, time
 * in milliseconds.
 */
export interface KeysResults {
  readonly keys: number
  readonly created: number
  readonly stoppedByTimeCap: boolean
  readonly timeCapSeconds: number
  /** Count per HTTP status of the creations (all 201 when every box was created). */
  readonly statusCodes: Record<string, number>
  /** `idempotency_keys` of GET /_local/state after the run. */
  readonly rememberedKeys: number
  readonly createMs: number
  /** RSS of the service at rest after start, after the creations, and its peak. */
  readonly idleRssBytes: number
  readonly rssBytes: number
  readonly peakRssBytes: number
  /** (rssBytes - idleRssBytes) / created. */
  readonly bytesPerKey: number
}

/** The results of section 5. Memory in bytes, time in milliseconds. */
export interface MemoryResults extends KeysResults {
  /** The load floor: RSS of another fresh service after as many replays of one key (nothing remembered). */
  readonly floorRssBytes: number
  /** Replays of the floor run answered with the remembered answer. */
  readonly floorReplays: number
  /** (rssBytes - floorRssBytes) / created: what the service holds per key and box. */
  readonly bytesPerKeyAboveFloor: number
  /** The baseline: RSS of the raw node:http server at rest. */
  readonly baselineRssBytes: number
}

const settle = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

const rssOf = (server: Child.ServerProcess) => Proc.readMemory(server.servingPid) ?? { rssBytes: Number.NaN, peakRssBytes: Number.NaN }

/** The baseline: the RSS of the raw node:http server (its own child process) at rest, 1 s after it listens. */
export const baselineRss: Effect.Effect<number, Child.ChildError> = Effect.scoped(Effect.gen(function*() {
  const raw = yield* Child.spawnServer({ label: "raw node:http", args: Scenarios.baselineArgs() })
  yield* settle(1000)
  return rssOf(raw).rssBytes
}))

/**
 * The measurement itself, on a freshly started service (in memory or durable): its RSS at rest (1 s after start),
 * `settings.idempotencyKeys` box creations with distinct keys at `settings.concurrency` (stopped after `maxSeconds`),
 * its RSS and peak 2 s after the last answer, then `idempotency_keys` from `GET /_local/state`. Also returns the id
 * of one box it created (the last one the state lists), for a later read.
 */
export const createKeys = Effect.fn("Memory.createKeys")(function*(
  settings: BenchSettings,
  server: Child.ServerProcess,
  maxSeconds: number = settings.idempotencyMaxSeconds
) {
  yield* settle(1000)
  const idle = rssOf(server)
  yield* Console.error(`  creating ${settings.idempotencyKeys} boxes with distinct Idempotency-Keys (${server.label})`)
  const start = performance.now()
  const result = yield* Load.autocannonRun(server.origin, Scenarios.createBox, {
    connections: settings.concurrency,
    amount: settings.idempotencyKeys,
    stopAfterSeconds: maxSeconds
  })
  const createMs = performance.now() - start
  yield* settle(2000)
  const after = rssOf(server)
  const state = yield* Effect.promise(async () => {
    const response = await request(`${server.origin}/_local/state`)
    return (await response.body.json()) as { idempotency_keys?: number; boxes?: ReadonlyArray<{ id?: string }> }
  })
  const created = result.statusCodeStats["201"]?.count ?? 0
  const statusCodes: Record<string, number> = {}
  for (const [status, stats] of Object.entries(result.statusCodeStats)) statusCodes[status] = stats.count
  const figures: KeysResults = {
    keys: settings.idempotencyKeys,
    created,
    stoppedByTimeCap: result.requests.sent < settings.idempotencyKeys,
    timeCapSeconds: maxSeconds,
    statusCodes,
    rememberedKeys: state.idempotency_keys ?? Number.NaN,
    createMs,
    idleRssBytes: idle.rssBytes,
    rssBytes: after.rssBytes,
    peakRssBytes: after.peakRssBytes,
    bytesPerKey: (after.rssBytes - idle.rssBytes) / Math.max(1, created)
  }
  return { figures, boxId: state.boxes?.at(-1)?.id }
})

/** Measures the baseline at rest, the load floor, then the service (in memory) before and after the creations. */
export const run = Effect.fn("Memory.run")(function*(settings: BenchSettings) {
  const baselineRssBytes = yield* baselineRss
  const floor = yield* Effect.scoped(Effect.gen(function*() {
    const server = yield* Child.spawnServer({ label: "boxkit serve (load floor)", args: Scenarios.serviceArgs() })
    yield* settle(1000)
    yield* Console.error(`  load floor: ${settings.idempotencyKeys} replays of one Idempotency-Key`)
    yield* Load.autocannonRun(server.origin, Scenarios.createBoxReplay, { connections: 1, amount: 1 })
    const result = yield* Load.autocannonRun(server.origin, Scenarios.createBoxReplay, {
      connections: settings.concurrency,
      amount: settings.idempotencyKeys,
      stopAfterSeconds: settings.idempotencyMaxSeconds
    })
    yield* settle(2000)
    return { rssBytes: rssOf(server).rssBytes, replays: result.statusCodeStats["201"]?.count ?? 0 }
  }))
  return yield* Effect.scoped(Effect.gen(function*() {
    const server = yield* Child.spawnServer({ label: "boxkit serve", args: Scenarios.serviceArgs() })
    const { figures } = yield* createKeys(settings, server)
    return {
      ...figures,
      floorRssBytes: floor.rssBytes,
      floorReplays: floor.replays,
      bytesPerKeyAboveFloor: (figures.rssBytes - floor.rssBytes) / Math.max(1, figures.created),
      baselineRssBytes
    } satisfies MemoryResults
  }))
})
