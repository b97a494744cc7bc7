/**
 * The cluster's message storage with a short window before each read of unprocessed messages, so that the messages
 * of many workflows are read together.
 *
 * `@effect/cluster`'s `Sharding` reads its shards' unprocessed messages from storage every time a local message is
 * sent (each workflow step, each activity's result), in one loop: a read waits for the one before it. On SQLite a
 * read is a statement the cluster writes anew each time (its shard list and the current time are literals in the
 * text), prepared and planned for each read. Without a window, a runner at concurrency 32 reads once per message
 * sent; with a window of {@link defaultWindow}, a read waits that long first and takes what the steps of the other
 * workflows sent meanwhile. Every message is still read: one sent during a read opens the loop again.
 *
 * Built from `@effect/cluster`'s public layers (`MessageStorage.MessageStorage`, `SqlMessageStorage.layer`): the
 * storage is the stock one, only its `unprocessedMessages` starts later.
 *
 * Source: docs/decisions/0004-durable-orchestration.md ("Storage reads").
 *
 * @since 0.1.0
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import { Duration, Effect, Layer } from "effect"

/**
 * How long a read of unprocessed messages waits before it runs: 10 ms. A step of a workflow waits at most that much
 * longer for its message to be read; the runner reads storage at most about a hundred times a second
 * (BENCHMARKS.md section 8 has the effect on `boxkit orchestrate`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultWindow: Duration.Duration = Duration.millis(10)

/**
 * `storage` whose `unprocessedMessages` waits `window` before it reads; every other method is the storage's own.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const delayReads = (
  storage: MessageStorage.MessageStorage["Type"],
  window: Duration.DurationInput
): MessageStorage.MessageStorage["Type"] => {
  const wait = Effect.sleep(window)
  return MessageStorage.MessageStorage.of({
    ...storage,
    unprocessedMessages: (shardIds) => Effect.zipRight(wait, storage.unprocessedMessages(shardIds))
  })
}

/**
 * The SQL message storage of `@effect/cluster` (`SqlMessageStorage.layer`, over the `SqlClient` in context) with
 * reads of unprocessed messages delayed by `window` (default {@link defaultWindow}). Fails with the storage's
 * `SqlError` when its tables cannot be created.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSql = (window: Duration.DurationInput = defaultWindow) =>
  Layer.effect(MessageStorage.MessageStorage, Effect.map(MessageStorage.MessageStorage, (storage) => delayReads(storage, window)))
    .pipe(Layer.provide(SqlMessageStorage.layer))
