/**
 * One answer for one input, on every store (this file runs on the in-memory store, on SQLite through the `sqlite`
 * project and on both serving paths; test/durability/PostgresInstances.test.ts sends the same inputs to PostgreSQL),
 * as a caller probing the service would send them:
 *
 * - text fields (names, secret values; src/Domain/Text.ts): a NUL, an unpaired surrogate, U+2028, U+2029 and the
 *   other line breaks are a 400 `invalid_request_error` naming the field, never a 500, a truncated or a replaced
 *   value; a secret value keeps its line breaks;
 * - a JSON body that is not UTF-8 is a 400 naming the field it is in, never stored with U+FFFD in its place;
 * - `__proto__`, `constructor` and `prototype` are ordinary keys: kept in what is stored and answered, and never a
 *   way past a check (an inline policy cannot use secrets under any key).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import type { HttpServerRequest } from "@effect/platform"
import { MalformedJsonBody } from "../../src/Server/http/ErrorResponse.js"
import { withBody } from "../../src/Server/pipeline/RequestBody.js"
import { Boxes } from "../../src/Server/state/Repositories.js"
import * as C from "./support/Conformance.js"
import { refusedInNames, refusedInValues, withInvalidUtf8 } from "../support/OneAnswerInputs.js"
import * as Harness from "../support/Harness.js"

const sendBytes = (method: string, path: string, body: Uint8Array) =>
  C.request(path, { method, headers: C.auth(), body })

const patch = (path: string, body: unknown) =>
  C.request(path, { method: "PATCH", headers: C.auth(), body: JSON.stringify(body) })

describe.each(Harness.variants({ sqlite: true }))("text fields: one answer on every store ($name)", (variant) => {
  it.effect("box, policy and app names refuse NUL, unpaired surrogates, U+2028, U+2029 and other line breaks", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const policy = (yield* C.post("/v1/egress-policies", { name: "named", document: {} })).json
      for (const [label, name] of refusedInNames) {
        const message = { param: "name", message: /name/ }
        C.expectError(yield* C.post("/v1/boxes", C.boxBody({ name })), 400, "invalid_request_error", message)
        C.expectError(
          yield* C.post("/v1/egress-policies", { name, document: {} }),
          400,
          "invalid_request_error",
          message
        )
        C.expectError(yield* patch(`/v1/egress-policies/${policy.id}`, { name }), 400, "invalid_request_error", message)
        const app = yield* C.post("/v1/apps/find", { name, mint_if_missing: true })
        expect(app.status, label).toBe(400)
        C.expectError(app, 400, "invalid_request_error", message)
      }
      const state = yield* C.state
      expect(state.boxes).toEqual([])
      expect((yield* C.get(`/v1/egress-policies/${policy.id}`)).json.name).toBe("named")
    })))

  it.effect("names that are text are stored and answered exactly as sent (astral characters, surrounding spaces)", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const name = "  📦 naïve – ok  "
      const boxId = yield* C.createBox({ name })
      expect((yield* C.get(`/v1/boxes/${boxId}`)).json.name).toBe(name)
      const app = yield* C.post("/v1/apps/find", { name: "app 📦", mint_if_missing: true })
      expect(app.status).toBe(200)
      expect((yield* C.post("/v1/apps/find", { name: "app 📦" })).json).toEqual(app.json)
    })))

  it.effect("response metadata values are free text: NUL and unpaired surrogates are a 400 naming the key", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const [label, value] of refusedInValues) {
        for (const key of ["webhook_token", "note"]) {
          const answer = yield* C.post("/v1/responses", { model: "boxkit-local", input: "x", metadata: { [key]: value } })
          expect([label, answer.status, answer.json.error?.param]).toEqual([label, 400, `metadata.${key}`])
        }
      }
      const kept = yield* C.post("/v1/responses", { model: "boxkit-local", input: "x", metadata: { note: "a\nb\tc" } })
      expect([kept.status, kept.json.metadata?.note]).toEqual([200, "a\nb\tc"])
    })))

  it.effect("ids a store cannot hold (a NUL, an unpaired surrogate) are unknown ids: 404, as for any other", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const [label, text] of refusedInValues) {
        const box = yield* C.post("/v1/boxes", C.boxBody({ app_id: `app_${text}` }))
        expect([label, box.status, box.json.error?.param]).toEqual([label, 404, "app_id"])
        const response = yield* C.get(`/v1/responses/${encodeURIComponent(`resp_${text.replace(/[\ud800-\udfff]/g, "")}`)}`)
        expect([label, response.status]).toEqual([label, 404])
      }
    })))

  it.effect("secret values refuse NUL and unpaired surrogates without quoting them; line breaks and tabs are kept", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const [label, value] of refusedInValues) {
        const answer = yield* C.post("/v1/secrets", { name: "PEM_KEY", value })
        expect(answer.status, label).toBe(400)
        C.expectError(answer, 400, "invalid_request_error", { param: "value" })
        expect(answer.text).not.toContain("\\u0000")
        expect(answer.text.toLowerCase()).not.toContain("\\ud800")
      }
      C.expectError(yield* C.get("/v1/secrets/PEM_KEY"), 404, "not_found_error")
      const pem = "-----BEGIN KEY-----\r\nAAAA\tBBBB\nCCCC\u2028\n-----END KEY-----\n"
      expect((yield* C.post("/v1/secrets", { name: "PEM_KEY", value: pem })).status).toBeLessThan(300)
      expect((yield* C.get("/v1/secrets/PEM_KEY")).status).toBe(200)
    })))
})

describe.each(Harness.variants({ sqlite: true }))("a JSON body that is not UTF-8 ($name)", (variant) => {
  it.effect("is a 400 naming the field its bad bytes are in, and nothing is stored", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxBody = JSON.stringify(C.boxBody({ name: "a@@b" }))
      C.expectError(yield* sendBytes("POST", "/v1/boxes", withInvalidUtf8(boxBody)), 400, "invalid_request_error", {
        param: "name",
        message: /UTF-8/
      })
      C.expectError(
        yield* sendBytes("POST", "/v1/apps/find", withInvalidUtf8(`{"mint_if_missing":true,"name":"a@@b"}`)),
        400,
        "invalid_request_error",
        { param: "name", message: /UTF-8/ }
      )
      C.expectError(
        yield* sendBytes("POST", "/v1/egress-policies", withInvalidUtf8(`{"name":"p","document":{"allowlist":["a@@"]}}`)),
        400,
        "invalid_request_error",
        { param: "document", message: /UTF-8/ }
      )
      // In a member name: the body is named (param null).
      C.expectError(
        yield* sendBytes("POST", "/v1/egress-policies", withInvalidUtf8(`{"name":"p","do@@c":{}}`)),
        400,
        "invalid_request_error",
        { param: null, message: /UTF-8/ }
      )
      // Cut inside a character at the end of the body.
      C.expectError(
        yield* sendBytes("POST", "/v1/apps/find", Buffer.from([...Buffer.from(`{"name":"`), 0xe2, 0x82])),
        400,
        "invalid_request_error",
        { message: /UTF-8/ }
      )
      const state = yield* C.state
      expect(state.boxes).toEqual([])
      expect((yield* C.post("/v1/apps/find", { name: "a\ufffd\ufffdb" })).status).toBe(404)
    })))
  it.effect("every JSON read of a body is strict: bytes that are not UTF-8 are a malformed body, not U+FFFD", () =>
    Effect.gen(function*() {
      const request = { headers: {}, remoteAddress: Option.none() } as unknown as HttpServerRequest.HttpServerRequest
      const exit = yield* Effect.exit(withBody(request, withInvalidUtf8(`{"name":"a@@b"}`)).json)
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      expect(defect).toBeInstanceOf(MalformedJsonBody)
      expect((defect as MalformedJsonBody).reason).toBe("not valid UTF-8")
      // A byte order mark is still skipped, as before.
      const marked = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"name":"é"}`)])
      expect(yield* withBody(request, marked).json).toEqual({ name: "é" })
    }))
})

describe.each(Harness.variants({ sqlite: true }))("__proto__, constructor and prototype are ordinary keys ($name)", (variant) => {
  it.effect("an inline policy cannot use secrets under a __proto__ rule either", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      for (const key of ["__proto__", "constructor", "prototype"]) {
        const document = JSON.parse(`{"rules":{"${key}":{"headers":{"authorization":{"secret":"GITHUB_TOKEN"}}}}}`)
        C.expectError(
          yield* C.post("/v1/boxes", C.boxBody({ egress_policy: document })),
          400,
          "invalid_request_error",
          { param: "egress_policy.rules" }
        )
      }
      expect((yield* C.state).boxes).toEqual([])
    })))

  it.effect("policy documents keep __proto__ keys: stored, answered and read back", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const rules = JSON.parse(`{"__proto__":{"headers":{"x-team":"boxkit"}},"constructor":{"a":1},"prototype":[]}`)
      const created = yield* C.post("/v1/egress-policies", { name: "keys", document: { rules } })
      expect(created.status).toBe(201)
      const stored = JSON.stringify(rules)
      expect(JSON.stringify(created.json.document.rules)).toBe(stored)
      expect(JSON.stringify((yield* C.get(`/v1/egress-policies/${created.json.id}`)).json.document.rules)).toBe(stored)
      // A member that is not an object is still named and explained as before.
      C.expectError(
        yield* C.post("/v1/egress-policies", { name: "keys", document: { rules: "x" } }),
        400,
        "invalid_request_error",
        { param: "document.rules", message: /document\.rules: must be a JSON object/ }
      )
      // Inline at box creation, without secrets: kept in the box's record.
      const boxId = yield* C.createBox({ egress_policy: { rules } })
      expect(JSON.stringify((yield* C.get(`/v1/boxes/${boxId}`)).json.egress_policy.rules)).toBe(stored)
    })))

  it.effect("response metadata keeps __proto__, constructor and prototype keys", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const metadata = JSON.parse(`{"__proto__":"x","constructor":"y","prototype":"z","toString":"w"}`)
      const created = yield* C.post("/v1/responses", { model: "boxkit-local", input: "hello", metadata })
      expect(created.status, created.text).toBe(200)
      expect(Object.keys(created.json.metadata)).toEqual(expect.arrayContaining(Object.keys(metadata)))
      expect(created.json.metadata.constructor).toBe("y")
      expect(Object.getOwnPropertyDescriptor(created.json.metadata, "__proto__")?.value).toBe("x")
      const read = (yield* C.get(`/v1/responses/${created.json.id}`)).json
      expect(Object.getOwnPropertyDescriptor(read.metadata, "__proto__")?.value).toBe("x")
      // A metadata value that is not a string is refused under any key.
      C.expectError(
        yield* C.post("/v1/responses", { model: "boxkit-local", input: "x", metadata: JSON.parse(`{"__proto__":{}}`) }),
        400,
        "invalid_request_error"
      )
    })))
  it.effect("an input item's __proto__ member is its own member: never an inherited role or type", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const input = JSON.parse(`[{"content":[{"type":"input_text","text":"hi","__proto__":{"type":"input_file"}}],` +
        `"__proto__":{"role":"nobody","type":"function_call"}}]`)
      const created = yield* C.post("/v1/responses", { model: "boxkit-local", input })
      expect(created.status, created.text).toBe(200)
      expect(JSON.stringify(created.json.input)).toBe(JSON.stringify(input))
    })))

  it.effect("an exec id such as constructor or __proto__ is an unknown exec: a resize of it is a no-op", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      for (const execId of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
        const answer = yield* C.post(`/v1/boxes/${boxId}/exec/${execId}/resize`, { cols: 100, rows: 30 })
        expect([execId, answer.status, answer.json]).toEqual([execId, 200, {}])
      }
      const record = Option.getOrThrow(yield* (yield* Boxes).get(boxId))
      expect(Reflect.ownKeys(record.terminalSizes)).toEqual([])
    })))
})
