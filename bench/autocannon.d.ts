/**
 * Types of the part of autocannon 8 the benchmark suite uses (the package ships none).
 *
 * Source: node_modules/autocannon/README.md, lib/aggregateResult.js.
 */
declare module "autocannon" {
  namespace autocannon {
    /** One request of a run: method, path, headers, body. */
    interface Request {
      readonly method?: string
      readonly path?: string
      readonly headers?: Record<string, string>
      readonly body?: string | Buffer
    }
    /** Options of a run: `duration` in seconds, or `amount` requests in all; `idReplacement` fills `[<id>]`. */
    interface Options extends Request {
      readonly url: string
      readonly connections?: number
      readonly pipelining?: number
      readonly duration?: number
      readonly amount?: number
      readonly timeout?: number
      readonly idReplacement?: boolean
      readonly requests?: ReadonlyArray<Request>
    }
    /** Percentiles of a histogram (`p50`, `p99`, ... in the histogram's unit). */
    interface Histogram {
      readonly average: number
      readonly mean: number
      readonly stddev: number
      readonly min: number
      readonly max: number
      readonly total: number
      readonly p50: number
      readonly p90: number
      readonly p99: number
      readonly p99_9: number
    }
    /** The result of a run; latencies in milliseconds, `duration` in seconds. */
    interface Result {
      readonly duration: number
      readonly errors: number
      readonly timeouts: number
      readonly non2xx: number
      readonly resets: number
      readonly "2xx": number
      readonly statusCodeStats: Record<string, { readonly count: number }>
      readonly latency: Histogram
      readonly requests: Histogram & { readonly sent: number }
      readonly throughput: Histogram
    }
    /** A running instance; `stop()` ends it early. */
    interface Instance extends PromiseLike<Result> {
      stop(): void
    }
  }
  function autocannon(options: autocannon.Options): autocannon.Instance
  export = autocannon
}
