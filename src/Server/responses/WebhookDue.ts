/**
 * Where each webhook delivery of a service stands in time, for an advance of the virtual clock (clock/ServiceClock.ts):
 * the instant its next attempt is due (Unix milliseconds of the service's clock), or `running` while an attempt of it
 * is under way (due now). An advance steps the clock to the earliest due instant ({@link DueDeliveries.next}) and waits
 * ({@link DueDeliveries.settled}) until no delivery is running and none is due by then: the rounds due inside the
 * advance are really sent, in time order, before it answers. A delivery is forgotten when it is delivered or given up.
 *
 * Source: docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"

/**
 * The deliveries of one service by response id: each one's next due instant, or `running`.
 *
 * @since 0.1.0
 * @category Models
 */
export class DueDeliveries {
  readonly #entries = new Map<string, number | "running">()
  #listeners: Array<() => void> = []

  /** Delivery `responseId` has an attempt under way. */
  running(responseId: string): void {
    this.#set(responseId, "running")
  }

  /** Delivery `responseId`'s next attempt is due at `atMillis` (Unix milliseconds of the service's clock). */
  dueAt(responseId: string, atMillis: number): void {
    this.#set(responseId, atMillis)
  }

  /** Delivery `responseId` is delivered or given up. */
  forget(responseId: string): void {
    if (this.#entries.delete(responseId)) this.#changed()
  }

  /**
   * The earliest instant a delivery is due, if at or before `untilMillis`; the clock's time (`nowMillis`, at most
   * `untilMillis`) while an attempt is under way, so that an advance waits for it.
   */
  next(untilMillis: number, nowMillis: number): Option.Option<number> {
    let earliest: number | undefined
    for (const entry of this.#entries.values()) {
      const due = entry === "running" ? Math.min(nowMillis, untilMillis) : entry
      if (due <= untilMillis && (earliest === undefined || due < earliest)) earliest = due
    }
    return Option.fromNullable(earliest)
  }

  /** Completes once no delivery is running and none is due at or before `nowMillis`. */
  settled(nowMillis: number): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      const check = () => {
        if (!this.#busy(nowMillis)) {
          this.#listeners = this.#listeners.filter((listener) => listener !== check)
          resume(Effect.void)
        }
      }
      this.#listeners.push(check)
      check()
      return Effect.sync(() => {
        this.#listeners = this.#listeners.filter((listener) => listener !== check)
      })
    })
  }

  #busy(nowMillis: number): boolean {
    for (const entry of this.#entries.values()) if (entry === "running" || entry <= nowMillis) return true
    return false
  }

  #set(responseId: string, entry: number | "running"): void {
    this.#entries.set(responseId, entry)
    this.#changed()
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener()
  }
}
