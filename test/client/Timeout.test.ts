/**
 * `Timeout.timeoutFail` (the per-attempt timeout of `Transport.call` when the HTTP client cannot take a deadline, and
 * of webhook attempts): the effect's own outcome when it ends in time; otherwise the effect is interrupted (its
 * finalizers have run) and the timeout error is the failure; interrupting the caller interrupts the effect. On the
 * TestClock (a sleeping fiber) and on the live clock (a plain timer).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, TestClock } from "effect"
import * as Timeout from "../../src/Http/Timeout.js"

/** An effect that never ends on its own and records its interruption. */
const hanging = Effect.map(Deferred.make<void>(), (interrupted) => ({
  interrupted,
  effect: Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
}))

describe("Timeout.timeoutFail on the TestClock", () => {
  it.effect("an effect that ends in time keeps its success or failure", () =>
    Effect.gen(function*() {
      expect(yield* Timeout.timeoutFail(Effect.succeed(1), 1000, () => "timeout")).toBe(1)
      expect(yield* Effect.exit(Timeout.timeoutFail(Effect.fail("boom"), 1000, () => "timeout"))).toEqual(Exit.fail("boom"))
      const late = yield* Effect.fork(Timeout.timeoutFail(Effect.as(Effect.sleep("900 millis"), "done"), 1000, () => "timeout"))
      yield* TestClock.adjust("900 millis")
      expect(yield* Fiber.join(late)).toBe("done")
    }))

  it.effect("past the timeout the effect is interrupted first, then the timeout error is the failure", () =>
    Effect.gen(function*() {
      const { effect, interrupted } = yield* hanging
      const fiber = yield* Effect.fork(Effect.exit(Timeout.timeoutFail(effect, 1000, () => "timeout")))
      yield* TestClock.adjust("999 millis")
      expect(yield* Deferred.isDone(interrupted)).toBe(false)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toEqual(Exit.fail("timeout"))
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
    }))

  it.effect("interrupting the caller interrupts the effect and its timer (the interruption completes)", () =>
    Effect.gen(function*() {
      const { effect, interrupted } = yield* hanging
      const fiber = yield* Effect.fork(Timeout.timeoutFail(effect, 30_000, () => "timeout"))
      yield* TestClock.adjust("1 second")
      yield* Fiber.interrupt(fiber)
      // Fiber.interrupt returned: the caller ended, which waits for its timer fiber to be interrupted too.
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
    }))
})

describe("Timeout.timeoutFail on the live clock", () => {
  it.live("a plain timer ends a hanging effect after the timeout, interrupting it", () =>
    Effect.gen(function*() {
      const { effect, interrupted } = yield* hanging
      const started = Date.now()
      const exit = yield* Effect.exit(Timeout.timeoutFail(effect, 50, () => "timeout"))
      expect(exit).toEqual(Exit.fail("timeout"))
      expect(Date.now() - started).toBeGreaterThanOrEqual(45)
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
    }))

  it.live("an effect that ends in time is not disturbed; interrupting the caller interrupts the effect", () =>
    Effect.gen(function*() {
      expect(yield* Timeout.timeoutFail(Effect.as(Effect.sleep("10 millis"), "ok"), 1000, () => "timeout")).toBe("ok")
      const { effect, interrupted } = yield* hanging
      const fiber = yield* Effect.fork(Timeout.timeoutFail(effect, 10_000, () => "timeout"))
      yield* Effect.sleep(Duration.millis(10))
      yield* Fiber.interrupt(fiber)
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
    }))
})

describe("Timeout.timeoutFail agrees with Effect.timeoutFail (the stock API beside it)", () => {
  it.effect("the same exit for a success, a failure, a defect, an effect in time and one past the timeout", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<Effect.Effect<string, string>> = [
        Effect.succeed("ok"),
        Effect.fail("boom"),
        Effect.die("defect"),
        Effect.as(Effect.sleep("900 millis"), "in time"),
        Effect.as(Effect.sleep("1100 millis"), "late")
      ]
      for (const effect of cases) {
        const own = yield* Effect.fork(Effect.exit(Timeout.timeoutFail(effect, 1000, () => "timeout")))
        const stock = yield* Effect.fork(
          Effect.exit(Effect.timeoutFail(effect, { duration: Duration.millis(1000), onTimeout: () => "timeout" }))
        )
        yield* TestClock.adjust("2 seconds")
        expect(yield* Fiber.join(own)).toEqual(yield* Fiber.join(stock))
      }
    }))
})
