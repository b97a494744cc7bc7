/**
 * The compact in-memory state of the local service, for the memory budget of 100,000 idempotency keys (BENCHMARKS.md
 * section 5): remembered idempotent answers as one flat string per key, swept oldest first; the lifetime index of
 * boxes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option, TestClock } from "effect"
import * as Idempotency from "../../src/Server/pipeline/Idempotency.js"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import { storedBox as box } from "../support/Fixtures.js"

const answer: Idempotency.RememberedAnswer = {
  status: 201,
  headers: { "content-type": "application/json", "retry-after": "3" },
  body: Uint8Array.from({ length: 256 }, (_, index) => index)
}

const store = Idempotency.layerMemory.pipe(
  Layer.provide(LocalServiceConfig.layer({ idempotencyRetention: Duration.hours(24) }))
)

/** The API key `scope` of no organization. */
const holder = (scope: string): Idempotency.KeyHolder => ({ scope, orgId: null })

const settle = (scope: string, key: string, print: string, remembered = answer) =>
  Effect.flatMap(Idempotency.IdempotencyStore, (keys) =>
    Effect.flatMap(keys.claim(holder(scope), key, print), (claim) => {
      if (claim._tag !== "Started") return Effect.dieMessage(`expected Started, got ${claim._tag}`)
      return claim.settle(remembered)
    }))

describe("remembered answers", () => {
  it("are one flat string that gives back the status, the headers and every byte of the body", () => {
    const encoded = Idempotency.encodeSettled(1_700_000_000_123, "f1ngerprint/+=", answer)
    expect(typeof encoded).toBe("string")
    expect(Idempotency.settledExpiry(encoded)).toBe(1_700_000_000_123)
    expect(Idempotency.settledFingerprint(encoded)).toBe("f1ngerprint/+=")
    const decoded = Idempotency.decodeSettled(encoded)
    expect(decoded.status).toBe(201)
    expect(decoded.headers).toEqual(answer.headers)
    expect(Array.from(decoded.body)).toEqual(Array.from(answer.body))
  })

  it.effect("replay the same answer, refuse another fingerprint, and are kept per API key", () =>
    Effect.gen(function*() {
      const keys = yield* Idempotency.IdempotencyStore
      yield* settle("key-a", "k1", "print-1")
      const replay = yield* keys.claim(holder("key-a"), "k1", "print-1")
      expect(replay._tag).toBe("Replay")
      if (replay._tag === "Replay") expect(Array.from(replay.answer.body)).toEqual(Array.from(answer.body))
      expect((yield* keys.claim(holder("key-a"), "k1", "print-2"))._tag).toBe("Mismatch")
      expect((yield* keys.claim(holder("key-b"), "k1", "print-2"))._tag).toBe("Started")
      expect(yield* keys.size).toBe(2)
    }).pipe(Effect.provide(store)))

  it.effect("expire after the retention; the sweep drops expired keys oldest first and keeps running ones", () =>
    Effect.gen(function*() {
      const keys = yield* Idempotency.IdempotencyStore
      yield* settle("key-a", "old", "p")
      yield* TestClock.adjust(Duration.hours(12))
      yield* settle("key-a", "young", "p")
      const running = yield* keys.claim(holder("key-a"), "running", "p")
      expect(running._tag).toBe("Started")
      expect(yield* keys.size).toBe(3)
      yield* TestClock.adjust(Duration.hours(13))
      // 1,024 claims run the sweep once (each of these is a new key of another API key, released at once).
      for (let index = 0; index < 1024; index++) {
        const claim = yield* keys.claim(holder("key-c"), `k${index}`, "p")
        if (claim._tag === "Started") yield* claim.release
      }
      expect(yield* keys.size).toBe(2)
      expect((yield* keys.claim(holder("key-a"), "young", "p"))._tag).toBe("Replay")
      expect((yield* keys.claim(holder("key-a"), "running", "p"))._tag).toBe("InFlight")
      expect((yield* keys.claim(holder("key-a"), "old", "p"))._tag).toBe("Started")
    }).pipe(Effect.provide(store)))

  it.effect("a released key is forgotten; a second settle of a released claim records nothing", () =>
    Effect.gen(function*() {
      const keys = yield* Idempotency.IdempotencyStore
      const claim = yield* keys.claim(holder("key-a"), "k", "p")
      if (claim._tag !== "Started") return yield* Effect.dieMessage("expected Started")
      yield* claim.release
      yield* claim.settle(answer)
      expect(yield* keys.size).toBe(0)
      expect((yield* keys.claim(holder("key-a"), "k", "p"))._tag).toBe("Started")
    }).pipe(Effect.provide(store)))
})

describe("the lifetime index of boxes", () => {
  it.effect("lists exactly the boxes past their lifetime that are not terminated", () =>
    Effect.gen(function*() {
      const boxes = yield* Repositories.Boxes
      yield* boxes.insert(box("forever"))
      yield* boxes.insert(box("short", { maxLifetimeSeconds: 10 }))
      yield* boxes.insert(box("long", { maxLifetimeSeconds: 100 }))
      expect((yield* boxes.expired(9_999)).map((record) => record.id)).toEqual([])
      expect((yield* boxes.expired(10_000)).map((record) => record.id)).toEqual(["short"])
      expect((yield* boxes.expired(1_000_000)).map((record) => record.id).sort()).toEqual(["long", "short"])
      yield* boxes.update("short", (record) => ({ ...record, status: "terminated" }))
      expect((yield* boxes.expired(1_000_000)).map((record) => record.id)).toEqual(["long"])
      expect(Option.isSome(yield* boxes.get("short"))).toBe(true)
    }).pipe(Effect.provide(MemoryRepositories.boxesMemory)))
})
