/**
 * The time rules of the spec reached through the virtual clock (docs/ASSUMPTIONS.md "The virtual clock"), on both
 * serving paths and every store, each in well under a second of real time:
 *
 * - a finished result expires 10 minutes after its first successful delivery (spec "Events / Completion webhook"
 *   rule 7): read at 9 minutes, 404 at 10;
 * - an Idempotency-Key is remembered 24 hours (spec "Idempotency"): replayed a minute before, a new request after;
 * - a new organization is capped for its first ten minutes (spec Limits "New organization"): capped at 8, not at 10.
 *
 * The clock runs at real speed between advances, so each check keeps a margin of a minute or more from its boundary:
 * the real seconds a loaded machine takes between two requests never cross it.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as C from "../conformance/support/Conformance.js"
import * as SuiteLayer from "../support/SuiteLayer.js"
import * as Clocked from "./Clocked.js"

const newApp = "app_00000000-0000-4000-8000-0000000000aa"

/** The demo seed with an organization created when the service starts (new for ten minutes). */
const seed = C.seedWith({
  organizations: [{ id: "org_new" }],
  api_keys: [{ key: "sk_new_org", org_id: "org_new" }],
  apps: [{ id: newApp, org_id: "org_new", name: "new" }]
})

const createResponse = (input: string) =>
  Effect.map(Clocked.request("/v1/responses", { body: { model: "boxkit-local", input } }), (answer) => {
    expect(answer.status).toBe(200)
    expect(answer.json.status).toBe("completed")
    return answer.json.id as string
  })

const createWithKey = (key: string, name: string) =>
  Clocked.request("/v1/boxes", {
    body: { name, app_id: Clocked.appId, image: { base: "debian" } },
    headers: { "idempotency-key": key }
  })

for (const server of Clocked.servers) {
  for (const store of Clocked.stores) {
    SuiteLayer.layer(Clocked.service(server, store), { excludeTestServices: true, timeout: "60 seconds" })(
      `time rules through the clock (${server}, ${store})`,
      (it) => {
        it.effect("a finished result answered on its request expires 10 minutes after it", () =>
          Effect.gen(function*() {
            const id = yield* createResponse("retained for ten minutes")
            yield* Clocked.advance(540)
            expect((yield* Clocked.request(`/v1/responses/${id}`)).status).toBe(200)
            yield* Clocked.advance(60)
            const expired = yield* Clocked.request(`/v1/responses/${id}`)
            expect(expired.status).toBe(404)
            expect(expired.json.error.type).toBe("not_found_error")
            // The sweep run at the end of the advance forgot it.
            expect((yield* Clocked.state).responses.some((response: { id: string }) => response.id === id)).toBe(false)
          }))

        it.effect("an Idempotency-Key is replayed for 24 hours, then a request with it is new", () =>
          Effect.gen(function*() {
            const first = yield* createWithKey("clock-key", "remembered")
            expect(first.status).toBe(201)
            yield* Clocked.advance(24 * 3600 - 60)
            const replay = yield* createWithKey("clock-key", "remembered")
            expect(replay.headers.get("idempotent-replayed")).toBe("true")
            expect(replay.json.box_id).toBe(first.json.box_id)
            yield* Clocked.advance(60)
            const fresh = yield* createWithKey("clock-key", "remembered")
            expect(fresh.status).toBe(201)
            expect(fresh.headers.get("idempotent-replayed")).toBeNull()
            expect(fresh.json.box_id).not.toBe(first.json.box_id)
          }))
      }
    )
  }
}

// A service of its own: the organization is new only for the first ten minutes of this service's clock.
for (const server of Clocked.servers) {
  for (const store of Clocked.stores) {
    SuiteLayer.layer(Clocked.service(server, store, {}, seed), { excludeTestServices: true, timeout: "60 seconds" })(
      `the new-organization window through the clock (${server}, ${store})`,
      (it) => {
        it.effect("a new organization is capped for ten minutes of the service's clock, then not", () =>
          Effect.gen(function*() {
            const held = yield* Effect.forEach(Array.from({ length: 4 }), () =>
              C.hold("/v1/apps/find", { name: "new" }, "sk_new_org"))
            yield* C.awaitState((current) => current.in_flight === 4)
            yield* Clocked.advance(480)
            const capped = yield* C.post("/v1/apps/find", { name: "new" }, "sk_new_org")
            expect(capped.status).toBe(429)
            expect(capped.json.error.code).toBe("rate_limited")
            yield* Clocked.advance(120)
            expect((yield* C.post("/v1/apps/find", { name: "new" }, "sk_new_org")).status).toBe(200)
            for (const request of held) expect((yield* request.finish).status).toBe(200)
          }))
      }
    )
  }
}
