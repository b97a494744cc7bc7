/**
 * One logical call of the client (`Transport.call`): per-attempt timeouts, the retry Schedule and the overall
 * deadline, the context of the error the call ends with, and the attributes of the operation span.
 *
 * Cost per call: one timer per attempt (in the HTTP client when it is the toolkit's own and the fiber runs on the
 * live clock, else `Effect.timeoutFail`), the retry Schedule set up only after a failure, settings merged only when
 * overridden.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (retries, deadlines, the context of a failed call);
 * docs/decisions/0006-client-own-code-or-stock.md (the timers).
 *
 * @since 0.1.0
 */
import { Cause, type Clock, Duration, Effect, Exit, Option, Schedule, type Tracer } from "effect"
import * as ApiError from "../ApiError.js"
import { clockOf, runsOnLiveClock } from "../Http/LiveClock.js"
import * as UndiciHttpClient from "../Http/UndiciHttpClient.js"
import { mergeRetry, type RetrySettings } from "./BoxkitConfig.js"
import { normalizeError } from "./ErrorDecoding.js"
import type { ClientFailure } from "./Operation.js"
import * as Retry from "./Retry.js"
import { currentRetryOverrides, noOverrides } from "./RetryOverrides.js"

/**
 * What a call is, for the context of the error it ends with (`ApiError.CallContext`): read only when the call
 * fails, so that a call that succeeds does not work out its path. `Transport.call`'s third argument.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (the context of a failed call).
 *
 * @since 0.1.0
 * @category Models
 */
export interface CallSite {
  /** The operation (`boxes.create`), the HTTP method, and the path without the base URL or the query. */
  readonly describe: () => { readonly operation: string; readonly method: string; readonly path: string }
}

/** Options of one logical call. @since 0.1.0 @category Models */
export interface CallOptions {
  /** True for reads and requests carrying an idempotency key: 500 and transport failures are then retried. */
  readonly safeToRepeat: boolean
  /** Overrides of the retry settings for this call only (win over `Transport.withRetry` and `BoxkitConfig.retry`). */
  readonly retry?: Partial<RetrySettings> | undefined
  /**
   * Called with the error of a failed attempt just before the call retries it (e.g. to remember that an earlier
   * attempt may have been carried out: `LostAnswer.mayHaveRun`).
   */
  readonly onRetry?: ((error: ClientFailure) => void) | undefined
}

/**
 * One logical call's state (see {@link makeCall}): its settings, clock and attempts, and the two timeout errors. A
 * class, so that a call allocates one object rather than a closure per helper.
 */
class Call<A, R> {
  attempts = 0
  private readonly startedAt: number
  private readonly deadlineAt: number
  private readonly attemptMillis: number
  private deadlineError: ApiError.TimeoutError | undefined = undefined

  constructor(
    private readonly settings: RetrySettings,
    private readonly safeToRepeat: boolean,
    private readonly clock: Clock.Clock,
    private readonly attempt: Effect.Effect<A, ClientFailure, R>,
    private readonly byClient: boolean,
    private readonly onRetry: ((error: ClientFailure) => void) | undefined
  ) {
    this.startedAt = clock.unsafeCurrentTimeMillis()
    this.deadlineAt = this.startedAt + Duration.toMillis(settings.deadline)
    this.attemptMillis = Duration.toMillis(settings.attemptTimeout)
  }

  /** The call's deadline passed (one error per call: it ends the call, it is never retried). */
  pastDeadline(): ApiError.TimeoutError {
    return this.deadlineError ??= new ApiError.TimeoutError({
      message: `call did not finish within its deadline of ${Duration.format(this.settings.deadline)}`,
      timeout: this.settings.deadline
    })
  }

  /** One attempt ran past `attemptTimeout` (retried like any transport failure). */
  attemptTimedOut(): ApiError.TimeoutError {
    return new ApiError.TimeoutError({
      message: `attempt timed out after ${Duration.format(this.settings.attemptTimeout)}`,
      timeout: this.settings.attemptTimeout
    })
  }

  /** One attempt, bounded by `min(attemptTimeout, time left before the deadline)`. */
  once(): Effect.Effect<A, ClientFailure, R> {
    const now = this.clock.unsafeCurrentTimeMillis()
    const left = this.deadlineAt - now
    if (left <= 0) return Effect.fail(this.pastDeadline())
    this.attempts++
    const byDeadline = left <= this.attemptMillis
    if (this.byClient) {
      return UndiciHttpClient.withDeadline(
        this.attempt,
        byDeadline ? new CallDeadline(this, now + left) : new AttemptDeadline(this, now + this.attemptMillis)
      )
    }
    return byDeadline
      ? Effect.timeoutFail(this.attempt, { duration: left, onTimeout: () => this.pastDeadline() })
      : Effect.timeoutFail(this.attempt, { duration: this.attemptMillis, onTimeout: () => this.attemptTimedOut() })
  }

  /** After a first failure: the retry Schedule (set up only now), each retry an `once` again. */
  retry(first: ClientFailure, once: Effect.Effect<A, ClientFailure, R>): Effect.Effect<A, ClientFailure, R> {
    if (first === this.deadlineError) return Effect.fail(first)
    return Effect.flatMap(
      Schedule.driver(Retry.schedule(this.settings, this.safeToRepeat, this.startedAt)),
      (driver) => this.loop(driver, first, once)
    )
  }

