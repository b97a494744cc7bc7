/**
 * Schemas of free-form JSON: a field the API passes through or leaves open (model response items, policy rules,
 * extra envelope fields), and the empty object some operations answer.
 *
 * Source: spec "Model responses" (open objects), "Egress policies" (documents); issue 12 (the OpenAPI document).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/**
 * Any JSON value. In the OpenAPI document it is the component `JsonValue` (one of object, array, string, number,
 * boolean, null), referenced wherever a field is open, instead of a JSON Schema `$id` repeated at every use.
 */
export const JsonValue = Schema.Unknown.annotations({
  identifier: "JsonValue",
  jsonSchema: {
    anyOf: [
      { type: "object" },
      { type: "array", items: {} },
      { type: "string" },
      { type: "number" },
      { type: "boolean" },
      { type: "null" }
    ]
  }
})

/** A JSON object with any members. */
export const JsonObject = Schema.Record({ key: Schema.String, value: JsonValue })

/** The empty object `{}` (answered by clipboard write and exec resize): no members. */
export const EmptyObject = Schema.Struct({}).annotations({
  identifier: "EmptyObject",
  jsonSchema: { type: "object", additionalProperties: false }
})

/**
 * A date and time as the API writes it: an ISO 8601 / RFC 3339 string, e.g. `2026-01-01T00:00:00.000Z` (`format:
 * date-time` in the OpenAPI document). Decoded as the string.
 */
export const DateTimeString = Schema.String.annotations({
  identifier: "DateTime",
  jsonSchema: { type: "string", format: "date-time" }
})

/**
 * The deepest nesting of arrays and objects a request body may have (issue 17; docs/ASSUMPTIONS.md "Request body
 * limits"): deeper JSON is a 400 naming the top-level field it is in, before it is parsed or decoded.
 */
export const maxDepth = 64

/**
 * Where JSON text nests arrays and objects deeper than `limit`: the top-level member it happens in (`field`; null for
 * a top-level array or when no member name was read), or undefined when it does not. Scans the bytes once (strings
 * and their escapes skipped); the text is not required to be valid JSON.
 */
export const tooDeep = (bytes: Uint8Array, limit: number = maxDepth): { readonly field: string | null } | undefined => {
  let depth = 0
  let inString = false
  let stringStart = -1
  let lastString: string | null = null
  let field: string | null = null
  for (let index = 0; index < bytes.length; index++) {
    const byte = bytes[index]
    if (inString) {
      if (byte === 0x5c) index++ // a backslash escapes the next byte
      else if (byte === 0x22) {
        inString = false
        if (depth === 1) lastString = Buffer.from(bytes.subarray(stringStart, index)).toString("utf8")
      }
      continue
    }
    if (byte === 0x22) {
      inString = true
      stringStart = index + 1
    } else if (byte === 0x3a) {
      if (depth === 1) field = lastString
    } else if (byte === 0x7b || byte === 0x5b) {
      depth++
      if (depth > limit) return { field }
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--
      if (depth === 1) lastString = null
    } else if (byte === 0x2c && depth === 1) {
      field = null
    }
  }
  return undefined
}
