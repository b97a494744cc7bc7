/**
 * Authentication, scopes, private boxes, the owner override and credits (spec: Authentication 1-7; Errors status
 * table 401, 402, 403; "DELETE .../listeners": only the creator publishes or unpublishes ports).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Routes from "../../src/Server/http/Routes.js"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

/** Routes of box, secret and egress-policy operations (they need an organization-scoped key). */
const organizationRoutes = Routes.routes.filter((route) => !/^(apps|responses)\./.test(route.name))

const override = (reason: string) => ({ "x-box-owner-override-reason": reason })

describe.each(Harness.variants({ sqlite: true }))("authentication ($name)", (variant) => {
  it.effect("every operation answers 401 authentication_error invalid_api_key to a missing, malformed or unknown key", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const before = yield* C.state
      const variants: ReadonlyArray<Record<string, string>> = [
        {},
        { authorization: "Basic c2tfYWNtZV9vcmc6" },
        { authorization: "Basic sk_acme_org" },
        { authorization: "Bearer" },
        { authorization: "Bearer " },
        { authorization: "Bearer sk_unknown" },
        { authorization: "Bearer sk_acme_org extra" },
        { authorization: "sk_acme_org" },
        { authorization: "Token sk_acme_org" }
      ]
      for (const route of Routes.routes) {
        for (const headers of variants) {
          const response = yield* C.sendRoute(route, headers)
          C.expectError(response, 401, "authentication_error", { code: "invalid_api_key", param: null })
        }
      }
      expect(yield* C.state).toEqual(before)
    })))

  it.effect("the bearer scheme name is case-insensitive (RFC 7235)", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const response = yield* C.request("/v1/secrets/GITHUB_TOKEN", { headers: { authorization: "bearer sk_acme_org" } })
      expect(response.status).toBe(200)
    })))

  it.effect("box, secret and egress-policy operations need an organization-scoped key: 403 permission_error", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.createBox()
      const before = yield* C.state
      for (const route of organizationRoutes) {
        const response = yield* C.sendRoute(route, { authorization: "Bearer sk_ada_personal" }, { box_id: boxId })
        C.expectError(response, 403, "permission_error", { code: null })
      }
      expect(yield* C.state).toEqual(before)
      // Apps are not box operations: the personal key acts in its user's organization.
      expect((yield* C.post("/v1/apps/find", { name: "demo" }, "sk_ada_personal")).status).toBe(200)
    })))

  it.effect("an organization without credits gets 402 billing_error credits_exhausted with billing_url everywhere", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const before = yield* C.state
      for (const route of Routes.routes) {
        const response = yield* C.sendRoute(route, { authorization: "Bearer sk_broke_org" })
        C.expectError(response, 402, "billing_error", { code: "credits_exhausted" })
        expect(response.json.error.billing_url).toMatch(/^https?:\/\//)
      }
      expect(yield* C.state).toEqual(before)
    })))
})

