/**
 * Limits where the spec is silent (docs/ASSUMPTIONS.md "Request body limits (local service)"): the sizes of a
 * create-response request's fields and the nesting depth of any JSON body. Each limit is a 400 naming the field, just
 * over it; just at it is accepted. Sent as an attacker would send them; runs on both serving paths.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { maxDepth } from "../../src/Domain/Json.js"
import { requestLimits } from "../../src/Domain/ModelResponse.js"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"

const repeat = (character: string, count: number) => character.repeat(count)
const respond = (extra: Record<string, unknown>) => C.post("/v1/responses", { model: "boxkit-local", input: "x", ...extra })

const expect400 = (answer: C.RawResponse, param: string) => {
  C.expectError(answer, 400, "invalid_request_error")
  expect(answer.json.error.param).toBe(param)
}

/** JSON text of arrays nested `depth` deep around 1 (built as text: no recursion here). */
const nestedText = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`

/** POST `path` with a JSON body whose `field` holds {@link nestedText} of `depth`. */
const postDeep = (path: string, fields: Record<string, unknown>, field: string, depth: number) => {
  const head = JSON.stringify(fields).slice(0, -1)
  return C.request(path, {
    method: "POST",
    headers: C.auth(),
    body: `${head}${Object.keys(fields).length > 0 ? "," : ""}${JSON.stringify(field)}:${nestedText(depth)}}`
  })
}

describe.each(Harness.variants())("create-response field limits ($name)", (variant) => {
  it.effect("metadata: 16 pairs, keys of 64 characters, values of 512", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const pairs = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`k${index}`, "v"]))
      expect((yield* respond({ metadata: pairs(requestLimits.metadataPairs) })).status).toBe(200)
      expect400(yield* respond({ metadata: pairs(requestLimits.metadataPairs + 1) }), "metadata")
      const longKey = repeat("k", requestLimits.metadataKeyLength + 1)
      expect((yield* respond({ metadata: { [repeat("k", requestLimits.metadataKeyLength)]: "v" } })).status).toBe(200)
      expect400(yield* respond({ metadata: { [longKey]: "v" } }), `metadata.${longKey}`)
      expect((yield* respond({ metadata: { note: repeat("v", requestLimits.metadataValueLength) } })).status).toBe(200)
      expect400(yield* respond({ metadata: { note: repeat("v", requestLimits.metadataValueLength + 1) } }), "metadata.note")
    })))

  it.effect("model, user and prompt_cache_key: 256 characters; tools: 128", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      expect400(yield* C.post("/v1/responses", { model: repeat("m", requestLimits.modelLength + 1), input: "x" }), "model")
      expect((yield* C.post("/v1/responses", { model: repeat("m", requestLimits.modelLength), input: "x" })).status).toBe(200)
      expect400(yield* respond({ user: repeat("u", requestLimits.userLength + 1) }), "user")
      expect((yield* respond({ user: repeat("u", requestLimits.userLength) })).status).toBe(200)
      expect400(yield* respond({ prompt_cache_key: repeat("p", requestLimits.promptCacheKeyLength + 1) }), "prompt_cache_key")
      expect400(yield* respond({ tools: Array.from({ length: requestLimits.tools + 1 }, () => ({})) }), "tools")
      expect((yield* respond({ tools: Array.from({ length: requestLimits.tools }, () => ({})) })).status).toBe(200)
    })))

  it.effect("input: at most 8 MiB as JSON text", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const over = yield* C.post("/v1/responses", { model: "boxkit-local", input: repeat("x", requestLimits.inputJsonLength + 1), background: true })
      expect400(over, "input")
      const items = [{ role: "user", content: repeat("x", requestLimits.inputJsonLength) }]
      expect400(yield* C.post("/v1/responses", { model: "boxkit-local", input: items, background: true }), "input")
    })))
})

describe.each(Harness.variants())("JSON nesting depth ($name)", (variant) => {
  it.effect(`a body nested deeper than ${maxDepth} levels is a 400 naming its field, on every JSON operation; never a 500`, () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const response = { model: "boxkit-local", input: "x" }
      expect400(yield* postDeep("/v1/responses", response, "reasoning", 5_000), "reasoning")
      expect400(yield* postDeep("/v1/responses", response, "tools", 5_000), "tools")
      expect400(yield* postDeep("/v1/boxes", C.boxBody(), "egress_policy", 5_000), "egress_policy")
      expect400(yield* postDeep("/v1/egress-policies", { name: "deep" }, "document", 5_000), "document")
      expect400(yield* postDeep("/v1/apps/find", {}, "name", 5_000), "name")
      // At the limit the body is read as usual (and judged on its fields).
      expect((yield* postDeep("/v1/responses", response, "reasoning", maxDepth - 1)).status).toBe(200)
      const state = yield* C.state
      expect(state.egress_policies.some((policy: any) => policy.name === "deep")).toBe(false)
    })))
})
