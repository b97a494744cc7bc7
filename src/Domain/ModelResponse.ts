/**
 * Model responses: the asynchronous text-generation area modelled on a hosted Responses-style API.
 *
 * Source: spec "Model response object", "POST {api_url}/responses", "Events / Completion webhook", Limits
 * ("Pre-tokenized prompt"). Field names the spec does not give are the hosted Responses API's (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { JsonValue, KeepingProtoMember, type MemberCaps, ObjectOf, scalarCap, stringCap, stringMapCap } from "./Json.js"
import * as Text from "./Text.js"

/** Model response statuses (spec: Model response object). @since 0.1.0 @category Schemas */
export const ResponseStatus = Schema.Literal("queued", "in_progress", "failed", "completed", "incomplete", "cancelled")
/** A model response status. @since 0.1.0 @category Models */
export type ResponseStatus = typeof ResponseStatus.Type

/**
 * True for a status after which nothing changes: `completed`, `incomplete`, `failed`, `cancelled`.
 *
 * @since 0.1.0
 * @category Guards
 */
export const isFinished = (status: ResponseStatus): boolean =>
  status === "completed" || status === "incomplete" || status === "failed" || status === "cancelled"

/**
 * True for the statuses a completion webhook carries (spec Events rule 3: `completed` or `incomplete`).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isDeliverable = (status: ResponseStatus): boolean => status === "completed" || status === "incomplete"

const TokenDetails = Schema.Struct({ cached_tokens: Schema.Int, reasoning_tokens: Schema.Int })

/**
 * Token usage, all integers counting tokens (spec: Model response object): `input_tokens`, `output_tokens`,
 * `total_tokens`, `prompt_tokens` (= input), `completion_tokens` (= output), and `input_tokens_details` /
 * `output_tokens_details` with `cached_tokens` and `reasoning_tokens`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Usage = Schema.Struct({
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  total_tokens: Schema.Int,
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  input_tokens_details: TokenDetails,
  output_tokens_details: TokenDetails
})
/** Token usage. @since 0.1.0 @category Models */
export type Usage = typeof Usage.Type

/**
 * The `metadata` keys the service writes itself (decimal strings on a completed response); a request that supplies
 * either is refused with 400 (spec: POST /responses, metadata).
 *
 * @since 0.1.0
 * @category Constants
 */
export const reservedMetadataKeys = ["supercached_input_tokens", "supercache_write_input_tokens"] as const

/**
 * Completion windows: `asap`, `balanced`, `flex`. A background request uses `balanced` or `flex` (spec).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CompletionWindow = Schema.Literal("asap", "balanced", "flex")
/** A completion window. @since 0.1.0 @category Models */
export type CompletionWindow = typeof CompletionWindow.Type

/**
 * The completion-window header (its name is not shown by the spec; docs/ASSUMPTIONS.md), lowercase.
 *
 * @since 0.1.0
 * @category Constants
 */
export const completionWindowHeader = "x-completion-window"

/**
 * The values of the `include` list, as the hosted Responses API names them. Every value is accepted; only
 * `reasoning.encrypted_content` is named by the spec, and reasoning items still come back without encrypted content.
 * The others ask for outputs of tools the local service does not run, so they change nothing. Any other value is
 * refused with 400 (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Constants
 */
export const includableValues = [
  "reasoning.encrypted_content",
  "message.output_text.logprobs",
  "message.input_image.image_url",
  "file_search_call.results",
  "web_search_call.results",
  "web_search_call.action.sources",
  "computer_call_output.output.image_url",
  "code_interpreter_call.outputs"
] as const

/** One value of the `include` list. @since 0.1.0 @category Schemas */
export const Includable = Schema.Literal(...includableValues).annotations({
  message: () => `include values must be one of: ${includableValues.join(", ")}`
})

/**
 * The largest token id of a pre-tokenized prompt (spec Limits: each 0 to 2147483647).
 *
 * @since 0.1.0
 * @category Constants
 */
export const maxTokenId = 2147483647
/** The most ids in a pre-tokenized prompt (spec Limits: 1 to 2000000 elements). @since 0.1.0 @category Constants */
export const maxPromptTokenIds = 2000000

const tokenIdsProblem = (u: unknown): string | undefined => {
  if (!Array.isArray(u)) return "prompt_token_ids must be an array of integer token ids"
  if (u.length < 1) return "prompt_token_ids must have at least 1 element"
  if (u.length > maxPromptTokenIds) {
    return `prompt_token_ids must have at most ${maxPromptTokenIds} elements (got ${u.length})`
  }
  for (let i = 0; i < u.length; i++) {
    const id = u[i]
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > maxTokenId) {
      return `prompt_token_ids[${i}] must be an integer from 0 to ${maxTokenId} (got ${JSON.stringify(id) ?? "nothing"})`
    }
  }
  return undefined
}

