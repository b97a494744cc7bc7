/**
 * The timing of the client's Schedules, proved on the TestClock: `Retry.schedule` driven by failing effects that
 * record `Clock.currentTimeMillis` per attempt, and the polling Schedule of `Polling.pollUntil`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Exit, Fiber, Option, Random, TestClock } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { defaultRetry, mergeRetry, type RetrySettings } from "../../src/Client/BoxkitConfig.js"
import * as Polling from "../../src/Client/Polling.js"
import * as Retry from "../../src/Client/Retry.js"

const settings = (overrides: Partial<RetrySettings> = {}) => mergeRetry(defaultRetry, overrides)

const rateLimited = (seconds: number) => ApiError.make.rateLimited(Duration.seconds(seconds))
const unavailable = (seconds?: number) =>
  ApiError.make.unavailable("down", seconds === undefined ? undefined : Duration.seconds(seconds))
const transport = new ApiError.TransportError({ message: "other side closed", method: "POST", url: "http://x/v1/boxes" })
const attemptTimeout = new ApiError.TimeoutError({ message: "attempt timed out", timeout: Duration.seconds(30) })

/**
 * Runs an attempt that fails with `errors(n)` (n = 0-based attempt) under `Retry.schedule`, and advances the
 * TestClock by `horizon`. Returns the time of every attempt (milliseconds since the call started) and the failure.
 */
const drive = (
  errors: (attempt: number) => unknown,
  retry: RetrySettings,
  safeToRepeat: boolean,
  horizon: Duration.DurationInput = "1 hour"
) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    const startedAt = yield* Clock.currentTimeMillis
    const attempt = Effect.suspend(() =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        times.push(now - startedAt)
        return Effect.fail(errors(times.length - 1))
      })
    )
    const fiber = yield* Effect.fork(Effect.retry(attempt, Retry.schedule(retry, safeToRepeat, startedAt)))
    yield* TestClock.adjust(horizon)
    const exit = yield* Fiber.await(fiber)
    const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    return { times, failure }
  })

const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((time, i) => time - times[i])

