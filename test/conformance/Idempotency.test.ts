/**
 * Idempotency over HTTP (spec: Limits / Idempotency rules; Errors rules 3-4; Create a box; upgrade): replay with
 * `Idempotent-Replayed: true` (including a remembered 400 or 409), 409 for a reused key, the 255-byte limit, blank
 * keys ignored, keys scoped to the API key, at least 24 hours of memory (TestClock), the in-flight answer, and
 * concurrent first requests that never both execute.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, TestClock } from "effect"
import * as ClientIdempotencyKey from "../../src/Client/IdempotencyKey.js"
import * as IdempotencyKey from "../../src/Contract/IdempotencyKey.js"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

const createWithKey = (key: string, body: unknown = C.boxBody(), apiKey = "sk_acme_org") =>
  C.post("/v1/boxes", body, apiKey, { "idempotency-key": key })

const raiseRuntime = (version: number) =>
  C.request("/_local/runtime", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ guest_schema_version: version })
  })

/** Advances the TestClock in `step`s until `fiber` is done (real time given to I/O between steps). */
const adjustUntilDone = <A, E>(fiber: Fiber.Fiber<A, E>, step: Duration.DurationInput = "200 millis") =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      yield* TestClock.adjust(step)
      const done = yield* Fiber.poll(fiber)
      if (done._tag === "Some") return yield* Fiber.join(fiber)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
    }
    return yield* Effect.dieMessage("fiber did not finish")
  })

