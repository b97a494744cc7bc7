/**
 * The client's retry policy, as an Effect Schedule over the error of a failed attempt.
 *
 * - 429 `RateLimitError`: wait exactly its `Retry-After` (delta-seconds or an HTTP date, parsed by the transport),
 *   then send the same request unchanged (same `Idempotency-Key`). A `Retry-After` longer than `maxRetryAfter` is
 *   not slept: the call fails at once with the `RateLimitError`, which carries the duration in `retryAfter`.
 *   A 429 without `Retry-After` backs off as below.
 * - 503 `ServerError`: its `Retry-After` when present (same cap), otherwise exponential backoff with jitter.
 * - "idempotent request still in flight" (`ServerError`, code `idempotent_request_in_flight`): backoff, same key.
 * - `TransportError` whose request never left the client (`requestSent: false`: connection refused, host not
 *   found): backoff, for every request (it did not run).
 * - 500 `ServerError`, `TransportError` whose request was sent (the connection closed or reset before the answer)
 *   and a per-attempt `TimeoutError`: backoff, only when the request is safe to repeat (a read, a request carrying an
 *   idempotency key, or a call marked `safeToRepeat`).
 * - An error status without an envelope (`UnexpectedResponseError`, e.g. from a proxy): 429 and 503 back off; 500,
 *   502 and 504 back off when safe to repeat.
 * - Never retried: 400, 401, 402, 403, 404, 409 (a 409 on an idempotency key is a bug to surface), 501,
 *   `quota_exceeded_error`, unknown envelope types, and answers that do not match the resource schema.
 *
 * Backoff: retry n (0-based) waits `min(backoffCap, backoffBase * 2^n)` times a random factor in [0.5, 1.0)
 * ("equal jitter"); defaults 200 ms base and 10 s cap, so the waits are in [100, 200) ms, [200, 400) ms,
 * [400, 800) ms, ... up to [5, 10) s.
 *
 * Bounds: at most `maxAttempts` attempts (the first included), and no retry whose wait would end at or after the
 * call's deadline (`startedAtMillis + deadline`): the call then fails at once with the last error instead of
 * sleeping into a `TimeoutError`. `Transport.call` adds the hard deadline and the per-attempt timeout.
 *
 * Every retry is logged at debug level ("boxkit retrying") with the error's tag, envelope type, HTTP status and code,
 * the attempt number and the wait; giving up is logged at debug level ("boxkit not retrying") with the reason.
 * Messages of errors are not logged.
 *
 * Source: spec "Errors" rules 1-2, status table, and "Limits" (idempotency); the numbers are boxkit's choices
 * (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Random, Schedule, ScheduleDecision, ScheduleInterval } from "effect"
import * as ApiError from "../ApiError.js"
import type { RetrySettings } from "./BoxkitConfig.js"

/** Why a failed attempt is not retried. @since 0.1.0 @category Models */
export type StopReason =
  | "not-retryable"
  | "unsafe-to-repeat"
  | "retry-after-over-cap"
  | "attempts-exhausted"
  | "deadline"

/** How to treat one failed attempt. @since 0.1.0 @category Models */
export type Decision =
  | { readonly _tag: "RetryAfter"; readonly delay: Duration.Duration }
  | { readonly _tag: "Backoff" }
  | { readonly _tag: "Stop"; readonly reason: StopReason }

const stop = (reason: StopReason): Decision => ({ _tag: "Stop", reason })
const backoff: Decision = { _tag: "Backoff" }

const afterRetryAfter = (retryAfter: Duration.Duration | undefined, settings: RetrySettings): Decision => {
  if (retryAfter === undefined) return backoff
  return Duration.greaterThan(retryAfter, settings.maxRetryAfter)
    ? stop("retry-after-over-cap")
    : { _tag: "RetryAfter", delay: retryAfter }
}

/**
 * What to do after `error` (see the module docs): wait its Retry-After, back off, or stop. `safeToRepeat` is true
 * for reads and for requests carrying an idempotency key. Attempts and the deadline are not considered here.
 *
 * @since 0.1.0
 * @category Utils
 */
