/**
 * Per-call retry settings: the overrides a fiber runs with ({@link withRetry}), and how a call's settings are worked
 * out from `BoxkitConfig.retry`, those overrides and the call's own.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (retries).
 *
 * @since 0.1.0
 */
import { Effect, FiberRef } from "effect"
import { dual } from "effect/Function"
import { globalValue } from "effect/GlobalValue"
import { mergeRetry, type RetrySettings } from "./BoxkitConfig.js"

/**
 * Per-call retry overrides in effect for the current fiber, set by {@link withRetry}. Empty by default.
 *
 * @since 0.1.0
 * @category Fiber refs
 */
export const currentRetryOverrides: FiberRef.FiberRef<Partial<RetrySettings>> = globalValue(
  Symbol.for("boxkit/Transport/currentRetryOverrides"),
  () => FiberRef.unsafeMake<Partial<RetrySettings>>({})
)

/**
 * Runs `self` (any client call, or a whole workflow of calls) with `overrides` on top of `BoxkitConfig.retry`, e.g.
 * `boxes.create(request).pipe(Transport.withRetry({ maxAttempts: 1 }))` or
 * `Transport.withRetry({ deadline: Duration.seconds(5) })(workflow)`. Nested uses combine, the inner winning; the
 * `retry` option of a service method wins over both.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withRetry: {
  (overrides: Partial<RetrySettings>): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: Partial<RetrySettings>): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: Partial<RetrySettings>): Effect.Effect<A, E, R> =>
    Effect.locallyWith(self, currentRetryOverrides, (current) => ({ ...current, ...overrides }))
)

/**
 * The retry settings of a call: `BoxkitConfig.retry`, then {@link withRetry}'s overrides, then `overrides`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const resolveRetry = (base: RetrySettings, overrides?: Partial<RetrySettings>) =>
  Effect.map(FiberRef.get(currentRetryOverrides), (local) => mergeRetry(base, local, overrides))

/**
 * The retry overrides in effect when none were set (the FiberRef's initial value): a call whose fiber has these and
 * no `retry` option of its own uses `BoxkitConfig.retry` as it is.
 *
 * @since 0.1.0
 * @category Fiber refs
 */
export const noOverrides: Partial<RetrySettings> = FiberRef.get(currentRetryOverrides).pipe(Effect.runSync)
