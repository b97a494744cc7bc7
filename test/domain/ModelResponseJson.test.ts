/**
 * `ModelResponse.toJson` (the fast JSON form used for 202 answers, foreground answers, stream events and webhook
 * bodies) is exactly the schema's encoding, for any Model response object the schema can hold.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, FastCheck as fc, Schema } from "effect"
import { ModelResponse, toJson } from "../../src/Domain/ModelResponse.js"

const encode = Schema.encodeSync(ModelResponse)

describe("ModelResponse.toJson", () => {
  it("equals Schema.encodeSync(ModelResponse) on arbitrary Model response objects (and their JSON text too)", () => {
    fc.assert(
      fc.property(Arbitrary.make(ModelResponse), (response) => {
        const fast = toJson(response)
        const slow = encode(response)
        expect(fast).toEqual(slow)
        expect(JSON.stringify(fast)).toBe(JSON.stringify(slow))
        // A plain object, not the class instance: no prototype of the class leaks into the JSON form.
        expect(Object.getPrototypeOf(fast)).toBe(Object.prototype)
      }),
      { numRuns: 300, seed: 6 }
    )
  })

  it("leaves out fields that are undefined and keeps nulls", () => {
    const response = new ModelResponse({ id: "resp_1", object: "response", created_at: 1, status: "queued", model: "m", error: null })
    expect(toJson(response)).toEqual({
      id: "resp_1",
      object: "response",
      created_at: 1,
      status: "queued",
      model: "m",
      metadata: {},
      output: [],
      error: null
    })
    expect(Object.keys(toJson(response))).not.toContain("usage")
  })
})
