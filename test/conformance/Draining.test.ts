/**
 * Draining (spec: Errors 503 and rule 2): once the service starts draining (`Admission.startDraining`, what
 * `boxkit serve` does on SIGTERM) new requests get 503 server_error with Retry-After, requests in flight finish, and
 * nothing acknowledged is lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as Admission from "../../src/Server/pipeline/Admission.js"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

describe.each(Harness.variants())("draining ($name)", (variant) => {
  it.effect("new requests get 503 with Retry-After while requests in flight finish and are kept", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const admission = yield* Admission.Admission
      const held = yield* C.hold("/v1/boxes", C.boxBody({ name: "in flight" }), "sk_acme_org", {
        "idempotency-key": "drain-key"
      })
      yield* C.awaitState((current) => current.in_flight === 1)
      yield* admission.startDraining
      const idle = yield* Effect.fork(admission.awaitIdle)
      const before = yield* C.state
      expect(before.draining).toBe(true)
      for (
        const send of [
          C.get("/v1/secrets/GITHUB_TOKEN"),
          C.post("/v1/boxes", C.boxBody()),
          C.post("/v1/apps/find", { name: "x", mint_if_missing: true }),
          C.get("/v1/secrets/GITHUB_TOKEN", "sk_unknown")
        ]
      ) {
        const response = yield* send
        C.expectError(response, 503, "server_error", { code: null })
        expect(response.headers["retry-after"]).toMatch(/^\d+$/)
      }
      expect(yield* C.state).toEqual(before)
      expect((yield* Fiber.poll(idle))._tag).toBe("None")
      const answered = yield* held.finish
      expect(answered.status).toBe(201)
      yield* Fiber.join(idle)
      const after = yield* C.state
      expect(after.in_flight).toBe(0)
      expect(after.boxes.map((box: any) => box.id)).toEqual([answered.json.box_id])
      expect(after.idempotency_keys).toBe(1)
    })))
})
