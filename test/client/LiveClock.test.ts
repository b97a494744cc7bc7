/**
 * The fence around the one upstream hook of the toolkit's timers (src/Http/LiveClock.ts): Effect's live clock is
 * recognised as the clock of `DefaultServices.liveServices`. These fail when an Effect upgrade changes that: a
 * default runtime must run on that clock, whose time is `Date.now()`; a `TestClock` or a clock given with
 * `Effect.withClock` must not count as live (their timers must stay theirs).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, DefaultServices, Effect } from "effect"
import { isLiveClock, runsOnLiveClock } from "../../src/Http/LiveClock.js"

const onLiveClock = Effect.withFiberRuntime((fiber) => Effect.succeed(runsOnLiveClock(fiber)))

describe("LiveClock", () => {
  it("a default runtime runs on the live clock (Effect.runSync and Effect.clockWith agree)", () => {
    expect(Effect.runSync(onLiveClock)).toBe(true)
    expect(Effect.runSync(Effect.clockWith((clock) => Effect.succeed(isLiveClock(clock))))).toBe(true)
  })

  it.live("it.live runs on it too", () => Effect.map(onLiveClock, (live) => expect(live).toBe(true)))

  it("the live clock's time is Date.now()", () => {
    const clock = Context.get(DefaultServices.liveServices, Clock.Clock)
    const before = Date.now()
    const now = clock.unsafeCurrentTimeMillis()
    expect(now).toBeGreaterThanOrEqual(before)
    expect(now).toBeLessThanOrEqual(Date.now())
  })

  it.effect("a TestClock is not the live clock", () => Effect.map(onLiveClock, (live) => expect(live).toBe(false)))

  it("a clock given with Effect.withClock is not the live clock, even one made by Clock.make()", () => {
    expect(Effect.runSync(Effect.withClock(onLiveClock, Clock.make()))).toBe(false)
  })
})
