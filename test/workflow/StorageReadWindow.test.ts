/**
 * The read window of the SQLite runner's message storage (src/Workflow/StorageReadWindow.ts;
 * docs/decisions/0004-durable-orchestration.md "Storage reads"): a read of unprocessed messages starts once the window
 * has passed, on the clock of the fiber (TestClock here), and reads what the storage holds then; the storage's other
 * methods are its own.
 */
import * as MessageStorage from "@effect/cluster/MessageStorage"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import * as StorageReadWindow from "../../src/Workflow/StorageReadWindow.js"

/** The no-op storage of `@effect/cluster`, counting its reads of unprocessed messages. */
const countingReads = () => {
  const reads: Array<ReadonlyArray<string>> = []
  const storage = MessageStorage.MessageStorage.of({
    ...MessageStorage.noop,
    unprocessedMessages: (shardIds) =>
      Effect.sync(() => {
        reads.push([...shardIds].map(String))
        return []
      })
  })
  return { reads, storage }
}

describe("the storage read window", () => {
  it.effect("starts a read of unprocessed messages once the window has passed, and only then", () =>
    Effect.gen(function*() {
      const { reads, storage } = countingReads()
      const windowed = StorageReadWindow.delayReads(storage, StorageReadWindow.defaultWindow)
      const read = yield* Effect.fork(windowed.unprocessedMessages([]))
      yield* TestClock.adjust(Duration.subtract(StorageReadWindow.defaultWindow, Duration.millis(1)))
      expect(reads).toHaveLength(0)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Fiber.join(read)).toEqual([])
      expect(reads).toHaveLength(1)
    }))

  it.effect("leaves the storage's other methods as they are", () =>
    Effect.sync(() => {
      const { storage } = countingReads()
      const windowed = StorageReadWindow.delayReads(storage, StorageReadWindow.defaultWindow)
      expect(windowed.saveRequest).toBe(storage.saveRequest)
      expect(windowed.unprocessedMessagesById).toBe(storage.unprocessedMessagesById)
      expect(windowed.registerReplyHandler).toBe(storage.registerReplyHandler)
      expect(windowed.unprocessedMessages).not.toBe(storage.unprocessedMessages)
    }))
})