/**
 * The pre-tokenized prompt: 1 to 2,000,000 integer token ids, each 0 to 2147483647 (spec Limits), forwarded verbatim.
 * Checked in one loop (a per-element schema takes about a second for 2,000,000 ids); the message names the first bad
 * element.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PromptTokenIds = Schema.declare(
  (u: unknown): u is ReadonlyArray<number> => tokenIdsProblem(u) === undefined,
  {
    identifier: "PromptTokenIds",
    message: (issue) => tokenIdsProblem(issue.actual) ?? "invalid prompt_token_ids",
    jsonSchema: {
      type: "array",
      items: { type: "integer", minimum: 0, maximum: maxTokenId },
      minItems: 1,
      maxItems: maxPromptTokenIds
    }
  }
)

/**
 * The Model response object (spec). `output`, `error`, `incomplete_details`, `reasoning` and `tools` items are not
 * shown by the spec and decode as JSON; boxkit's local service writes the hosted API's shapes: `output` holds
 * `reasoning` items (`{type, id, summary, content}`, never `encrypted_content`) and one `message` item
 * (`{type, id, status, role: "assistant", content: [{type: "output_text", text, annotations, logprobs}]}`),
 * `incomplete_details` is `{reason: "max_output_tokens"}`, `error` is `{code, message}`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class ModelResponse extends Schema.Class<ModelResponse>("ModelResponse")({
  id: Schema.String,
  object: Schema.Literal("response"),
  created_at: Schema.Int,
  status: ResponseStatus,
  model: Schema.String,
  usage: Schema.optional(Schema.NullOr(Usage)),
  metadata: Schema.optionalWith(ObjectOf(Schema.String), {
    default: () => ({})
  }),
  input: Schema.optional(JsonValue),
  output: Schema.optionalWith(Schema.Array(JsonValue), { default: () => [] }),
  error: Schema.optional(Schema.NullOr(JsonValue)),
  incomplete_details: Schema.optional(Schema.NullOr(JsonValue)),
  instructions: Schema.optional(Schema.NullOr(JsonValue)),
  background: Schema.optional(Schema.NullOr(Schema.Boolean)),
  max_output_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
  max_tool_calls: Schema.optional(Schema.NullOr(Schema.Int)),
  prompt_cache_key: Schema.optional(Schema.NullOr(Schema.String)),
  reasoning: Schema.optional(Schema.NullOr(JsonValue)),
  text: Schema.optional(JsonValue),
  store: Schema.optional(Schema.Boolean),
  temperature: Schema.optional(Schema.NullOr(Schema.Number)),
  top_p: Schema.optional(Schema.NullOr(Schema.Number)),
  parallel_tool_calls: Schema.optional(Schema.Boolean),
  tool_choice: Schema.optional(JsonValue),
  tools: Schema.optional(Schema.Array(JsonValue)),
  truncation: Schema.optional(Schema.NullOr(Schema.String)),
  user: Schema.optional(Schema.NullOr(Schema.String))
}) {}

/** The field names of {@link ModelResponse}, in schema order. */
const modelResponseFields: ReadonlyArray<string> = Object.keys(ModelResponse.fields)

/**
 * The encoded (JSON) form of a Model response object: the same value as `Schema.encodeSync(ModelResponse)(response)`
 * (a plain object with the schema's fields; fields that are `undefined` left out), several times faster. It can copy
 * the fields because every field of the schema encodes as itself (strings, numbers, literals, records, unknown
 * JSON): no field has a transformation. test/domain/ModelResponseJson.test.ts proves the equality.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toJson = (response: ModelResponse): Record<string, unknown> => {
  const encoded: Record<string, unknown> = {}
  for (const field of modelResponseFields) {
    const value = (response as unknown as Record<string, unknown>)[field]
    if (value !== undefined) encoded[field] = value
  }
  return encoded
}

/** The text of every `output_text` part of a response's message items, joined. @since 0.1.0 @category Utils */
export const outputText = (response: ModelResponse): string =>
  response.output.flatMap((item: any) =>
    item?.type === "message" && Array.isArray(item.content)
      ? item.content.filter((part: any) => part?.type === "output_text").map((part: any) => String(part.text))
      : []
  ).join("")

/** A content part; its other members are kept, `__proto__` included (Json.KeepingProtoMember). */
const ContentPart = KeepingProtoMember(
  Schema.Struct({ type: Schema.String }, { key: Schema.String, value: JsonValue }),
  JsonValue
)

/**
 * An input item: a message (`type` omitted or `message`) with a `role` (`user`, `assistant`, `system`, `developer`;
 * default `user`) and string or part-array content, or another typed item (refused by the local service).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const InputItem = KeepingProtoMember(
  Schema.Struct(
    {
      type: Schema.optional(Schema.String),
      role: Schema.optional(Schema.String),
      content: Schema.optional(Schema.Union(Schema.String, Schema.Array(ContentPart)))
    },
    { key: Schema.String, value: JsonValue }
  ),
  JsonValue
)

/** `T`, or `null` meaning the same as leaving the field out (the hosted API's clients send `null` for unset). */
const Nullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

