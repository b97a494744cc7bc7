/**
 * `makeResponse` and `responseWith` (ResponseRequest.ts), how the engine builds its Model response objects without the
 * class constructor's copies: the same instance as `new ModelResponse(fields, true)` for any fields the schema can
 * hold (class, own fields in order, structural equality, JSON), defaults included when `metadata` or `output` is left
 * out.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Equal, FastCheck as fc } from "effect"
import { ModelResponse } from "../../src/Domain/ModelResponse.js"
import { makeResponse, responseWith } from "../../src/Server/responses/ResponseRequest.js"

/** What tells two instances apart: class, own keys in order, structural equality with the other, JSON text. */
const sameInstance = (fast: ModelResponse, slow: ModelResponse) => {
  expect(fast).toBeInstanceOf(ModelResponse)
  expect(Object.getPrototypeOf(fast)).toBe(Object.getPrototypeOf(slow))
  expect(Reflect.ownKeys(fast)).toEqual(Reflect.ownKeys(slow))
  expect(Equal.equals(fast, slow)).toBe(true)
  expect(JSON.stringify(fast)).toBe(JSON.stringify(slow))
}

describe("the engine's Model response objects", () => {
  it("makeResponse(fields) is new ModelResponse(fields, true) for arbitrary fields", () => {
    fc.assert(
      fc.property(Arbitrary.make(ModelResponse), (response) => {
        const fields = { ...response }
        sameInstance(makeResponse(fields), new ModelResponse(fields, true))
      }),
      { numRuns: 300, seed: 11 }
    )
  })

  it("responseWith(base, changes) is new ModelResponse({ ...base, ...changes }, true)", () => {
    fc.assert(
      fc.property(Arbitrary.make(ModelResponse), Arbitrary.make(ModelResponse), (base, other) => {
        const changes = { status: other.status, output: other.output, usage: other.usage }
        sameInstance(responseWith(base, changes), new ModelResponse({ ...base, ...changes }, true))
      }),
      { numRuns: 200, seed: 12 }
    )
  })

  it("fields with defaults left out get the schema's defaults", () => {
    const fields = { id: "resp_1", object: "response", created_at: 1, status: "queued", model: "m" } as const
    const fast = makeResponse(fields)
    const slow = new ModelResponse(fields, true)
    // (Not Equal.equals: each default is a fresh object, compared by reference, in two instances of the class too.)
    expect(Object.getPrototypeOf(fast)).toBe(ModelResponse.prototype)
    expect(Reflect.ownKeys(fast)).toEqual(Reflect.ownKeys(slow))
    expect(JSON.stringify(fast)).toBe(JSON.stringify(slow))
    expect(fast.metadata).toEqual({})
    expect(fast.output).toEqual([])
  })
})
