/**
 * Work the local service owes after it answered, kept in the state store so that a restart (or another instance on
 * the same database) finishes it: background model responses accepted and not yet finished, and completion webhooks
 * not yet delivered, with where their retry rounds stand.
 *
 * In memory nothing is kept (a restart loses the state anyway) and `claim*` find nothing. In a durable store
 * (state/sql/SqlWork.ts) each piece of work belongs to the instance that made it; when that instance is gone (a
 * restart, or its heartbeat stopped), the next `claim*` of a live instance takes it over (the services look every
 * `LocalServiceConfig.recoveryInterval`).
 *
 * Source: docs/ASSUMPTIONS.md "Durable state"; spec "Events / Completion webhook" rule 5 (the rounds).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { Prepared } from "../responses/ResponseRequest.js"
import type { StoreError } from "./StoreError.js"

/** A background response accepted and not finished: its id, organization, request and earliest start (Unix ms). */
export interface StoredJob {
  readonly responseId: string
  readonly orgId: string
  readonly prepared: Prepared
  readonly notBeforeMillis: number
}

/**
 * Where a webhook delivery stands: the 1-based `round`, the 1-based `attempt` of the next request within it, and when
 * that round starts (Unix ms; in the future while waiting between rounds).
 */
export interface StoredPosition {
  readonly round: number
  readonly attempt: number
  readonly roundStartedAtMillis: number
}

/** A completion webhook not yet delivered: its response, URL, JSON body and the position of its next attempt. */
export interface StoredDelivery {
  readonly responseId: string
  readonly url: string
  readonly body: unknown
  readonly position: StoredPosition
}

/** The work store; a durable one fails with `StoreError` (StoreError.ts) when its database fails. */
export class DurableWork extends Context.Tag("boxkit/server/DurableWork")<DurableWork, {
  /** True when work survives a restart: the service then leaves unfinished work to be resumed instead of cancelling it. */
  readonly resumable: boolean
  readonly addJob: (job: StoredJob) => Effect.Effect<void, StoreError>
  readonly finishJob: (responseId: string) => Effect.Effect<void, StoreError>
  readonly addDelivery: (delivery: StoredDelivery) => Effect.Effect<void, StoreError>
  /** Records the position of the next attempt after a failed one. */
  readonly progressDelivery: (responseId: string, position: StoredPosition) => Effect.Effect<void, StoreError>
  /** The delivery succeeded or was given up after its last round. */
  readonly finishDelivery: (responseId: string) => Effect.Effect<void, StoreError>
  /** Takes over the jobs whose owner is gone; this instance now runs them. */
  readonly claimJobs: Effect.Effect<ReadonlyArray<StoredJob>, StoreError>
  /** Takes over the deliveries whose owner is gone; this instance now makes their next attempts. */
  readonly claimDeliveries: Effect.Effect<ReadonlyArray<StoredDelivery>, StoreError>
}>() {}

/** In memory: nothing is kept, nothing is ever found to take over. */
export const layerMemory: Layer.Layer<DurableWork> = Layer.succeed(DurableWork, {
  resumable: false,
  addJob: () => Effect.void,
  finishJob: () => Effect.void,
  addDelivery: () => Effect.void,
  progressDelivery: () => Effect.void,
  finishDelivery: () => Effect.void,
  claimJobs: Effect.succeed([]),
  claimDeliveries: Effect.succeed([])
})
