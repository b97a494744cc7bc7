/**
 * `sleepUntil` (src/Server/clock/VirtualClock.ts; docs/decisions/0007-virtual-clock.md): a wait until an instant of the
 * service's clock, which a webhook's rounds use between rounds. On the virtual clock the deadline is the instant
 * itself, so a move of the clock that comes after the instant was computed and before the sleep began (an advance
 * while the delivery stores its next position) ends the wait at once instead of being added to it. On any other clock
 * it sleeps what is left when it begins.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import { sleepUntil, VirtualClock } from "../../src/Server/clock/VirtualClock.js"

const hour = 3_600_000

describe("sleepUntil", () => {
  it("on the virtual clock, an instant the clock was moved past before the sleep began ends the sleep at once", () => {
    const clock = new VirtualClock()
    const instant = clock.unsafeCurrentTimeMillis() + hour
    clock.setOffset(2 * hour)
    // Run synchronously: a sleep that waits for anything (a real timer) cannot complete here.
    expect(Exit.isSuccess(Effect.runSyncExit(Effect.withClock(sleepUntil(instant), clock)))).toBe(true)
    expect(clock.nextDeadlineMillis).toBeUndefined()
  })

  it.live("on the virtual clock, an instant ahead is waited for until a move reaches it", () =>
    Effect.gen(function*() {
      const clock = new VirtualClock()
      const instant = clock.unsafeCurrentTimeMillis() + hour
      const sleeping = yield* Effect.fork(Effect.withClock(sleepUntil(instant), clock))
      while (clock.nextDeadlineMillis === undefined) yield* Effect.yieldNow()
      // The deadline is the instant asked, not a duration counted from when the sleep began.
      expect(clock.nextDeadlineMillis).toBe(instant)
      expect(sleeping.unsafePoll()).toBeNull()
      clock.moveTo(instant)
      yield* Fiber.join(sleeping)
      expect(clock.nextDeadlineMillis).toBeUndefined()
    }))

  it.effect("on another clock, it sleeps what is left of the way to the instant; a passed instant not at all", () =>
    Effect.gen(function*() {
      const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      yield* sleepUntil(now - 1000)
      const sleeping = yield* Effect.fork(sleepUntil(now + 5000))
      yield* TestClock.adjust(4999)
      expect(sleeping.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      yield* Fiber.join(sleeping)
    }))
})
