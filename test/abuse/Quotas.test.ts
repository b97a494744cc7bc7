/**
 * Quotas per organization (docs/ASSUMPTIONS.md "Quotas (local service)"; src/Server/Quotas.ts), as a key holder who
 * creates without end would meet them: boxes not terminated, background responses in flight, stored bytes (clipboards
 * and response records). Each is a 429 `quota_exceeded_error` with the quota's code that changes nothing; freeing what
 * is held clears it; another organization is not affected; `/_local/state` shows the usage against the quotas.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"

const expectQuota = (answer: C.RawResponse, code: string) => {
  C.expectError(answer, 429, "quota_exceeded_error", { code })
  expect(answer.headers["retry-after"]).toBeUndefined()
}

const organization = (state: any, id: string) => state.organizations.find((entry: any) => entry.id === id)

describe.each(Harness.variants({ sqlite: true }))("quotas per organization ($name)", (variant) => {
  it.effect("boxes not terminated: the next create is refused and makes nothing; a termination frees a place", () =>
    C.withServiceOn(variant, { quotas: { boxes: 2, backgroundResponses: 1000, storedBytes: 1 << 30 } })(Effect.gen(function*() {
      const first = yield* C.createBox({ name: "q1" })
      yield* C.createBox({ name: "q2" })
      expectQuota(yield* C.post("/v1/boxes", C.boxBody({ name: "q3" })), "boxes")
      const state = yield* C.state
      expect(state.boxes.some((box: any) => box.name === "q3")).toBe(false)
      expect(organization(state, "org_acme").usage.boxes).toBe(2)
      expect(state.quotas.boxes).toBe(2)
      expect((yield* C.post(`/v1/boxes/${first}/terminate`, undefined)).status).toBe(200)
      expect((yield* C.post("/v1/boxes", C.boxBody({ name: "q3" }))).status).toBe(201)
    })))

  it.effect("boxes: the request's own checks come first; a refused create gives back the tcp address it took", () =>
    C.withServiceOn(variant, { quotas: { boxes: 1, backgroundResponses: 1000, storedBytes: 1 << 30 } })(Effect.gen(function*() {
      const first = yield* C.createBox({ name: "q1" })
      // Over the quota, a create that fails its own checks gets their answer (the quota is checked at the insert).
      C.expectError(yield* C.post("/v1/boxes", C.boxBody({ app_id: "app_missing" })), 404, "not_found_error")
      const tcp = { ingress_ports: [{ guest_port: 5432, protocol: "tcp" }] }
      expectQuota(yield* C.post("/v1/boxes", C.boxBody({ name: "q2", ...tcp })), "boxes")
      expect(organization(yield* C.state, "org_acme").usage.boxes).toBe(1)
      expect((yield* C.post(`/v1/boxes/${first}/terminate`, undefined)).status).toBe(200)
      // The address the refused create took is the one the next tcp listener gets, as if it had never been taken.
      const created = yield* C.post("/v1/boxes", C.boxBody({ name: "q2", ...tcp }))
      expect(created.status).toBe(201)
      const listeners = (yield* C.boxState(created.json.box_id)).listeners
      expect(listeners[0].address).toBe("tcp.boxes.localhost:20000")
    })))

  it.effect("stored bytes: a clipboard write or a response that would pass the quota is refused", () =>
    C.withServiceOn(variant, { quotas: { boxes: 1000, backgroundResponses: 1000, storedBytes: 64 * 1024 } })(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      const write = (bytes: number) =>
        C.request(`/v1/boxes/${boxId}/clipboard`, {
          method: "PUT",
          headers: C.auth("sk_acme_org", { "content-type": "text/plain" }),
          body: "x".repeat(bytes)
        })
      expect((yield* write(40 * 1024)).status).toBe(200)
      // Replacing the clipboard counts the new bytes, not both.
      expect((yield* write(60 * 1024)).status).toBe(200)
      expectQuota(yield* write(70 * 1024), "stored_bytes")
      expectQuota(yield* C.post("/v1/responses", { model: "boxkit-local", input: "y".repeat(10 * 1024) }), "stored_bytes")
      expect(organization(yield* C.state, "org_acme").usage.stored_bytes).toBe(60 * 1024)
      // Another organization has its own quota.
      expect((yield* C.post("/v1/responses", { model: "boxkit-local", input: "hello" }, "sk_ada_personal")).status).not.toBe(429)
    })))

  it.effect("stored bytes: over the quota, a clipboard write that frees bytes (empty or smaller) is never refused", () =>
    C.withServiceOn(variant, { quotas: { boxes: 1000, backgroundResponses: 1000, storedBytes: 64 * 1024 } })(Effect.gen(function*() {
      const small = yield* C.runningBox({ name: "small" })
      const large = yield* C.runningBox({ name: "large" })
      const write = (boxId: string, bytes: number) =>
        C.request(`/v1/boxes/${boxId}/clipboard`, {
          method: "PUT",
          headers: C.auth("sk_acme_org", { "content-type": "text/plain" }),
          body: "x".repeat(bytes)
        })
      expect((yield* write(small, 2 * 1024)).status).toBe(200)
      expect((yield* write(large, 58 * 1024)).status).toBe(200)
      // A response whose record fits when stored grows with its output: the organization is now over.
      const response = yield* C.post("/v1/responses", { model: "boxkit-local", input: "y".repeat(3000) })
      expect(response.status).toBe(200)
      const over = organization(yield* C.state, "org_acme").usage.stored_bytes
      expect(over).toBeGreaterThan(64 * 1024)
      // Growing a clipboard is refused; a smaller or an empty one frees bytes and is written.
      expectQuota(yield* write(small, 3 * 1024), "stored_bytes")
      expect((yield* write(small, 1024)).status).toBe(200)
      expect((yield* write(small, 0)).status).toBe(200)
      // The same size again neither grows nor frees: written too.
      expect((yield* write(small, 0)).status).toBe(200)
      expect((yield* C.boxState(small)).clipboard).toMatchObject({ bytes: 0 })
      expect(organization(yield* C.state, "org_acme").usage.stored_bytes).toBe(over - 2 * 1024)
    })))

  it.effect("background responses in flight: the next one is refused until one finishes", () =>
    C.withServiceOn(variant, { quotas: { boxes: 1000, backgroundResponses: 2, storedBytes: 1 << 30 } })(Effect.gen(function*() {
      // The background delay runs on the TestClock: accepted responses wait until it is moved.
      const background = () => C.post("/v1/responses", { model: "boxkit-local", input: "x", background: true })
      expect((yield* background()).status).toBe(202)
      expect((yield* background()).status).toBe(202)
      expectQuota(yield* background(), "background_responses")
      expect(organization(yield* C.state, "org_acme").usage.background_responses).toBe(2)
      yield* TestClock.adjust("1 second")
      yield* C.awaitState((state) => organization(state, "org_acme").usage.background_responses === 0)
      expect((yield* background()).status).toBe(202)
    })))
  it.effect("secrets, egress policies and apps: past each quota a new one is refused; replacing or finding is not", () =>
    C.withServiceOn(variant, { quotas: { boxes: 1000, backgroundResponses: 1000, storedBytes: 1 << 30, secrets: 3, egressPolicies: 2, apps: 3 } })(
      Effect.gen(function*() {
        const held = organization(yield* C.state, "org_acme").usage
        // The example seed may already hold some: fill each quota from there, sending the requests at once.
        const secrets = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, index) => index),
          (index) => C.post("/v1/secrets", { name: `QUOTA_${index}`, value: "v" }),
          { concurrency: "unbounded" }
        )
        expect(secrets.filter((answer) => answer.status === 201)).toHaveLength(3 - held.secrets)
        for (const answer of secrets.filter((answer) => answer.status !== 201)) expectQuota(answer, "secrets")
        const kept = secrets.findIndex((answer) => answer.status === 201)
        if (kept >= 0) expect((yield* C.post("/v1/secrets", { name: `QUOTA_${kept}`, value: "new" })).status).toBe(201)

        const policies = yield* Effect.forEach(
          Array.from({ length: 6 }, (_, index) => index),
          (index) => C.post("/v1/egress-policies", { name: `p${index}`, document: {} }),
          { concurrency: "unbounded" }
        )
        expect(policies.filter((answer) => answer.status === 201)).toHaveLength(2 - held.egress_policies)
        for (const answer of policies.filter((answer) => answer.status !== 201)) expectQuota(answer, "egress_policies")

        const apps = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, index) => index),
          (index) => C.post("/v1/apps/find", { name: `quota-app-${index}`, mint_if_missing: true }),
          { concurrency: "unbounded" }
        )
        const minted = apps.filter((answer) => answer.status === 200)
        expect(minted).toHaveLength(3 - held.apps)
        for (const answer of apps.filter((answer) => answer.status !== 200)) expectQuota(answer, "apps")
        if (minted.length > 0) {
          const again = yield* C.post("/v1/apps/find", { name: minted[0]!.json.name, mint_if_missing: true })
          expect(again.json.id).toBe(minted[0]!.json.id)
        }

        const state = yield* C.state
        expect(organization(state, "org_acme").usage).toMatchObject({ secrets: 3, egress_policies: 2, apps: 3 })
        expect(state.quotas).toMatchObject({ secrets: 3, egress_policies: 2, apps: 3 })
        // Another organization has its own quotas.
        expect((yield* C.post("/v1/secrets", { name: "QUOTA_0", value: "v" }, "sk_ada_personal")).status).not.toBe(429)
      })))

  it.effect("stored bytes: 12 clipboard writes of 8 KiB at once with a quota of 64 KiB store at most 64 KiB", () =>
    C.withServiceOn(variant, { quotas: { boxes: 1000, backgroundResponses: 1000, storedBytes: 64 * 1024 } })(Effect.gen(function*() {
      const boxIds = yield* Effect.forEach(Array.from({ length: 12 }, (_, index) => index), (index) =>
        C.runningBox({ name: `clip${index}` }))
      const answers = yield* Effect.forEach(boxIds, (boxId) =>
        C.request(`/v1/boxes/${boxId}/clipboard`, {
          method: "PUT",
          headers: C.auth("sk_acme_org", { "content-type": "text/plain" }),
          body: "x".repeat(8 * 1024)
        }), { concurrency: "unbounded" })
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(8)
      for (const answer of answers.filter((answer) => answer.status !== 200)) expectQuota(answer, "stored_bytes")
      expect(organization(yield* C.state, "org_acme").usage.stored_bytes).toBe(64 * 1024)
    })))
})