describe.each(Harness.variants({ sqlite: true }))("idempotency ($name)", (variant) => {
  it.effect("a retry with the same key, method, path and body gets the remembered answer, marked replayed", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const first = yield* createWithKey("key-replay")
      expect(first.status).toBe(201)
      expect(first.headers["idempotent-replayed"]).toBeUndefined()
      const again = yield* createWithKey("key-replay")
      expect(again.status).toBe(201)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(again.headers["content-type"]).toBe(first.headers["content-type"])
      expect(again.text).toBe(first.text)
      expect((yield* C.state).boxes).toHaveLength(1)
    })))

  it.effect("a remembered 400 is replayed with Idempotent-Replayed: true and changes nothing", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const before = yield* C.state
      const body = C.boxBody({ size: "s", memory_limit_gib: 65 })
      const first = yield* createWithKey("key-400", body)
      C.expectError(first, 400, "invalid_request_error", { param: "memory_limit_gib" })
      const again = yield* createWithKey("key-400", body)
      expect(again.status).toBe(400)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(again.text).toBe(first.text)
      const after = yield* C.state
      expect(after.boxes).toEqual(before.boxes)
    })))

  it.effect("a remembered 409 is replayed with Idempotent-Replayed: true", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      const terminated = yield* C.post(`/v1/boxes/${boxId}/terminate`, undefined)
      expect(terminated.status).toBe(200)
      expect((yield* raiseRuntime(2)).status).toBe(200)
      const first = yield* C.post(`/v1/boxes/${boxId}/upgrade`, undefined, "sk_acme_org", { "idempotency-key": "k409" })
      C.expectError(first, 409, "conflict_error")
      const again = yield* C.post(`/v1/boxes/${boxId}/upgrade`, undefined, "sk_acme_org", { "idempotency-key": "k409" })
      expect(again.status).toBe(409)
      expect(again.headers["idempotent-replayed"]).toBe("true")
      expect(again.text).toBe(first.text)
    })))

  it.effect("the same key with a different body (byte for byte) or path gets 409 conflict_error", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      expect((yield* createWithKey("key-reuse", C.boxBody({ name: "a" }))).status).toBe(201)
      C.expectError(yield* createWithKey("key-reuse", C.boxBody({ name: "b" })), 409, "conflict_error")
      // Byte for byte: the same JSON with other spacing is a different body.
      const spaced = yield* C.request("/v1/boxes", {
        method: "POST",
        headers: C.auth("sk_acme_org", { "idempotency-key": "key-reuse" }),
        body: JSON.stringify(C.boxBody({ name: "a" }), null, 2)
      })
      C.expectError(spaced, 409, "conflict_error")
      const boxId = (yield* C.state).boxes[0].id
      const otherPath = yield* C.post(`/v1/boxes/${boxId}/upgrade`, undefined, "sk_acme_org", {
        "idempotency-key": "key-reuse"
      })
      C.expectError(otherPath, 409, "conflict_error")
      expect((yield* C.state).boxes).toHaveLength(1)
    })))

  it.effect("upgrade: the same key for another box (another path) gets 409 conflict_error", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const first = yield* C.createBox()
      const second = yield* C.createBox()
      const upgrade = (boxId: string) =>
        C.post(`/v1/boxes/${boxId}/upgrade`, undefined, "sk_acme_org", { "idempotency-key": "upgrade-key" })
      expect((yield* upgrade(first)).status).toBe(200)
      C.expectError(yield* upgrade(second), 409, "conflict_error", { param: "Idempotency-Key" })
      expect((yield* upgrade(first)).headers["idempotent-replayed"]).toBe("true")
    })))

  it.effect("a key of more than 255 UTF-8 bytes is a 400 naming the header; 255 bytes are accepted", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      // Node sends header values as latin1: build the UTF-8 bytes of the key and send them as a binary string.
      const asHeader = (key: string) => Buffer.from(key, "utf8").toString("latin1")
      const ascii256 = yield* createWithKey("k".repeat(256))
      C.expectError(ascii256, 400, "invalid_request_error", { param: "Idempotency-Key", message: /Idempotency-Key/ })
      // 128 x "é" is 128 characters but 256 bytes.
      const accented = yield* createWithKey(asHeader("é".repeat(128)))
      C.expectError(accented, 400, "invalid_request_error", { param: "Idempotency-Key" })
      expect((yield* C.state).boxes).toHaveLength(0)
      expect((yield* createWithKey("k".repeat(255))).status).toBe(201)
      expect((yield* createWithKey(asHeader("é".repeat(127) + "k"))).status).toBe(201)
      const replay = yield* createWithKey(asHeader("é".repeat(127) + "k"))
      expect(replay.headers["idempotent-replayed"]).toBe("true")
      expect((yield* C.state).boxes).toHaveLength(2)
    })))

  it.effect("a blank or whitespace-only key is ignored: the request runs without idempotency", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const key of ["", "   ", "\t"]) {
        const first = yield* createWithKey(key)
        const second = yield* createWithKey(key)
        expect([first.status, second.status]).toEqual([201, 201])
        expect(second.headers["idempotent-replayed"]).toBeUndefined()
        expect(second.json.box_id).not.toBe(first.json.box_id)
      }
      expect((yield* C.state).boxes).toHaveLength(6)
      expect((yield* C.state).idempotency_keys).toBe(0)
    })))

  it.effect("a key of Unicode white space only (sent as its UTF-8 bytes) is blank too: ignored, as the client judges it", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const keys = ["\u00a0", "\u3000", " \u2003\u2003 ", "\ufeff"]
      for (const key of keys) {
        // The client refuses to send it, as it refuses every blank key (the service would ignore it).
        expect(Exit.isFailure(yield* Effect.exit(ClientIdempotencyKey.validate(key)))).toBe(true)
        const first = yield* createWithKey(IdempotencyKey.toHeaderValue(key))
        const second = yield* createWithKey(IdempotencyKey.toHeaderValue(key))
        expect([first.status, second.status]).toEqual([201, 201])
        expect(second.headers["idempotent-replayed"]).toBeUndefined()
        expect(second.json.box_id).not.toBe(first.json.box_id)
      }
      expect((yield* C.state).boxes).toHaveLength(2 * keys.length)
      expect((yield* C.state).idempotency_keys).toBe(0)
    })))

  it.effect("keys are scoped to the sending API key", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const byOrgKey = yield* createWithKey("shared-key", C.boxBody(), "sk_acme_org")
      const byAda = yield* createWithKey("shared-key", C.boxBody(), "sk_acme_ada")
      expect([byOrgKey.status, byAda.status]).toEqual([201, 201])
      expect(byAda.headers["idempotent-replayed"]).toBeUndefined()
      expect(byAda.json.box_id).not.toBe(byOrgKey.json.box_id)
      // A different body under the other API key is not a conflict either.
      expect((yield* createWithKey("shared-key", C.boxBody({ name: "other" }), "sk_acme_bob")).status).toBe(201)
      expect((yield* C.state).boxes).toHaveLength(3)
    })))

  it.effect("an answer is remembered for at least 24 hours (TestClock)", () =>
    // A lifetime check, a sweep (and, with a durable store, a look for unfinished work and a heartbeat) every hour
    // keeps a day of TestClock adjustment cheap.
    C.withServiceOn(variant, {
      expiryCheckInterval: Duration.hours(1),
      sweepInterval: Duration.hours(1),
      recoveryInterval: Duration.hours(1),
      instanceTimeout: Duration.hours(4)
    })(Effect.gen(function*() {
      const first = yield* createWithKey("key-24h")
      yield* TestClock.adjust("86399999 millis")
      const nearlyADayLater = yield* createWithKey("key-24h")
      expect(nearlyADayLater.headers["idempotent-replayed"]).toBe("true")
      expect(nearlyADayLater.json.box_id).toBe(first.json.box_id)
      // The configured retention is exactly 24 hours: past it the key is forgotten and the request runs again.
      yield* TestClock.adjust("2 millis")
      const later = yield* createWithKey("key-24h")
      expect(later.status).toBe(201)
      expect(later.headers["idempotent-replayed"]).toBeUndefined()
      expect(later.json.box_id).not.toBe(first.json.box_id)
    })))

  it.effect("a duplicate arriving while the first is still running gets 409 server_error idempotent_request_in_flight", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      expect((yield* raiseRuntime(2)).status).toBe(200)
      const upgrade = C.post(`/v1/boxes/${boxId}/upgrade`, undefined, "sk_acme_org", { "idempotency-key": "k-flight" })
      // The upgrade of a running box restarts it, which takes the boot delay (frozen by the TestClock).
      const first = yield* Effect.fork(upgrade)
      yield* C.awaitState((current) => current.boxes[0].guest_schema_version === 2)
      const duplicate = yield* upgrade
      C.expectError(duplicate, 409, "server_error", { code: "idempotent_request_in_flight" })
      expect(duplicate.headers["retry-after"]).toBe("1")
      const answered = yield* adjustUntilDone(first)
      expect(answered.status).toBe(200)
      expect(answered.json).toMatchObject({ box_id: boxId, applied: true, guest_schema_version: 2 })
      const replay = yield* upgrade
      expect(replay.headers["idempotent-replayed"]).toBe("true")
      expect(replay.text).toBe(answered.text)
      expect((yield* C.boxState(boxId)).boot_count).toBe(2)
    })))

  it.effect("concurrent first requests with one key never both execute", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const answers = yield* Effect.all(Array.from({ length: 25 }, () => createWithKey("key-race")), {
        concurrency: "unbounded"
      })
      const created = answers.filter((answer) => answer.status === 201)
      for (const answer of answers) {
        if (answer.status === 201) continue
        C.expectError(answer, 409, "server_error", { code: "idempotent_request_in_flight" })
      }
      expect(created.length).toBeGreaterThanOrEqual(1)
      expect(new Set(created.map((answer) => answer.json.box_id)).size).toBe(1)
      expect(created.filter((answer) => answer.headers["idempotent-replayed"] === undefined)).toHaveLength(1)
      expect((yield* C.state).boxes).toHaveLength(1)
    })))

  it.effect("a 429 from the new-organization cap never started: the same key may be reused", () =>
    C.withServiceOn(variant, { newOrgInFlightCap: 1 }, C.seedWith({
      organizations: [{ id: "org_new" }],
      api_keys: [{ key: "sk_new_org", org_id: "org_new" }],
      apps: [{ id: "app_00000000-0000-4000-8000-0000000000aa", org_id: "org_new", name: "new" }]
    }))(Effect.gen(function*() {
      const body = C.boxBody({ app_id: "app_00000000-0000-4000-8000-0000000000aa" })
      const held = yield* C.hold("/v1/apps/find", { name: "new" }, "sk_new_org")
      yield* C.awaitState((current) => current.in_flight === 1)
      C.expectError(yield* createWithKey("k429", body, "sk_new_org"), 429, "rate_limit_error", { code: "rate_limited" })
      expect((yield* held.finish).status).toBe(200)
      const retried = yield* createWithKey("k429", body, "sk_new_org")
      expect(retried.status).toBe(201)
      expect(retried.headers["idempotent-replayed"]).toBeUndefined()
    })))
})
