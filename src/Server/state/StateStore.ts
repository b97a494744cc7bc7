/**
 * Where the local service keeps its state: every repository (Repositories.ts), the idempotency keys
 * (Idempotency.ts), units of work (Transactions.ts), the work it owes (DurableWork.ts) and what snapshots read
 * beside the repositories (StateSnapshots.ts `SnapshotStore`), provided together by one layer. In memory by default
 * ({@link layerMemory}); durable in SQLite or PostgreSQL (state/sql/).
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { Context, Data, Layer } from "effect"
import * as ClockOffset from "../clock/ClockOffset.js"
import * as Idempotency from "../pipeline/Idempotency.js"
import type { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as DurableWork from "./DurableWork.js"
import * as Repositories from "./Repositories.js"
import * as MemoryRepositories from "./MemoryRepositories.js"
import * as MemorySnapshots from "./MemorySnapshots.js"
import type * as StateSnapshots from "./StateSnapshots.js"
import * as Transactions from "./Transactions.js"

/**
 * What the service knows about where its state is, for people: `description` as `serve` prints it.
 *
 * @since 0.1.0
 * @category Services
 */
export class StateLocation extends Context.Tag("boxkit/server/StateLocation")<StateLocation, {
  /** E.g. `in memory`, `SQLite /srv/boxkit/state.db`, `PostgreSQL 127.0.0.1:5432/boxkit`. */
  readonly description: string
  /** True when the state outlives the process. */
  readonly durable: boolean
  /** True when the store had no organization when the service started: the seed was applied. */
  readonly fresh: boolean
}>() {}

/** Every service a state store provides. @since 0.1.0 @category Models */
export type StateStore =
  | Repositories.Repositories
  | Idempotency.IdempotencyStore
  | Transactions.Transactions
  | DurableWork.DurableWork
  | StateLocation
  | StateSnapshots.SnapshotStore
  | ClockOffset.ClockOffset

/**
 * The store could not be opened or prepared (a locked or unreadable file, a database that refuses, a failed migration).
 *
 * @since 0.1.0
 * @category Errors
 */
export class StateStoreError extends Data.TaggedError("StateStoreError")<{ readonly message: string }> {}

/**
 * The whole state in memory (`repositories` in place of the in-memory repositories when given). The idempotency store
 * is given the repositories' output, so that remembered answers count in the stored bytes the in-memory
 * repositories check (MemoryRepositories.ts `MemoryStoredUsage`); the snapshot store (MemorySnapshots.ts) reads and
 * writes both.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory = (
  repositories: Layer.Layer<Repositories.Repositories> = MemoryRepositories.layerMemory
): Layer.Layer<StateStore, never, LocalServiceConfig> =>
  Layer.mergeAll(
    MemorySnapshots.layer.pipe(Layer.provideMerge(Idempotency.layerMemory), Layer.provideMerge(repositories)),
    Transactions.layerMemory,
    DurableWork.layerMemory,
    ClockOffset.layerMemory,
    Layer.succeed(StateLocation, { description: "in memory", durable: false, fresh: true })
  )
