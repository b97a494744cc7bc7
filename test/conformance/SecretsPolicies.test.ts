/**
 * Secrets and egress policies (spec: Secret "The value is never returned"; "Secrets ... A stored value is never
 * returned"; Egress policy rules 1-2; PATCH rename "The document is unchanged", updated_at reflects the rename).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, HashMap, List, Logger, LogLevel, TestClock } from "effect"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

/** A logger that keeps every line (message, annotations, spans and cause) as text. */
const collecting = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ annotations, cause, logLevel, message, spans }) => {
    lines.push([
      logLevel.label,
      JSON.stringify(message),
      JSON.stringify(Object.fromEntries(HashMap.toEntries(annotations))),
      List.toArray(spans).map((span) => span.label).join(","),
      Cause.isEmpty(cause) ? "" : Cause.pretty(cause, { renderErrorCause: true })
    ].join(" "))
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

describe.each(Harness.variants({ sqlite: true }))("secrets ($name)", (variant) => {
  it.effect("a secret value never appears in any response, log line or error", () => {
    const value = `sv-${crypto.randomUUID()}`
    const log = collecting()
    return C.withServiceOn(variant)(Effect.gen(function*() {
      const answers: Array<C.RawResponse> = []
      const created = yield* C.post("/v1/secrets", { name: "API_TOKEN", value })
      expect(created.status).toBe(201)
      expect(Object.keys(created.json).sort()).toEqual(["created_at", "name", "org_id", "updated_at"])
      answers.push(created)
      answers.push(yield* C.get("/v1/secrets/API_TOKEN"))
      answers.push(yield* C.post("/v1/secrets", { name: "API_TOKEN", value: `${value}-2` }))
      // Rejections that carry the value must not quote it.
      answers.push(yield* C.post("/v1/secrets", { name: "_bad name", value }))
      answers.push(yield* C.post("/v1/secrets", { name: "OK", value: value.repeat(65536 / value.length + 1) }))
      answers.push(yield* C.post("/v1/secrets", { name: "OK", value: [value] }))
      answers.push(yield* C.post("/v1/secrets", { name: "OK", value: { nested: value } }))
      answers.push(yield* C.post("/v1/secrets", [value]))
      answers.push(yield* C.post("/v1/secrets", value))
      for (const malformed of [`{"name":"OK","value":"${value}"`, `{"name":"OK","value":${value}}`, `"${value}`, value]) {
        answers.push(yield* C.request("/v1/secrets", { method: "POST", headers: C.auth(), body: malformed }))
      }
      answers.push(yield* C.post("/v1/secrets", { name: "OK", value }, "sk_broke_org"))
      answers.push(yield* C.post("/v1/secrets", { name: "OK", value }, "sk_unknown"))
      answers.push(yield* C.post("/v1/secrets", { name: "OK", value }, "sk_ada_personal"))
      answers.push(yield* C.request("/_local/state"))
      answers.push(yield* C.request("/openapi.json"))
      for (const answer of answers) {
        expect(answer.status).toBeLessThan(500)
        expect(answer.text).not.toContain(value)
      }
      expect(answers.filter((answer) => answer.status === 400).length).toBeGreaterThanOrEqual(9)
      expect(JSON.stringify(yield* C.state)).not.toContain(value)
      // A completion webhook to an address that refuses connections makes the service log its failed rounds: the
      // webhook token (a secret too) and the API key must not be in those lines either.
      const response = yield* C.post("/v1/responses", {
        model: "boxkit-local",
        input: "hi",
        metadata: { completion_webhook: "http://127.0.0.1:9/hook", webhook_token: value }
      })
      expect(response.status).toBe(200)
      expect(response.text).not.toContain(value)
      for (let i = 0; i < 100 && log.lines.length === 0; i++) {
        yield* TestClock.adjust("5 seconds")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
      }
      expect(log.lines.length).toBeGreaterThan(0)
      for (const line of log.lines) {
        expect(line).not.toContain(value)
        expect(line).not.toContain("sk_acme_org")
      }
    })).pipe(Effect.provide(log.layer), Logger.withMinimumLogLevel(LogLevel.All))
  })

  it.effect("replacing a value keeps created_at and moves updated_at (a read before the change is not answered again)", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const first = (yield* C.post("/v1/secrets", { name: "ROTATED", value: "one" })).json
      expect((yield* C.get("/v1/secrets/ROTATED")).json).toEqual(first)
      expect((yield* C.get("/v1/secrets/ROTATED")).json).toEqual(first)
      yield* TestClock.adjust("5 seconds")
      const second = (yield* C.post("/v1/secrets", { name: "ROTATED", value: "two" })).json
      expect(second.created_at).toBe(first.created_at)
      expect(Date.parse(second.updated_at) - Date.parse(first.updated_at)).toBe(5000)
      expect((yield* C.get("/v1/secrets/ROTATED")).json).toEqual(second)
    })))
})

describe.each(Harness.variants({ sqlite: true }))("egress policies ($name)", (variant) => {
  it.effect("a read policy may come back normalized: same behaviour, another shape", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const created = yield* C.post("/v1/egress-policies", {
        name: "normalized",
        document: { allowlist: [" Example.COM ", "example.com", "API.example.com"], blocked: ["BAD.example"] }
      })
      expect(created.status).toBe(201)
      expect(created.json.id).toMatch(/^ep_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      const expected = { no_network: false, allowlist: ["example.com", "api.example.com"], blocked: ["bad.example"] }
      expect(created.json.document).toEqual(expected)
      expect((yield* C.get(`/v1/egress-policies/${created.json.id}`)).json.document).toEqual(expected)
      const empty = yield* C.post("/v1/egress-policies", { name: "open", document: {} })
      expect(empty.json.document).toEqual({ no_network: false })
    })))

  it.effect("rename changes the name and updated_at, and nothing in the document", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const document = { allowlist: ["example.com"], rules: { "api.example.com": { headers: { "x-team": "boxkit" } } } }
      const created = (yield* C.post("/v1/egress-policies", { name: "before", document })).json
      yield* TestClock.adjust("3 seconds")
      const renamed = yield* C.request(`/v1/egress-policies/${created.id}`, {
        method: "PATCH",
        headers: C.auth(),
        body: JSON.stringify({ name: "  after  " })
      })
      expect(renamed.status).toBe(200)
      expect(renamed.json).toEqual({ ...created, name: "after", updated_at: renamed.json.updated_at })
      expect(Date.parse(renamed.json.updated_at) - Date.parse(created.updated_at)).toBe(3000)
      expect((yield* C.get(`/v1/egress-policies/${created.id}`)).json).toEqual(renamed.json)
    })))

  it.effect("policies of another organization are not found", () =>
    C.withServiceOn(variant, {}, C.seedWith({
      organizations: [{ id: "org_other", created_at: "2026-01-01T00:00:00Z" }],
      api_keys: [{ key: "sk_other_org", org_id: "org_other" }]
    }))(Effect.gen(function*() {
      C.expectError(yield* C.get(`/v1/egress-policies/${C.policyId}`, "sk_other_org"), 404, "not_found_error")
      C.expectError(yield* C.get("/v1/secrets/GITHUB_TOKEN", "sk_other_org"), 404, "not_found_error")
    })))
})