describe("Retry.schedule (TestClock)", () => {
  it.effect("429: waits exactly Retry-After, to the second, on every retry", () =>
    Effect.gen(function*() {
      const { failure, times } = yield* drive(() => rateLimited(3), settings({ maxAttempts: 4 }), false)
      expect(times).toEqual([0, 3000, 6000, 9000])
      expect(failure).toBeInstanceOf(ApiError.RateLimitError)
    }))

  it.effect("429: Retry-After 0 retries at once; a changing Retry-After is followed each time", () =>
    Effect.gen(function*() {
      const seconds = [0, 2, 1, 5]
      const { times } = yield* drive((n) => rateLimited(seconds[n] ?? 0), settings({ maxAttempts: 5 }), true)
      expect(times).toEqual([0, 0, 2000, 3000, 8000])
    }))

  it.effect("429: a Retry-After over maxRetryAfter fails at once with the RateLimitError carrying the duration", () =>
    Effect.gen(function*() {
      const { failure, times } = yield* drive(
        () => rateLimited(61),
        settings({ maxRetryAfter: Duration.seconds(60) }),
        true
      )
      expect(times).toEqual([0])
      expect(failure).toBeInstanceOf(ApiError.RateLimitError)
      expect(Duration.toSeconds((failure as ApiError.RateLimitError).retryAfter!)).toBe(61)
      // At the cap exactly it still waits (when the deadline leaves room).
      const atCap = yield* drive(
        (n) => n === 0 ? rateLimited(60) : ApiError.make.notFound("x"),
        settings({ deadline: Duration.minutes(2) }),
        true
      )
      expect(atCap.times).toEqual([0, 60_000])
    }))

  it.effect("503 with Retry-After waits exactly that, on unsafe requests too", () =>
    Effect.gen(function*() {
      const { times } = yield* drive(() => unavailable(2), settings({ maxAttempts: 3 }), false)
      expect(times).toEqual([0, 2000, 4000])
    }))

  it.effect("503 without Retry-After: exponential backoff with jitter within [d/2, d), d = min(cap, base * 2^n)", () =>
    Effect.gen(function*() {
      const retry = settings({ maxAttempts: 9, backoffBase: Duration.millis(200), backoffCap: Duration.seconds(1) })
      const nominal = [200, 400, 800, 1000, 1000, 1000, 1000, 1000]
      const observed: Array<Array<number>> = []
      for (const seed of [1, 2, 3, 4, 5]) {
        const { times } = yield* Effect.withRandom(drive(() => unavailable(), retry, false), Random.make(seed))
        expect(times).toHaveLength(9)
        const waits = gaps(times)
        waits.forEach((wait, n) => {
          expect(wait).toBeGreaterThanOrEqual(nominal[n] / 2)
          expect(wait).toBeLessThan(nominal[n])
        })
        observed.push(waits)
      }
      // The jitter spreads the waits: five seeds do not all wait the same.
      expect(new Set(observed.map((waits) => waits.join(","))).size).toBeGreaterThan(1)
      // The defaults: 200 ms base doubling to a 10 s cap.
      expect([0, 1, 5, 6, 20].map((n) => Duration.toMillis(Retry.backoffDelay(n, defaultRetry)))).toEqual(
        [200, 400, 6400, 10_000, 10_000]
      )
    }))

  it.effect("the same Random seed gives the same jittered waits", () =>
    Effect.gen(function*() {
      const retry = settings({ maxAttempts: 6 })
      const first = yield* Effect.withRandom(drive(() => transport, retry, true), Random.make(42))
      const again = yield* Effect.withRandom(drive(() => transport, retry, true), Random.make(42))
      expect(again.times).toEqual(first.times)
    }))

  it.effect("idempotent request still in flight: backoff with the same request, even when not otherwise safe", () =>
    Effect.gen(function*() {
      const { times } = yield* drive(
        () => ApiError.make.idempotentRequestInFlight(),
        settings({ maxAttempts: 3, backoffBase: Duration.millis(100) }),
        false
      )
      expect(times).toHaveLength(3)
      const waits = gaps(times)
      expect(waits[0]).toBeGreaterThanOrEqual(50)
      expect(waits[0]).toBeLessThan(100)
      expect(waits[1]).toBeGreaterThanOrEqual(100)
      expect(waits[1]).toBeLessThan(200)
    }))

  it.effect("500, transport failures and attempt timeouts are retried only when safe to repeat", () =>
    Effect.gen(function*() {
      for (const error of [ApiError.make.server(), transport, attemptTimeout]) {
        const safe = yield* drive(() => error, settings({ maxAttempts: 4 }), true)
        expect(safe.times).toHaveLength(4)
        expect(safe.failure).toBe(error)
        const unsafe = yield* drive(() => error, settings({ maxAttempts: 4 }), false)
        expect(unsafe.times).toEqual([0])
        expect(unsafe.failure).toBe(error)
      }
    }))

  it.effect("400, 401, 402, 403, 404, 409, 501 are never retried", () =>
    Effect.gen(function*() {
      const never = [
        ApiError.make.invalidRequest("bad"),
        ApiError.make.authentication(),
        ApiError.make.billing("http://billing"),
        ApiError.make.permission("no"),
        ApiError.make.notFound("gone"),
        ApiError.make.conflict("Idempotency-Key reused"),
        ApiError.make.notImplemented("no clipboard"),
        new ApiError.QuotaExceededError({ message: "quota", param: null, code: null, status: 429 }),
        new ApiError.UnexpectedResponseError({ message: "schema mismatch", status: 200 })
      ]
      for (const error of never) {
        const { failure, times } = yield* drive(() => error, settings(), true)
        expect(times, error._tag).toEqual([0])
        expect(failure).toBe(error)
      }
    }))

  it.effect("bounded by maxAttempts", () =>
    Effect.gen(function*() {
      for (const maxAttempts of [1, 2, 7]) {
        const { times } = yield* drive(() => rateLimited(1), settings({ maxAttempts }), true)
        expect(times).toHaveLength(maxAttempts)
      }
    }))

  it.effect("bounded by the deadline: no retry whose wait would reach it; the last error is kept", () =>
    Effect.gen(function*() {
      const { failure, times } = yield* drive(
        () => rateLimited(4),
        settings({ maxAttempts: 100, deadline: Duration.seconds(10) }),
        true
      )
      expect(times).toEqual([0, 4000, 8000])
      expect(failure).toBeInstanceOf(ApiError.RateLimitError)
      // A Retry-After beyond the deadline fails at once instead of sleeping into a timeout.
      const beyond = yield* drive(() => rateLimited(30), settings({ deadline: Duration.seconds(20) }), true)
      expect(beyond.times).toEqual([0])
      // Backoff: every attempt starts before the deadline.
      const backoff = yield* drive(
        () => transport,
        settings({ maxAttempts: 1000, deadline: Duration.seconds(5), backoffCap: Duration.millis(800) }),
        true
      )
      expect(backoff.times.length).toBeGreaterThan(6)
      expect(Math.max(...backoff.times)).toBeLessThan(5000)
      expect(5000 - Math.max(...backoff.times)).toBeLessThan(800)
    }))

  it("decide: the spec's table", () => {
    const retry = settings()
    expect(Retry.decide(rateLimited(1), false, retry)).toEqual({ _tag: "RetryAfter", delay: Duration.seconds(1) })
    expect(Retry.decide(unavailable(), false, retry)).toEqual({ _tag: "Backoff" })
    expect(Retry.decide(ApiError.make.server(), false, retry)).toEqual({ _tag: "Stop", reason: "unsafe-to-repeat" })
    expect(Retry.decide(ApiError.make.conflict("x"), true, retry)).toEqual({ _tag: "Stop", reason: "not-retryable" })
    expect(Retry.decide(new ApiError.UnexpectedResponseError({ message: "bad gateway", status: 502 }), true, retry))
      .toEqual({ _tag: "Backoff" })
    expect(Retry.decide(rateLimited(120), true, retry)).toEqual({ _tag: "Stop", reason: "retry-after-over-cap" })
  })
})

