/**
 * Idempotency keys over real HTTP: a caller's non-ASCII key of exactly 255 UTF-8 bytes travels as its bytes and is
 * honoured by the service (the repeat is a replay); a key the client refuses never reaches the service.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AppId } from "../../src/Domain/Ids.js"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import * as Harness from "../support/Harness.js"

const appId = AppId.make("app_00000000-0000-4000-8000-000000000001")
const request = { name: "keyed", app_id: appId, image: { base: "debian" } } as const
const state = Effect.map(Harness.fetchRaw("/_local/state"), (response) => response.json)

describe.each(Harness.variants({ stockClient: true }))("idempotency keys over HTTP ($name)", (variant) => {
  it.live("a 255-byte non-ASCII key: the repeat of the call is replayed and one box exists", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const key = "ключ-" + "é".repeat(122) + "kk"
      expect(Buffer.byteLength(key, "utf8")).toBe(255)
      const first = yield* boxes.create(request, { idempotencyKey: key })
      const again = yield* boxes.create(request, { idempotencyKey: key })
      expect(first.replayed).toBe(false)
      expect(again.replayed).toBe(true)
      expect(again.idempotencyKey).toBe(key)
      expect(again.value.box_id).toBe(first.value.box_id)
      const after = yield* state
      expect(after.boxes).toHaveLength(1)
      expect(after.idempotency_keys).toBe(1)
      // A different body under the same key is a 409, not retried.
      const conflict = yield* Effect.flip(boxes.create({ ...request, name: "other" }, { idempotencyKey: key }))
      expect(conflict).toBeInstanceOf(ApiError.ConflictError)
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant))))

  it.live("a key over 255 bytes or blank is refused before any request", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      for (const key of ["é".repeat(128), " ", "tab\tinside"]) {
        const error = yield* Effect.flip(boxes.create(request, { idempotencyKey: key }))
        expect(error).toBeInstanceOf(ApiError.InvalidRequestError)
      }
      const after = yield* state
      expect(after.faults.requests).toBe(0)
      expect(after.boxes).toEqual([])
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant))))
})
