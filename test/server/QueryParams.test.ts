/**
 * The fast path's copy of `HttpApiBuilder`'s query normalisation (src/Server/http/fast/QueryParams.ts) against the original,
 * which `@effect/platform` exports at run time but not in its types: if upstream changes its rule, this fails.
 */
import { describe, expect, it } from "@effect/vitest"
import { HttpApiBuilder } from "@effect/platform"
import { Schema } from "effect"
import * as QueryParams from "../../src/Server/http/fast/QueryParams.js"

const upstream = (HttpApiBuilder as unknown as {
  readonly normalizeUrlParams: typeof QueryParams.normalize
}).normalizeUrlParams

const schemas = {
  single: Schema.Struct({ name: Schema.String }),
  several: Schema.Struct({ tag: Schema.Array(Schema.String) }),
  optionalSeveral: Schema.Struct({ tag: Schema.optional(Schema.Array(Schema.String)), id: Schema.String }),
  literal: Schema.Struct({ order: Schema.Literal("asc", "desc") }),
  number: Schema.Struct({ limit: Schema.NumberFromString }),
  union: Schema.Struct({ value: Schema.Union(Schema.String, Schema.Array(Schema.String)) }),
  record: Schema.Record({ key: Schema.String, value: Schema.String }),
  recordOfArrays: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) })
}

const inputs: ReadonlyArray<Record<string, string | Array<string>>> = [
  { name: "a" },
  { tag: "x" },
  { tag: ["x", "y"], id: "1" },
  { order: "asc" },
  { limit: "10" },
  { value: "v" },
  { unknown: "u", name: "n" }
]

describe("QueryParams.normalize", () => {
  it("is upstream's normalizeUrlParams, for every schema and input", () => {
    expect(typeof upstream).toBe("function")
    for (const [name, schema] of Object.entries(schemas)) {
      for (const input of inputs) {
        expect(QueryParams.normalize(input, schema.ast), `${name} ${JSON.stringify(input)}`).toEqual(upstream(input, schema.ast))
      }
    }
  })

  it("wraps a single value where the schema wants several", () => {
    expect(QueryParams.normalize({ tag: "x", id: "1" }, schemas.optionalSeveral.ast)).toEqual({ tag: ["x"], id: "1" })
  })
})