describe("Polling.pollUntil (TestClock)", () => {
  /** A read that records its time and answers `statuses[n]` (the last one forever). */
  const scripted = (statuses: ReadonlyArray<string>) => {
    const times: Array<number> = []
    const read = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      times.push(now)
      return Effect.succeed(statuses[Math.min(times.length - 1, statuses.length - 1)])
    })
    return { times, read }
  }

  it.effect("reads at 0, 100, 300, 700, 1500, 3100 ms, the last read exactly at the deadline, then fails with the last status", () =>
    Effect.gen(function*() {
      const { read, times } = scripted(["creating", "creating", "creating", "creating", "creating", "creating", "sleeping"])
      const fiber = yield* Effect.fork(Polling.pollUntil(read, {
        done: (status) => status === "running",
        timeout: Duration.seconds(5),
        onTimeout: (last) => ({ _tag: "Timeout" as const, last: Option.getOrNull(last) })
      }))
      yield* TestClock.adjust("1 minute")
      const exit = yield* Fiber.await(fiber)
      expect(times).toEqual([0, 100, 300, 700, 1500, 3100, 5000])
      expect(exit).toEqual(Exit.fail({ _tag: "Timeout", last: "sleeping" }))
    }))

  it.effect("waits are capped at maxInterval and stop as soon as the value is done", () =>
    Effect.gen(function*() {
      const { read, times } = scripted(["a", "a", "a", "a", "a", "a", "a", "done"])
      const fiber = yield* Effect.fork(Polling.pollUntil(read, {
        done: (status) => status === "done",
        timeout: Duration.minutes(1),
        interval: Duration.millis(500),
        maxInterval: Duration.seconds(1),
        onTimeout: () => "timeout"
      }))
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(fiber)).toBe("done")
      expect(times).toEqual([0, 500, 1500, 2500, 3500, 4500, 5500, 6500])
    }))

  it.effect("a failing read stops the polling at once with its error", () =>
    Effect.gen(function*() {
      let reads = 0
      const read = Effect.suspend(() => ++reads === 3 ? Effect.fail("box failed" as const) : Effect.succeed("creating"))
      const fiber = yield* Effect.fork(Polling.pollUntil(read, {
        done: () => false,
        timeout: Duration.minutes(1),
        onTimeout: () => "timeout" as const
      }))
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.await(fiber)).toEqual(Exit.fail("box failed"))
      expect(reads).toBe(3)
    }))
})
