/**
 * HTTP load with autocannon (used programmatically), measured on the server side too: the server's CPU time over the
 * measured run (from `/proc`, in clock ticks of 10 ms) divided by the requests completed, and its RSS after the run.
 *
 * Source: BENCHMARKS.md section 1 (concurrency 64, 10 s measured after a few seconds of warm-up; server CPU per
 * request from `/proc/<pid>/stat` utime + stime before and after the measured run).
 *
 * @since 0.1.0
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import type { ServerProcess } from "./Child.js"
import * as Proc from "./Proc.js"
import * as Stats from "./Stats.js"

/** One kind of request to send: method, path (from the origin), headers and body. */
export interface LoadSpec {
  readonly title: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: string
  /** Replace `[<id>]` in the request (headers included) with a fresh unique id per request. */
  readonly idReplacement?: boolean
}

/** How long and how hard: a warm-up run, then the measured run (by `durationSeconds` or `amount` requests). */
export interface LoadShape {
  readonly connections: number
  readonly warmupSeconds: number
  readonly durationSeconds?: number
  readonly amount?: number
}

/** What one measured run gave. Latencies in milliseconds, CPU in microseconds, memory in bytes. */
export interface LoadResult {
  readonly title: string
  readonly connections: number
  readonly durationSeconds: number
  /** Requests completed in the measured run (any status). */
  readonly requests: number
  readonly requestsPerSecond: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly latencyMeanMs: number
  /** Answers outside 2xx, connection errors and timeouts in the measured run (all should be 0). */
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  /** Count per HTTP status. */
  readonly statusCodes: Record<string, number>
  /** Server CPU (user + system, whole process group) during the measured run, per completed request. */
  readonly serverCpuMicrosPerRequest: number
  /** Server CPU during the measured run, in seconds. */
  readonly serverCpuSeconds: number
  /** RSS of the serving process after the run, and its peak so far. */
  readonly serverRssBytes: number
  readonly serverPeakRssBytes: number
}

/**
 * Runs autocannon once against `origin`: for `durationSeconds` (default 10), or until `amount` requests were sent,
 * stopped early after `stopAfterSeconds` when given.
 */
export const autocannonRun = (origin: string, spec: LoadSpec, options: {
  readonly connections: number
  readonly durationSeconds?: number
  readonly amount?: number
  readonly stopAfterSeconds?: number
}): Effect.Effect<autocannon.Result> =>
  Effect.promise(async () => {
    const instance = autocannon({
      url: origin,
      connections: options.connections,
      pipelining: 1,
      timeout: 30,
      ...(options.amount !== undefined ? { amount: options.amount } : { duration: options.durationSeconds ?? 10 }),
      idReplacement: spec.idReplacement ?? false,
      requests: [{ method: spec.method, path: spec.path, headers: spec.headers, ...(spec.body !== undefined ? { body: spec.body } : {}) }]
    })
    const timer = options.stopAfterSeconds === undefined
      ? undefined
      : setTimeout(() => instance.stop(), options.stopAfterSeconds * 1000)
    try {
      return await instance
    } finally {
      clearTimeout(timer)
    }
  })

/**
 * Warms the server up with `shape.warmupSeconds` of the same load, then measures one run and the server's CPU and
 * memory around it.
 */
export const measure = Effect.fn("Load.measure")(function*(server: ServerProcess, spec: LoadSpec, shape: LoadShape) {
  if (shape.warmupSeconds > 0) {
    yield* autocannonRun(server.origin, spec, { connections: shape.connections, durationSeconds: shape.warmupSeconds })
  }
  const ticksBefore = Proc.groupCpuTicks(server.pgid)
  const result = yield* autocannonRun(server.origin, spec, shape)
  const ticks = Proc.groupCpuTicks(server.pgid) - ticksBefore
  const memory = Proc.readMemory(server.servingPid)
  const requests = result.requests.total
  const statusCodes: Record<string, number> = {}
  for (const [status, stats] of Object.entries(result.statusCodeStats)) statusCodes[status] = stats.count
  return {
    title: spec.title,
    connections: shape.connections,
    durationSeconds: result.duration,
    requests,
    requestsPerSecond: requests / result.duration,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    latencyMeanMs: result.latency.mean,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    serverCpuMicrosPerRequest: Stats.ratio(Proc.ticksToMicros(ticks), requests),
    serverCpuSeconds: ticks / Proc.clockTicksPerSecond,
    serverRssBytes: memory?.rssBytes ?? Number.NaN,
    serverPeakRssBytes: memory?.peakRssBytes ?? Number.NaN
  } satisfies LoadResult
})
