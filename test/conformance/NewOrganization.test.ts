/**
 * The in-flight cap of a new organization (spec: Limits "New organization"; Errors 429 and rule 1): for its first ten
 * minutes an organization may have only `newOrgInFlightCap` requests in flight at once (default 4); the excess gets
 * 429 rate_limit_error rate_limited with Retry-After and has no effect at all; the cap clears as requests finish and
 * after ten minutes (TestClock).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { defaults } from "../../src/Server/LocalServiceConfig.js"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

const newApp = "app_00000000-0000-4000-8000-0000000000aa"

const seed = C.seedWith({
  organizations: [{ id: "org_new" }],
  users: [{ id: "user_nina", org_id: "org_new" }],
  api_keys: [{ key: "sk_new_org", org_id: "org_new" }, { key: "sk_new_nina", org_id: "org_new", user_id: "user_nina" }],
  apps: [{ id: newApp, org_id: "org_new", name: "new" }]
})

const holdMany = (count: number, key: string, app = "new") =>
  Effect.gen(function*() {
    const held = yield* Effect.forEach(Array.from({ length: count }), () => C.hold("/v1/apps/find", { name: app }, key))
    yield* C.awaitState((current) => current.in_flight === count)
    return held
  })

const expectRateLimited = (response: C.RawResponse) => {
  C.expectError(response, 429, "rate_limit_error", { code: "rate_limited" })
  expect(response.headers["retry-after"]).toMatch(/^\d+$/)
}

/** Requests that would change state if they ran. */
const changingRequests = (key: string) => [
  C.post("/v1/boxes", C.boxBody({ app_id: newApp }), key, { "idempotency-key": "cap-key" }),
  C.post("/v1/secrets", { name: "NEW_SECRET", value: "v" }, key),
  C.post("/v1/egress-policies", { name: "p", document: {} }, key),
  C.post("/v1/apps/find", { name: "minted", mint_if_missing: true }, key)
]

describe.each(Harness.variants({ sqlite: true }))("new-organization in-flight cap ($name)", (variant) => {
  it.effect("the default cap is 4: the fifth request in flight gets 429 with Retry-After and has no effect", () =>
    C.withServiceOn(variant, {}, seed)(Effect.gen(function*() {
      expect(defaults.newOrgInFlightCap).toBe(4)
      const held = yield* holdMany(4, "sk_new_org")
      const before = yield* C.state
      for (const send of changingRequests("sk_new_org")) expectRateLimited(yield* send)
      // Every key of the organization shares its cap.
      expectRateLimited(yield* C.get("/v1/secrets/NEW_SECRET", "sk_new_nina"))
      expect({ ...(yield* C.state), in_flight: 0 }).toEqual({ ...before, in_flight: 0 })
      for (const request of held) expect((yield* request.finish).status).toBe(200)
    })))

  it.effect("the cap is configurable and clears as requests in flight finish", () =>
    C.withServiceOn(variant, { newOrgInFlightCap: 2 }, seed)(Effect.gen(function*() {
      const [first, second] = yield* holdMany(2, "sk_new_org")
      expectRateLimited(yield* C.post("/v1/boxes", C.boxBody({ app_id: newApp }), "sk_new_org"))
      expect((yield* first.finish).status).toBe(200)
      yield* C.awaitState((current) => current.in_flight === 1)
      expect((yield* C.post("/v1/boxes", C.boxBody({ app_id: newApp }), "sk_new_org")).status).toBe(201)
      expect((yield* second.finish).status).toBe(200)
    })))

  it.effect("the cap clears ten minutes after the organization was created (TestClock)", () =>
    C.withServiceOn(variant, { expiryCheckInterval: Duration.minutes(1) }, seed)(Effect.gen(function*() {
      const held = yield* holdMany(4, "sk_new_org")
      yield* TestClock.adjust("599 seconds")
      expectRateLimited(yield* C.get("/v1/secrets/NEW_SECRET", "sk_new_org"))
      yield* TestClock.adjust("1 second")
      const extra = yield* Effect.forEach(Array.from({ length: 3 }), () => C.hold("/v1/apps/find", { name: "new" }, "sk_new_org"))
      yield* C.awaitState((current) => current.in_flight === 7)
      expect((yield* C.post("/v1/boxes", C.boxBody({ app_id: newApp }), "sk_new_org")).status).toBe(201)
      for (const request of [...held, ...extra]) expect((yield* request.finish).status).toBe(200)
    })))

  it.effect("an organization older than ten minutes is not capped, and other organizations do not count", () =>
    C.withServiceOn(variant, {}, seed)(Effect.gen(function*() {
      const held = yield* holdMany(6, "sk_acme_org", "demo")
      expect((yield* C.get("/v1/secrets/GITHUB_TOKEN", "sk_acme_org")).status).toBe(200)
      // Six requests of org_acme in flight do not touch org_new's cap.
      expect((yield* C.post("/v1/apps/find", { name: "new" }, "sk_new_org")).status).toBe(200)
      for (const request of held) expect((yield* request.finish).status).toBe(200)
    })))
})
