/**
 * Where the virtual clock's offset is kept: part of the state store (StateStore.ts), so that a restart on a durable
 * store resumes the clock where it stood and instances sharing one database share it. In memory here; in SQL, the
 * `settings` row `clock_offset_millis` (state/sql/SqlClockOffset.ts).
 *
 * Source: docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option } from "effect"
import type { StoreError } from "../state/StoreError.js"

/**
 * The stored offset of the virtual clock, in milliseconds ahead of the real time: None until a first advance.
 * `raise` stores `offsetMillis` unless a larger one is stored already (an offset never goes back, even when two
 * instances advance at once) and returns the offset stored after it. Both fail with `StoreError` when a durable store
 * does.
 *
 * @since 0.1.0
 * @category Services
 */
export class ClockOffset extends Context.Tag("boxkit/server/ClockOffset")<ClockOffset, {
  readonly get: Effect.Effect<Option.Option<number>, StoreError>
  readonly raise: (offsetMillis: number) => Effect.Effect<number, StoreError>
}>() {}

/**
 * The offset in memory (the in-memory store: it lives as long as the process).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<ClockOffset> = Layer.sync(ClockOffset, () => {
  let stored = Option.none<number>()
  return {
    get: Effect.sync(() => stored),
    raise: (offsetMillis) =>
      Effect.sync(() => {
        const next = Math.max(offsetMillis, Option.getOrElse(stored, () => 0))
        stored = Option.some(next)
        return next
      })
  }
})