  private loop(
    driver: Schedule.ScheduleDriver<number, unknown>,
    error: ClientFailure,
    once: Effect.Effect<A, ClientFailure, R>
  ): Effect.Effect<A, ClientFailure, R> {
    return Effect.matchEffect(driver.next(error), {
      onFailure: () => Effect.fail(error),
      onSuccess: () => {
        this.onRetry?.(error)
        return Effect.catchAll(once, (next) => next === this.deadlineError ? Effect.fail(next) : this.loop(driver, next, once))
      }
    })
  }

  /** `error`, the call's last, carrying the call's context: `site`, the attempts made and allowed. */
  withContext(error: ClientFailure, site: CallSite): ClientFailure {
    const { method, operation, path } = site.describe()
    const attempts = { attempts: this.attempts, maxAttempts: this.settings.maxAttempts }
    return ApiError.withContext(error, { operation, method, path, ...attempts })
  }

  /** The operation span's attributes (see {@link makeCall}). */
  annotate(span: Tracer.Span, exit: Exit.Exit<A, ClientFailure>): void {
    span.attribute("boxkit.attempts", this.attempts)
    span.attribute("boxkit.safe_to_repeat", this.safeToRepeat)
    span.attribute("boxkit.outcome", Exit.isSuccess(exit) ? "success" : "failure")
    if (Exit.isFailure(exit)) {
      const fields = Retry.errorFields(Option.getOrUndefined(Cause.failureOption(exit.cause)))
      for (const key in fields) span.attribute(key === "status" ? "boxkit.http_status" : `boxkit.${key}`, fields[key])
    }
  }
}

/** An attempt's deadline set by the call's deadline. */
class CallDeadline implements UndiciHttpClient.Deadline {
  constructor(private readonly call: Call<any, any>, readonly atMillis: number) {}
  onExpire() {
    return this.call.pastDeadline()
  }
}

/** An attempt's deadline set by `attemptTimeout`. */
class AttemptDeadline implements UndiciHttpClient.Deadline {
  constructor(private readonly call: Call<any, any>, readonly atMillis: number) {}
  onExpire() {
    return this.call.attemptTimedOut()
  }
}

/**
 * Runs one logical call (`Transport.call`) with `retry` (`BoxkitConfig.retry`); `lean` when the transport's
 * `HttpClient` is the toolkit's own (`UndiciHttpClient.honoursDeadline`). `attempt` is the request effect; it is run
 * again, unchanged, for every retry (resolve idempotency keys before it, never inside it). Each attempt is bounded
 * by `attemptTimeout` (`TimeoutError`); failures are retried by `Retry.schedule` (see Retry.ts); the whole call is
 * bounded by `deadline` (`TimeoutError`, not retried). Interrupting the caller, a per-attempt timeout and the
 * deadline all interrupt the attempt in flight, which aborts its HTTP request. The settings are `retry` with the
 * overrides of `Transport.withRetry` and `options.retry`.
 *
 * How it is bounded: each attempt gets one timer of `min(attemptTimeout, time left before the deadline)`; a retry
 * whose wait would reach the deadline is not made (`Retry.schedule`), so no second timer is needed for the deadline.
 * With the toolkit's own `HttpClient` and the live clock (LiveClock.ts), the timer is the client's
 * (`UndiciHttpClient.withDeadline`: it bounds the HTTP exchanges the attempt runs on this fiber, which is where an
 * attempt of this transport waits); otherwise `Effect.timeoutFail`. The retry Schedule is only set up after a
 * first failure.
 *
 * With a `site`, the error the call ends with carries its context (`ApiError.CallContext`: operation, method, path,
 * attempts made and allowed), shown in its `name`.
 *
 * The current span (the operation's, e.g. `Boxes.create`) gets `boxkit.attempts`, `boxkit.safe_to_repeat`,
 * `boxkit.outcome` (`success` or `failure`) and on failure `boxkit.error`, `boxkit.error_type`, `boxkit.http_status`
 * and `boxkit.code`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeCall = (retry: RetrySettings, lean: boolean) =>
<A, E, R>(
  attempt: Effect.Effect<A, E, R>,
  options: CallOptions,
  site?: CallSite
): Effect.Effect<A, ClientFailure, R> =>
  Effect.withFiberRuntime<A, ClientFailure, R>((fiber) => {
    const local = fiber.getFiberRef(currentRetryOverrides)
    const settings = local === noOverrides && options.retry === undefined
      ? retry
      : mergeRetry(retry, local, options.retry)
    const state = new Call(
      settings,
      options.safeToRepeat,
      clockOf(fiber),
      Effect.mapError(attempt, normalizeError),
      lean && runsOnLiveClock(fiber),
      options.onRetry
    )
    const once = Effect.suspend(() => state.once())
    const retried = Effect.catchAll(once, (first) => state.retry(first, once))
    const ended = site === undefined ? retried : Effect.mapError(retried, (error) => state.withContext(error, site))
    const span = fiber.currentSpan
    if (span === undefined || span._tag !== "Span") return ended
    return Effect.onExit(ended, (exit) => Effect.sync(() => state.annotate(span, exit)))
  })
