/**
 * Units of work over the local service's state: `atomically` runs an effect so that its writes are kept all
 * together or not at all (a SQL transaction in a durable store; in memory every write is already immediate and a
 * crash loses everything, so it only runs the effect).
 *
 * Used where a crash between two writes would break a promise of the spec: a create-box answer and the box it made
 * are stored together (RequestPipeline.ts), and a finished response with its pending webhook (Completion.ts).
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"

/** Runs effects as one unit of work of the state store. */
export class Transactions extends Context.Tag("boxkit/server/Transactions")<Transactions, {
  /**
   * Runs `effect` so that the state writes it makes are kept together: all of them once it succeeds, none of them
   * when it fails or is interrupted. A store failure while committing is a defect (the request answers 500).
   */
  readonly atomically: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * True when the idempotency claim of an atomic request may be made in the request's own unit of work (one commit
   * per request instead of two): the store has one writer, so a concurrent use of the same key waits for the unit
   * to end and then finds the key settled (SQLite, one process per data directory). False where instances share the
   * store and a claim must be visible to the others while the request runs (PostgreSQL), and in memory.
   */
  readonly claimsInUnit: boolean
}>() {}

/** In memory: the effect as it is. */
export const layerMemory: Layer.Layer<Transactions> = Layer.succeed(Transactions, {
  atomically: (effect) => effect,
  claimsInUnit: false
})