/**
 * The size limits of a create-response request, where the spec is silent (docs/ASSUMPTIONS.md "Model
 * responses"): `metadata` as the hosted Responses API limits it (at most 16 pairs, keys of at most 64 characters,
 * values of at most 512), `model`, `user` and `prompt_cache_key` at most 256 characters, at most 128 `tools`, and an
 * `input` of at most 8 MiB as JSON text (a string: its characters). Each is a 400 naming the field.
 *
 * @since 0.1.0
 * @category Constants
 */
export const requestLimits = {
  metadataPairs: 16,
  metadataKeyLength: 64,
  metadataValueLength: 512,
  modelLength: 256,
  userLength: 256,
  promptCacheKeyLength: 256,
  tools: 128,
  inputJsonLength: 8 * 1024 * 1024
} as const

/**
 * The byte caps of a create-response request's bounded members, checked by the local service before the body is
 * parsed (`Json.checkBody`; a member over its cap is a 400 naming it): derived from {@link requestLimits}, each the
 * longest text a valid value can have with every character escaped (`Json.stringCap`, `Json.stringMapCap`), and
 * `Json.scalarCap` for booleans, numbers and `truncation`; an `input` string by its characters (`Json.StringLengthCap`:
 * escaped, a valid one could be longer than the body limit). `prompt_token_ids`, `instructions`, `include`, `tools`
 * and the open members have none: only the body limit (32 MiB) bounds them. docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const createRequestCaps: MemberCaps = {
  model: stringCap(requestLimits.modelLength),
  user: stringCap(requestLimits.userLength),
  prompt_cache_key: stringCap(requestLimits.promptCacheKeyLength),
  metadata: stringMapCap(requestLimits.metadataPairs, requestLimits.metadataKeyLength, requestLimits.metadataValueLength),
  // A string input: its characters, as the schema counts them (an array of items is bounded by the body limit only).
  input: { maxLength: requestLimits.inputJsonLength },
  stream: scalarCap,
  background: scalarCap,
  parallel_tool_calls: scalarCap,
  store: scalarCap,
  truncation: scalarCap,
  max_tool_calls: scalarCap,
  max_output_tokens: scalarCap,
  temperature: scalarCap,
  top_p: scalarCap
}

const limitedString = (field: string, max: number) =>
  Schema.String.pipe(Schema.maxLength(max, { message: () => `${field} must be at most ${max} characters` }))

/** The JSON text length of an input (a string counts its characters). */
const inputLength = (input: unknown): number => typeof input === "string" ? input.length : JSON.stringify(input).length