export const decide = (error: unknown, safeToRepeat: boolean, settings: RetrySettings): Decision => {
  if (error instanceof ApiError.RateLimitError) return afterRetryAfter(error.retryAfter, settings)
  if (error instanceof ApiError.ServerError) {
    if (ApiError.isIdempotentRequestInFlight(error)) return backoff
    if (error.status === 503) return afterRetryAfter(error.retryAfter, settings)
    return safeToRepeat ? backoff : stop("unsafe-to-repeat")
  }
  // A request that never left the client (connection refused, host not found) did not run: repeating it is harmless.
  if (error instanceof ApiError.TransportError && !error.requestSent) return backoff
  if (error instanceof ApiError.TransportError || error instanceof ApiError.TimeoutError) {
    return safeToRepeat ? backoff : stop("unsafe-to-repeat")
  }
  if (error instanceof ApiError.UnexpectedResponseError) {
    if (error.status === 429 || error.status === 503) return backoff
    if (error.status === 500 || error.status === 502 || error.status === 504) {
      return safeToRepeat ? backoff : stop("unsafe-to-repeat")
    }
  }
  return stop("not-retryable")
}

/**
 * The backoff delay before retry `n` (0-based) without jitter: `min(backoffCap, backoffBase * 2^n)`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const backoffDelay = (n: number, settings: RetrySettings): Duration.Duration =>
  Duration.min(settings.backoffCap, Duration.times(settings.backoffBase, 2 ** Math.min(n, 52)))

/**
 * The jittered backoff delay before retry `n`: {@link backoffDelay} times a factor in [0.5, 1.0) from `Random`,
 * rounded down to whole milliseconds.
 *
 * @since 0.1.0
 * @category Utils
 */
export const jitteredBackoff = (n: number, settings: RetrySettings): Effect.Effect<Duration.Duration> =>
  Effect.map(Random.next, (r) => Duration.millis(Math.floor(Duration.toMillis(backoffDelay(n, settings)) * (0.5 + r * 0.5))))

/**
 * The fields of an error worth logging and tracing: tag, envelope type, HTTP status, code. Never the message.
 *
 * @since 0.1.0
 * @category Utils
 */
export const errorFields = (error: unknown): Record<string, string> => {
  const fields: Record<string, string> = {}
  if (typeof error === "object" && error !== null) {
    if ("_tag" in error) fields.error = String(error._tag)
    if (ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError) {
      fields.error_type = ApiError.typeOf(error)
      if (error.code !== null) fields.code = String(error.code)
    }
    if ("status" in error && typeof error.status === "number") fields.status = String(error.status)
  }
  return fields
}

/**
 * The retry Schedule of one call: its input is the attempt's error, its output the number of retries so far.
 * Stops after `maxAttempts - 1` retries, when {@link decide} says stop, or when the wait would end at or after
 * `startedAtMillis + settings.deadline` (default: the deadline counts from the first failure). Jitter uses the
 * `Random` service, so tests with a seeded `Random` are deterministic.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const schedule = (
  settings: RetrySettings,
  safeToRepeat: boolean,
  startedAtMillis?: number
): Schedule.Schedule<number, unknown> =>
  Schedule.makeWithState<number, unknown, number>(0, (now, error, retries) =>
    Effect.gen(function*() {
      const giveUp = (reason: StopReason) =>
        Effect.logDebug("boxkit not retrying").pipe(
          Effect.annotateLogs({ ...errorFields(error), reason, attempts: String(retries + 1) }),
          Effect.as([retries, retries, ScheduleDecision.done] as const)
        )
      const decision = decide(error, safeToRepeat, settings)
      if (decision._tag === "Stop") return yield* giveUp(decision.reason)
      if (retries + 1 >= settings.maxAttempts) return yield* giveUp("attempts-exhausted")
      const delay = decision._tag === "RetryAfter" ? decision.delay : yield* jitteredBackoff(retries, settings)
      const wakeAt = now + Duration.toMillis(delay)
      if (wakeAt >= (startedAtMillis ?? now) + Duration.toMillis(settings.deadline)) return yield* giveUp("deadline")
      const next = retries + 1
      yield* Effect.logDebug("boxkit retrying").pipe(
        Effect.annotateLogs({
          ...errorFields(error),
          attempt: String(next + 1),
          wait: decision._tag === "RetryAfter" ? `Retry-After ${Duration.format(delay)}` : Duration.format(delay)
        })
      )
      return [next, next, ScheduleDecision.continueWith(ScheduleInterval.after(wakeAt))] as const
    }))
