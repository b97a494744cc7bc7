/**
 * The client's retry policy, as Effect Schedules over the error of a failed attempt.
 *
 * - 429 `RateLimitError`: wait exactly its `Retry-After`, then send the same request (same `Idempotency-Key`).
 *   A `Retry-After` longer than `maxRetryAfter` is not slept: the call fails at once with the `RateLimitError`,
 *   which carries the duration.
 * - 503 `ServerError`: its `Retry-After` when present, otherwise exponential backoff with jitter: delay n (0-based)
 *   is `min(backoffCap, backoffBase * 2^n)` times a random factor in [0.5, 1.0) (defaults: 200 ms base, 10 s cap).
 * - "idempotent request still in flight" (`ServerError`, code `idempotent_request_in_flight`): backoff as above.
 * - 500 `ServerError`, `TransportError` and per-attempt `TimeoutError`: backoff as above, only when the request is
 *   safe to repeat (a read, or a request carrying an idempotency key).
 * - Never retried: 400, 401, 402, 403, 404, 409 (a 409 on an idempotency key is a bug to surface), 501, and decoding
 *   failures.
 *
 * Bounded by `maxAttempts` here and by the overall deadline in `Transport.call`.
 *
 * Source: spec "Errors" rules 1-2 and Limits (idempotency); docs/ASSUMPTIONS.md for the numbers.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Random, Schedule, ScheduleDecision, ScheduleInterval } from "effect"
import * as ApiError from "../ApiError.js"
import type { RetrySettings } from "./BoxkitConfig.js"

/** How to treat one failed attempt. */
export type Decision =
  | { readonly _tag: "RetryAfter"; readonly delay: Duration.Duration }
  | { readonly _tag: "Backoff" }
  | { readonly _tag: "Stop" }

const stop: Decision = { _tag: "Stop" }
const backoff: Decision = { _tag: "Backoff" }

/**
 * What to do after `error`: wait its Retry-After, back off, or stop. `safeToRepeat` is true for reads and for
 * requests carrying an idempotency key.
 */
export const decide = (error: unknown, safeToRepeat: boolean, settings: RetrySettings): Decision => {
  if (error instanceof ApiError.RateLimitError) {
    if (error.retryAfter === undefined) return backoff
    return Duration.greaterThan(error.retryAfter, settings.maxRetryAfter)
      ? stop
      : { _tag: "RetryAfter", delay: error.retryAfter }
  }
  if (error instanceof ApiError.ServerError) {
    if (ApiError.isIdempotentRequestInFlight(error)) return backoff
    if (error.status === 503) {
      if (error.retryAfter === undefined) return backoff
      return Duration.greaterThan(error.retryAfter, settings.maxRetryAfter)
        ? stop
        : { _tag: "RetryAfter", delay: error.retryAfter }
    }
    return safeToRepeat ? backoff : stop
  }
  if (error instanceof ApiError.TransportError || error instanceof ApiError.TimeoutError) {
    return safeToRepeat ? backoff : stop
  }
  return stop
}

/** The backoff delay before retry `n` (0-based) without jitter: `min(cap, base * 2^n)`. */
export const backoffDelay = (n: number, settings: RetrySettings): Duration.Duration =>
  Duration.min(settings.backoffCap, Duration.times(settings.backoffBase, 2 ** n))

/**
 * The retry Schedule of one call: its input is the attempt's error, its output the number of retries so far.
 * Stops after `maxAttempts - 1` retries or when {@link decide} says stop. Jitter uses the `Random` service, so tests
 * with `TestRandom` are deterministic.
 */
export const schedule = (settings: RetrySettings, safeToRepeat: boolean): Schedule.Schedule<number, unknown> =>
  Schedule.makeWithState<number, unknown, number>(0, (now, error, retries) =>
    Effect.gen(function*() {
      if (retries + 1 >= settings.maxAttempts) return [retries, retries, ScheduleDecision.done] as const
      const decision = decide(error, safeToRepeat, settings)
      if (decision._tag === "Stop") return [retries, retries, ScheduleDecision.done] as const
      const delay = decision._tag === "RetryAfter"
        ? decision.delay
        : Duration.times(backoffDelay(retries, settings), 0.5 + (yield* Random.next) * 0.5)
      const next = retries + 1
      return [next, next, ScheduleDecision.continueWith(ScheduleInterval.after(now + Duration.toMillis(delay)))] as const
    }))
