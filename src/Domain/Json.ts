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