describe.each(Harness.variants({ sqlite: true }))("private boxes and the owner override ($name)", (variant) => {
  it.effect("creating a private box needs a user-scoped key", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const refused = yield* C.post("/v1/boxes", C.boxBody({ visibility: "private" }), "sk_acme_org")
      C.expectError(refused, 403, "permission_error", { message: /user-scoped/ })
      expect((yield* C.state).boxes).toHaveLength(0)
      expect((yield* C.post("/v1/boxes", C.boxBody({ visibility: "private" }), "sk_acme_bob")).status).toBe(201)
    })))

  it.effect("a private box is operable only by its creator; others get 403", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ visibility: "private" }, "sk_acme_bob")
      expect((yield* C.get(`/v1/boxes/${boxId}`, "sk_acme_bob")).status).toBe(200)
      for (const key of ["sk_acme_org", "sk_acme_ada"]) {
        C.expectError(yield* C.get(`/v1/boxes/${boxId}`, key), 403, "permission_error")
        C.expectError(yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, key), 403, "permission_error")
      }
      const before = yield* C.state
      for (const route of organizationRoutes.filter((route) => route.pathParameters.includes("box_id"))) {
        const response = yield* C.sendRoute(route, { authorization: "Bearer sk_acme_org" }, { box_id: boxId })
        C.expectError(response, 403, "permission_error")
      }
      expect(yield* C.state).toEqual(before)
      expect((yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, "sk_acme_bob")).json.status).toBe("paused")
    })))

  it.effect("an admin operates someone else's private box with X-Box-Owner-Override-Reason, each use audited", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ visibility: "private" }, "sk_acme_bob")
      const operations: ReadonlyArray<readonly [string, C.Send, string]> = [
        ["read", C.get(`/v1/boxes/${boxId}`, "sk_acme_ada", override("support ticket 1")), "support ticket 1"],
        ["pause", C.post(`/v1/boxes/${boxId}/pause`, undefined, "sk_acme_ada", override("pause it")), "pause it"],
        ["resume", C.post(`/v1/boxes/${boxId}/resume`, undefined, "sk_acme_ada", override("resume it")), "resume it"],
        ["sleep", C.post(`/v1/boxes/${boxId}/sleep`, undefined, "sk_acme_ada", override("sleep it")), "sleep it"],
        ["upgrade", C.post(`/v1/boxes/${boxId}/upgrade`, undefined, "sk_acme_ada", override("upgrade it")), "upgrade it"],
        [
          "resize an exec of",
          C.post(`/v1/boxes/${boxId}/exec/e1/resize`, { cols: 80, rows: 24 }, "sk_acme_ada", override("resize")),
          "resize"
        ],
        ["terminate", C.post(`/v1/boxes/${boxId}/terminate`, undefined, "sk_acme_ada", override("incident 42")), "incident 42"]
      ]
      for (const [operation, send, reason] of operations) {
        const response = yield* send
        expect(response.status, `${operation}: ${response.text}`).toBe(200)
        const log = (yield* C.state).audit_log
        expect(log.at(-1)).toMatchObject({ org_id: "org_acme", user_id: "user_ada", box_id: boxId, operation, reason })
      }
      expect((yield* C.state).audit_log).toHaveLength(operations.length)
      expect((yield* C.boxState(boxId)).status).toBe("terminated")
    })))

  it.effect("the clipboard write accepts the override too", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ visibility: "private" }, "sk_acme_bob")
      const response = yield* C.request(`/v1/boxes/${boxId}/clipboard`, {
        method: "PUT",
        headers: { authorization: "Bearer sk_acme_ada", "content-type": "text/plain", ...override("copy logs") },
        body: "hello"
      })
      expect(response.status).toBe(200)
      expect((yield* C.state).audit_log).toMatchObject([{ operation: "write the clipboard of", reason: "copy logs" }])
    })))

  it.effect("without the header, or with a blank reason, the admin is refused and nothing is logged", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ visibility: "private" }, "sk_acme_bob")
      C.expectError(yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, "sk_acme_ada"), 403, "permission_error", {
        message: /X-Box-Owner-Override-Reason/
      })
      C.expectError(
        yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, "sk_acme_ada", override("   ")),
        403,
        "permission_error"
      )
      expect((yield* C.boxState(boxId)).status).toBe("running")
      expect((yield* C.state).audit_log).toEqual([])
    })))

  it.effect("a key that is not an admin's cannot override, reason or not", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ visibility: "private" }, "sk_acme_ada")
      for (const key of ["sk_acme_bob", "sk_acme_org"]) {
        C.expectError(
          yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, key, override("please")),
          403,
          "permission_error"
        )
      }
      expect((yield* C.state).audit_log).toEqual([])
    })))

  it.effect("the reason must be printable ASCII: anything else is a 400 naming the header", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ visibility: "private" }, "sk_acme_bob")
      // Node hands header bytes over as latin1: "é" arrives as a non-ASCII character; a tab is a control character.
      for (const reason of ["tab\tinside", Buffer.from("café", "utf8").toString("latin1"), "\u00ff"]) {
        const response = yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, "sk_acme_ada", override(reason))
        C.expectError(response, 400, "invalid_request_error", {
          param: "x-box-owner-override-reason",
          message: /X-Box-Owner-Override-Reason/
        })
      }
      expect((yield* C.boxState(boxId)).status).toBe("running")
      expect((yield* C.state).audit_log).toEqual([])
    })))

  it.effect("the header is ignored where the caller could already operate: no audit entry", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const privateBox = yield* C.runningBox({ visibility: "private" }, "sk_acme_bob")
      const orgBox = yield* C.runningBox({}, "sk_acme_bob")
      expect((yield* C.post(`/v1/boxes/${privateBox}/pause`, undefined, "sk_acme_bob", override("mine"))).status)
        .toBe(200)
      expect((yield* C.post(`/v1/boxes/${orgBox}/pause`, undefined, "sk_acme_ada", override("org box"))).status)
        .toBe(200)
      expect((yield* C.post(`/v1/boxes/${orgBox}/resume`, undefined, "sk_acme_org", override("org key"))).status)
        .toBe(200)
      expect((yield* C.state).audit_log).toEqual([])
    })))

  it.effect("a refused operation is not audited even with a valid override", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.createBox({ visibility: "private" }, "sk_acme_bob")
      // Still creating: pausing is a 409, so the override was not used.
      C.expectError(
        yield* C.post(`/v1/boxes/${boxId}/pause`, undefined, "sk_acme_ada", override("too early")),
        409,
        "conflict_error"
      )
      expect((yield* C.state).audit_log).toEqual([])
    })))

  it.effect("publishing, unpublishing ports and custom domains stay with the creator: no admin override", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const privateBox = yield* C.runningBox({ visibility: "private", ingress_ports: [{ guest_port: 8080 }] }, "sk_acme_bob")
      const orgBox = yield* C.runningBox({ ingress_ports: [{ guest_port: 8080 }] }, "sk_acme_bob")
      const before = yield* C.state
      for (const boxId of [privateBox, orgBox]) {
        for (const key of ["sk_acme_ada", "sk_acme_org"]) {
          const headers = override("need the port")
          C.expectError(
            yield* C.post(`/v1/boxes/${boxId}/listeners`, { guest_port: 9000 }, key, headers),
            403,
            "permission_error"
          )
          C.expectError(
            yield* C.post(`/v1/boxes/${boxId}/listeners/8080/domains`, { hostname: "a.example.com" }, key, headers),
            403,
            "permission_error"
          )
          C.expectError(
            yield* C.request(`/v1/boxes/${boxId}/listeners/8080`, { method: "DELETE", headers: C.auth(key, headers) }),
            403,
            "permission_error",
            { message: /creator/ }
          )
        }
      }
      expect(yield* C.state).toEqual(before)
      const unpublished = yield* C.request(`/v1/boxes/${orgBox}/listeners/8080`, {
        method: "DELETE",
        headers: C.auth("sk_acme_bob")
      })
      expect(unpublished.json).toEqual({ box_id: orgBox, guest_port: 8080 })
    })))
})
