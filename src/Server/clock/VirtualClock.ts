/**
 * The virtual clock of the local service (`boxkit serve --clock virtual`): an Effect `Clock` whose time is the real
 * time plus an offset that only grows. It runs at real speed; {@link VirtualClock.moveTo} moves it forward (what
 * `POST /_local/clock/advance` does, ServiceClock.ts). Its `sleep` wakes when its own time reaches the sleep's
 * deadline, by real time passing or by a move, whichever comes first: every `Effect.sleep`, `Schedule` and timeout
 * of a fiber on this clock follows it.
 *
 * Source: docs/decisions/0007-virtual-clock.md, docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect } from "effect"

/** A fiber sleeping until `deadlineMillis` (the clock's own time): `wake` resumes it, `timer` is its real timer. */
interface Sleeper {
  readonly deadlineMillis: number
  readonly wake: () => void
  timer: ReturnType<typeof setTimeout> | undefined
}

/** The longest real timer Node arms (about 24.8 days); a longer sleep is re-armed when it ends. */
const maxTimerMillis = 2 ** 31 - 1

/** Effect's live clock, for its high-resolution time. */
const liveClock = Clock.make()

/** Nanoseconds per millisecond. */
const nanosPerMilli = BigInt(1_000_000)

/** The scheduler of the clock: tasks run on real timers (the service schedules no task of its own on a clock). */
const realScheduler: Clock.ClockScheduler = {
  unsafeSchedule(task, duration) {
    const millis = Duration.toMillis(duration)
    if (!Number.isFinite(millis) || millis > maxTimerMillis) return () => false
    let completed = false
    const handle = setTimeout(() => {
      completed = true
      task()
    }, millis)
    return () => {
      clearTimeout(handle)
      return !completed
    }
  }
}

/**
 * A `Clock` at the real time plus `offsetMillis` (milliseconds, never negative, only grows). Sleeps wake at their
 * deadline in this clock's time, by real time or by {@link VirtualClock.moveTo}.
 *
 * @since 0.1.0
 * @category Models
 */
export class VirtualClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  #offsetMillis = 0
  readonly #sleepers = new Set<Sleeper>()

  /** How far ahead of the real time the clock is, in milliseconds. */
  get offsetMillis(): number {
    return this.#offsetMillis
  }

  /** The real time (Effect's live clock), Unix milliseconds. */
  realTimeMillis(): number {
    return liveClock.unsafeCurrentTimeMillis()
  }

  /** The clock's time, Unix milliseconds. */
  unsafeCurrentTimeMillis(): number {
    return this.realTimeMillis() + this.#offsetMillis
  }

  /** The clock's time in nanoseconds: the live clock's high-resolution time plus the offset. */
  unsafeCurrentTimeNanos(): bigint {
    return liveClock.unsafeCurrentTimeNanos() + BigInt(this.#offsetMillis) * nanosPerMilli
  }

  readonly currentTimeMillis: Effect.Effect<number> = Effect.sync(() => this.unsafeCurrentTimeMillis())

  readonly currentTimeNanos: Effect.Effect<bigint> = Effect.sync(() => this.unsafeCurrentTimeNanos())

  scheduler(): Effect.Effect<Clock.ClockScheduler> {
    return Effect.succeed(realScheduler)
  }

  sleep(duration: Duration.Duration): Effect.Effect<void> {
    return Effect.suspend(() => this.sleepUntil(this.unsafeCurrentTimeMillis() + Duration.toMillis(duration)))
  }

  /**
   * Sleeps until the clock reads `deadlineMillis` (Unix milliseconds of this clock): at once when it already does, so
   * a move that came before the sleep began is not waited for again (as a relative sleep computed before the move
   * would: its whole duration, in real time).
   */
  sleepUntil(deadlineMillis: number): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      if (!(deadlineMillis > this.unsafeCurrentTimeMillis())) return resume(Effect.void)
      const sleeper: Sleeper = { deadlineMillis, wake: () => resume(Effect.void), timer: undefined }
      this.#sleepers.add(sleeper)
      this.#arm(sleeper)
      return Effect.sync(() => this.#forget(sleeper))
    })
  }

  /**
   * Sets the offset so that the clock reads `instantMillis` now (Unix milliseconds) and wakes every sleep due by
   * then, earliest deadline first. A time at or before the clock's own is ignored: the clock never goes back.
   */
  moveTo(instantMillis: number): void {
    const offset = instantMillis - this.realTimeMillis()
    if (offset > this.#offsetMillis) this.setOffset(offset)
  }

  /**
   * Sets the offset (milliseconds) when it is larger than the current one, wakes the sleeps due by then and re-arms
   * the real timers of the others for what is now left of them.
   */
  setOffset(offsetMillis: number): void {
    if (!(offsetMillis > this.#offsetMillis)) return
    this.#offsetMillis = offsetMillis
    const now = this.unsafeCurrentTimeMillis()
    const due: Array<Sleeper> = []
    for (const sleeper of this.#sleepers) {
      if (sleeper.deadlineMillis <= now) {
        due.push(sleeper)
      } else {
        if (sleeper.timer !== undefined) clearTimeout(sleeper.timer)
        sleeper.timer = undefined
        this.#arm(sleeper)
      }
    }
    due.sort((left, right) => left.deadlineMillis - right.deadlineMillis)
    for (const sleeper of due) this.#wake(sleeper)
  }

  /** The earliest deadline of a sleeping fiber (Unix milliseconds of this clock), if any. */
  get nextDeadlineMillis(): number | undefined {
    let earliest: number | undefined
    for (const sleeper of this.#sleepers) {
      if (earliest === undefined || sleeper.deadlineMillis < earliest) earliest = sleeper.deadlineMillis
    }
    return earliest
  }

  /** Arms the real timer of `sleeper` for what is left of its sleep; a timer that fires early re-arms. */
  #arm(sleeper: Sleeper): void {
    const left = sleeper.deadlineMillis - this.unsafeCurrentTimeMillis()
    if (left <= 0) return this.#wake(sleeper)
    if (!Number.isFinite(left)) return
    sleeper.timer = setTimeout(() => {
      sleeper.timer = undefined
      if (this.#sleepers.has(sleeper)) this.#arm(sleeper)
    }, Math.min(left, maxTimerMillis))
  }

  #wake(sleeper: Sleeper): void {
    if (!this.#sleepers.has(sleeper)) return
    this.#forget(sleeper)
    sleeper.wake()
  }

  #forget(sleeper: Sleeper): void {
    this.#sleepers.delete(sleeper)
    if (sleeper.timer !== undefined) clearTimeout(sleeper.timer)
    sleeper.timer = undefined
  }
}

/**
 * Sleeps until the fiber's clock reads `instantMillis` (Unix milliseconds of that clock). On a {@link VirtualClock}
 * the deadline is the instant itself ({@link VirtualClock.sleepUntil}): a move of the clock between the caller reading
 * the time and the sleep beginning shortens the wait instead of being added to it. On any other clock, a sleep of what
 * is left at the moment it begins (none when the instant has passed).
 *
 * Source: docs/decisions/0007-virtual-clock.md.
 *
 * @since 0.1.0
 * @category Utils
 */
export const sleepUntil = (instantMillis: number): Effect.Effect<void> =>
  Effect.clockWith((clock) =>
    clock instanceof VirtualClock
      ? clock.sleepUntil(instantMillis)
      : Effect.suspend(() => {
        const left = instantMillis - clock.unsafeCurrentTimeMillis()
        return left > 0 ? clock.sleep(Duration.millis(left)) : Effect.void
      })
  )
