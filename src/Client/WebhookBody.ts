/**
 * The body of a completion webhook decoded as a Model response object for the receiver (WebhookReceiver.ts): the same
 * result as `Schema.decodeUnknownEither(ModelResponse)`, at a fraction of its cost for the bodies a service sends.
 *
 * A body whose every field already has the schema's type (the strings, integers, literals, booleans and arrays of the
 * Model response object; open fields as any JSON) is copied field by field into the instance the schema would make:
 * the same fields in the same order, excess members dropped, `metadata` and `output` defaulted. Anything else (a
 * wrong type, a missing field, a `__proto__` metadata key) is decoded by the schema itself, so its errors are the
 * schema's. test/responses/WebhookBody.test.ts proves both give equal instances.
 *
 * Source: spec "Model response object", "Events / Completion webhook" rule 2 (the body is the response object).
 *
 * @since 0.1.0
 */
import { Either, type ParseResult, Schema } from "effect"
import { ModelResponse, ResponseStatus } from "../Domain/ModelResponse.js"

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const isInt = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value)
const isString = (value: unknown): boolean => typeof value === "string"
const isBoolean = (value: unknown): boolean => typeof value === "boolean"
const orNull = (check: (value: unknown) => boolean) => (value: unknown): boolean => value === null || check(value)

const statuses: ReadonlySet<unknown> = new Set(ResponseStatus.literals)
const tokenDetailsFields = ["cached_tokens", "reasoning_tokens"] as const
const usageIntFields = ["input_tokens", "output_tokens", "total_tokens", "prompt_tokens", "completion_tokens"] as const

/** `details` as `TokenDetails` decodes it (its two integers only), or undefined when it is not one. */
const tokenDetails = (details: unknown): Json | undefined => {
  if (!isObject(details)) return undefined
  const copy: Json = {}
  for (const field of tokenDetailsFields) {
    if (!isInt(details[field])) return undefined
    copy[field] = details[field]
  }
  return copy
}

/** `usage` as `NullOr(Usage)` decodes it, or undefined when it is neither null nor a usage object. */
const usageOf = (usage: unknown): Json | null | undefined => {
  if (usage === null) return null
  if (!isObject(usage)) return undefined
  const copy: Json = {}
  for (const field of usageIntFields) {
    if (!isInt(usage[field])) return undefined
    copy[field] = usage[field]
  }
  const input = tokenDetails(usage.input_tokens_details)
  const output = tokenDetails(usage.output_tokens_details)
  if (input === undefined || output === undefined) return undefined
  copy.input_tokens_details = input
  copy.output_tokens_details = output
  return copy
}

/** `metadata` as `ObjectOf(String)` decodes it (a copy), or undefined when a value is not a string or a key is `__proto__`. */
const metadataOf = (metadata: unknown): Json | undefined => {
  if (!isObject(metadata)) return undefined
  const copy: Json = {}
  for (const key of Object.keys(metadata)) {
    if (key === "__proto__" || !isString(metadata[key])) return undefined
    copy[key] = metadata[key]
  }
  return copy
}

/** An array of any JSON, copied as `Schema.Array(JsonValue)` decodes it; undefined when not an array. */
const arrayOf = (value: unknown): Array<unknown> | undefined => Array.isArray(value) ? value.slice() : undefined

/**
 * How each field of the schema decodes, in the schema's order: `check` the value's type (the value is then kept as it
 * is), or `copy` it (a new value, undefined when it does not decode); `required`, or `fallback` when absent.
 */
type Field =
  | { readonly name: string; readonly check: (value: unknown) => boolean; readonly required?: true }
  | { readonly name: string; readonly copy: (value: unknown) => unknown; readonly fallback?: () => unknown }

const anyJson = (): boolean => true

const fields: ReadonlyArray<Field> = [
  { name: "id", check: isString, required: true },
  { name: "object", check: (value) => value === "response", required: true },
  { name: "created_at", check: isInt, required: true },
  { name: "status", check: (value) => statuses.has(value), required: true },
  { name: "model", check: isString, required: true },
  { name: "usage", copy: usageOf },
  { name: "metadata", copy: metadataOf, fallback: () => ({}) },
  { name: "input", check: anyJson },
  { name: "output", copy: arrayOf, fallback: () => [] },
  { name: "error", check: anyJson },
  { name: "incomplete_details", check: anyJson },
  { name: "instructions", check: anyJson },
  { name: "background", check: orNull(isBoolean) },
  { name: "max_output_tokens", check: orNull(isInt) },
  { name: "max_tool_calls", check: orNull(isInt) },
  { name: "prompt_cache_key", check: orNull(isString) },
  { name: "reasoning", check: anyJson },
  { name: "text", check: anyJson },
  { name: "store", check: isBoolean },
  { name: "temperature", check: orNull((value) => typeof value === "number") },
  { name: "top_p", check: orNull((value) => typeof value === "number") },
  { name: "parallel_tool_calls", check: isBoolean },
  { name: "tool_choice", check: anyJson },
  { name: "tools", copy: arrayOf },
  { name: "truncation", check: orNull(isString) },
  { name: "user", check: orNull(isString) }
]

/** The fields of `json` as the schema decodes them, or undefined when one does not decode (the schema then decides). */
const fieldsOf = (json: Json): Json | undefined => {
  const decoded: Json = {}
  for (const field of fields) {
    const present = Object.hasOwn(json, field.name)
    const value = present ? json[field.name] : undefined
    if (present && value === undefined) return undefined
    if ("check" in field) {
      if (!present) {
        if (field.required === true) return undefined
        continue
      }
      if (!field.check(value)) return undefined
      decoded[field.name] = value
    } else if (present) {
      const copied = field.copy(value)
      if (copied === undefined) return undefined
      decoded[field.name] = copied
    } else if (field.fallback !== undefined) {
      decoded[field.name] = field.fallback()
    }
  }
  return decoded
}

/**
 * The field-by-field copy of a parsed JSON body into the Model response object the schema would decode it to, or
 * undefined when a field does not already have its type (then only the schema can decide, and word its error).
 *
 * @since 0.1.0
 * @category Decoding
 */
export const copyModelResponse = (json: unknown): ModelResponse | undefined => {
  const decoded = isObject(json) ? fieldsOf(json) : undefined
  return decoded === undefined
    ? undefined
    : new ModelResponse(decoded as ConstructorParameters<typeof ModelResponse>[0], true)
}

const decodeWithSchema = Schema.decodeUnknownEither(ModelResponse)

/**
 * Decodes a parsed JSON body as a Model response object: `Schema.decodeUnknownEither(ModelResponse)`'s result (equal
 * instance, or its `ParseError`), by {@link copyModelResponse} when every field already has its type.
 *
 * @since 0.1.0
 * @category Decoding
 */
export const decodeModelResponse = (json: unknown): Either.Either<ModelResponse, ParseResult.ParseError> => {
  const copied = copyModelResponse(json)
  return copied === undefined ? decodeWithSchema(json) : Either.right(copied)
}
