/**
 * Admission of `/v1` requests (steps 1 and 5 of the request pipeline): whether the service is draining, every
 * request in flight (so a drain can wait for them), and the requests in flight per organization (the
 * new-organization cap).
 *
 * Source: spec "Errors" rule 2 (503 while unavailable); "Limits" (new organizations); docs/ASSUMPTIONS.md "Serving".
 *
 * @since 0.1.0
 */
import { Context, Deferred, Effect, Exit, Layer } from "effect"

/**
 * Admission state: draining, every `/v1` request in flight, and requests in flight per organization (for the
 * new-organization cap).
 */
export class Admission extends Context.Tag("boxkit/server/Admission")<Admission, {
  /** From now on new requests answer 503 with Retry-After; requests in flight finish. */
  readonly startDraining: Effect.Effect<void>
  readonly isDraining: Effect.Effect<boolean>
  /** Requests in flight now (every `/v1` request admitted past the draining check and not yet answered). */
  readonly inFlight: Effect.Effect<number>
  /** Completes when no request is in flight. */
  readonly awaitIdle: Effect.Effect<void>
  /**
   * Counts a request in, atomically with the draining check: false while draining (the request must not run).
   * Every `true` must be followed by one {@link end}. Synchronous, as the three below: these are this process's own
   * counts of its requests (never stored), taken when a request arrives and given back when it ends, outside any
   * fiber on the fast serving path.
   */
  readonly begin: () => boolean
  /** Counts a request out; completes {@link awaitIdle} waiters when none is left. */
  readonly end: () => void
  /**
   * Counts a request of `orgId` in: false when `limit` requests of the organization are already in flight (the
   * request must not run). Every `true` must be followed by one {@link leave}.
   */
  readonly enter: (orgId: string, limit: number) => boolean
  readonly leave: (orgId: string) => void
}>() {}

/** In-memory admission state. */
export const layer = Layer.sync(Admission, () => {
  let draining = false
  let total = 0
  const perOrganization = new Map<string, number>()
  let idle: Array<Deferred.Deferred<void>> = []
  return {
    startDraining: Effect.sync(() => {
      draining = true
    }),
    isDraining: Effect.sync(() => draining),
    inFlight: Effect.sync(() => total),
    awaitIdle: Effect.flatMap(Deferred.make<void>(), (deferred) =>
      Effect.suspend(() => {
        if (total === 0) return Effect.void
        idle.push(deferred)
        return Deferred.await(deferred)
      })),
    begin: () => {
      if (draining) return false
      total++
      return true
    },
    end: () => {
      total--
      if (total > 0 || idle.length === 0) return
      const waiting = idle
      idle = []
      for (const deferred of waiting) Deferred.unsafeDone(deferred, Exit.void)
    },
    enter: (orgId, limit) => {
      const current = perOrganization.get(orgId) ?? 0
      if (current >= limit) return false
      perOrganization.set(orgId, current + 1)
      return true
    },
    leave: (orgId) => {
      const current = perOrganization.get(orgId) ?? 1
      if (current <= 1) perOrganization.delete(orgId)
      else perOrganization.set(orgId, current - 1)
    }
  }
})