/**
 * Body of POST /responses (spec). `model` and `input` are required; `input` is a non-empty string or a non-empty array
 * of input items. Field names the spec does not give follow the hosted Responses API (docs/ASSUMPTIONS.md):
 * `instructions` (system message), `include` ({@link includableValues}), `parallel_tool_calls` (no effect),
 * `prompt_cache_key` (cache routing key), `store` (no effect), `truncation` (only `disabled`), `max_tool_calls`
 * (0 to 2147483647), `max_output_tokens` (at least 1), `temperature` (0 to 2), `top_p` (0 to 1) and
 * `prompt_token_ids` (the pre-tokenized prompt, {@link PromptTokenIds}). Optional fields accept `null` as "not set".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CreateResponseRequest = Schema.Struct({
  model: Schema.propertySignature(
    Schema.String.pipe(
      Schema.minLength(1, { message: () => "model must not be empty" }),
      Schema.maxLength(requestLimits.modelLength, {
        message: () => `model must be at most ${requestLimits.modelLength} characters`
      })
    )
  ).annotations({ missingMessage: () => "model is required" }),
  input: Schema.propertySignature(
    Schema.Union(
      Schema.String.pipe(Schema.minLength(1, { message: () => "input must have at least 1 character" })),
      Schema.Array(InputItem).pipe(Schema.minItems(1, { message: () => "input must have at least 1 item" }))
    ).pipe(Schema.filter((input) => inputLength(input) <= requestLimits.inputJsonLength, {
      message: () => `input must be at most ${requestLimits.inputJsonLength} characters as JSON text (8 MiB)`,
      jsonSchema: {}
    }))
  ).annotations({
    missingMessage: () => "input is required: a non-empty string or a non-empty array of input items (with prompt_token_ids send a placeholder string)"
  }),
  stream: Nullable(Schema.Boolean),
  background: Nullable(Schema.Boolean),
  metadata: Nullable(
    // Every key is kept, `__proto__` included (Json.ObjectOf); the key length is checked below.
    ObjectOf(
      // Free text (Text.ts): a NUL or an unpaired surrogate is refused on every store, as `webhook_token` is kept in
      // a text column of the SQL stores.
      limitedString("a metadata value", requestLimits.metadataValueLength).pipe(
        Schema.filter((value) => Text.freeTextProblem("a metadata value", value) ?? true, {
          jsonSchema: { pattern: Text.freeTextPattern }
        })
      ),
      Schema.String.annotations({ jsonSchema: { maxLength: requestLimits.metadataKeyLength } })
    ).annotations({
      message: () => "metadata must be a map of string keys to string values"
    }).pipe(
      Schema.filter((metadata) => Object.keys(metadata).length <= requestLimits.metadataPairs, {
        message: () => `metadata must have at most ${requestLimits.metadataPairs} pairs`,
        jsonSchema: { maxProperties: requestLimits.metadataPairs }
      }),
      Schema.filter((metadata) => {
        const long = Object.keys(metadata).find((key) => key.length > requestLimits.metadataKeyLength)
        return long === undefined ||
          { path: [long], message: `a metadata key must be at most ${requestLimits.metadataKeyLength} characters` }
      }, { jsonSchema: {} })
    )
  ),
  instructions: Nullable(Schema.String),
  include: Nullable(Schema.Array(Includable)),
  parallel_tool_calls: Nullable(Schema.Boolean),
  prompt_cache_key: Nullable(limitedString("prompt_cache_key", requestLimits.promptCacheKeyLength)),
  store: Nullable(Schema.Boolean),
  truncation: Nullable(Schema.Literal("disabled").annotations({ message: () => "truncation must be \"disabled\"" })),
  max_tool_calls: Nullable(Schema.Int.pipe(Schema.between(0, maxTokenId, {
    message: () => "max_tool_calls must be an integer from 0 to 2147483647"
  }))),
  max_output_tokens: Nullable(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, {
    message: () => "max_output_tokens must be an integer of at least 1"
  }))),
  temperature: Nullable(Schema.Number.pipe(Schema.between(0, 2, { message: () => "temperature must be from 0 to 2" }))),
  top_p: Nullable(Schema.Number.pipe(Schema.between(0, 1, { message: () => "top_p must be from 0 to 1" }))),
  prompt_token_ids: Schema.optional(PromptTokenIds),
  user: Nullable(limitedString("user", requestLimits.userLength)),
  tools: Nullable(Schema.Array(JsonValue).pipe(Schema.maxItems(requestLimits.tools, {
    message: () => `tools must have at most ${requestLimits.tools} items`
  }))),
  tool_choice: Nullable(JsonValue),
  reasoning: Nullable(JsonValue),
  text: Nullable(JsonValue)
}).annotations({
  title: "CreateResponseRequest",
  examples: [{ model: "boxkit-local", input: "Say hello." }],
  // Two rules the service checks beside the fields' own, for JSON Schema: no reserved metadata key, and a background
  // request is not streamed (spec: POST /responses).
  jsonSchema: {
    allOf: [
      {
        not: {
          required: ["metadata"],
          properties: {
            metadata: {
              type: "object",
              anyOf: reservedMetadataKeys.map((key) => ({ required: [key], properties: { [key]: { type: "string" } } }))
            }
          }
        }
      },
      {
        not: {
          required: ["background", "stream"],
          properties: { background: { const: true }, stream: { const: true } }
        }
      }
    ]
  }
})
/** Body of POST /responses. @since 0.1.0 @category Models */
export type CreateResponseRequest = typeof CreateResponseRequest.Type

/**
 * One event of a streamed response (`stream: true`, Server-Sent Events): its `type` (`response.created`,
 * `response.in_progress`, `response.output_item.added`, `response.content_part.added`,
 * `response.reasoning_text.delta`, `response.reasoning_text.done`, `response.output_text.delta`,
 * `response.output_text.done`, `response.content_part.done`, `response.output_item.done`, then one of
 * {@link terminalEventTypes}), its `sequence_number` (0, 1, 2, ...) and the event's other fields (`delta` on text
 * deltas, `response` on lifecycle events), as the hosted Responses API shapes them.
 *
 * Source: spec "POST {api_url}/responses" (stream); docs/ASSUMPTIONS.md "Model responses" (event names).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const StreamEvent = Schema.Struct(
  { type: Schema.String, sequence_number: Schema.Int },
  { key: Schema.String, value: JsonValue }
)
/** One event of a streamed response. @since 0.1.0 @category Models */
export type StreamEvent = typeof StreamEvent.Type

/**
 * The event types that end a stream; each carries the final Model response object in `response`.
 *
 * @since 0.1.0
 * @category Constants
 */
export const terminalEventTypes: ReadonlyArray<string> = ["response.completed", "response.incomplete", "response.failed"]
