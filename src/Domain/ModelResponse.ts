/**
 * Model responses: the asynchronous text-generation area modelled on a hosted Responses-style API.
 *
 * Source: spec "Model response object", "POST {api_url}/responses", "Events / Completion webhook". Field names the
 * spec does not give are the hosted Responses API's (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Model response statuses (spec: Model response object). */
export const ResponseStatus = Schema.Literal("queued", "in_progress", "failed", "completed", "incomplete", "cancelled")
/** A model response status. */
export type ResponseStatus = typeof ResponseStatus.Type

/** True for a status after which nothing changes. */
export const isFinished = (status: ResponseStatus): boolean =>
  status === "completed" || status === "incomplete" || status === "failed" || status === "cancelled"

const TokenDetails = Schema.Struct({ cached_tokens: Schema.Int, reasoning_tokens: Schema.Int })

/** Token usage: all integers (tokens). `prompt_tokens`/`completion_tokens` mirror input/output. Source: spec. */
export const Usage = Schema.Struct({
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  total_tokens: Schema.Int,
  prompt_tokens: Schema.Int,
  completion_tokens: Schema.Int,
  input_tokens_details: TokenDetails,
  output_tokens_details: TokenDetails
})
/** Token usage. */
export type Usage = typeof Usage.Type

/** The `metadata` keys the service writes itself; a request that supplies either is refused with 400. */
export const reservedMetadataKeys = ["supercached_input_tokens", "supercache_write_input_tokens"] as const

/** Completion windows: `asap`, `balanced`, `flex`. A background request uses `balanced` or `flex`. */
export const CompletionWindow = Schema.Literal("asap", "balanced", "flex")
/** A completion window. */
export type CompletionWindow = typeof CompletionWindow.Type

/** The completion-window header (its name is not shown by the spec; docs/ASSUMPTIONS.md). */
export const completionWindowHeader = "x-completion-window"

/**
 * The Model response object (spec). `output`, `error`, `incomplete_details`, `reasoning` and `tools` items are not
 * shown by the spec and decode as JSON; boxkit's local service writes the hosted API's shapes.
 */
export class ModelResponse extends Schema.Class<ModelResponse>("ModelResponse")({
  id: Schema.String,
  object: Schema.Literal("response"),
  created_at: Schema.Int,
  status: ResponseStatus,
  model: Schema.String,
  usage: Schema.optional(Schema.NullOr(Usage)),
  metadata: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), {
    default: () => ({})
  }),
  input: Schema.optional(Schema.Unknown),
  output: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] }),
  error: Schema.optional(Schema.NullOr(Schema.Unknown)),
  incomplete_details: Schema.optional(Schema.NullOr(Schema.Unknown)),
  max_output_tokens: Schema.optional(Schema.NullOr(Schema.Int)),
  reasoning: Schema.optional(Schema.NullOr(Schema.Unknown)),
  text: Schema.optional(Schema.Unknown),
  store: Schema.optional(Schema.Boolean),
  temperature: Schema.optional(Schema.NullOr(Schema.Number)),
  top_p: Schema.optional(Schema.NullOr(Schema.Number)),
  parallel_tool_calls: Schema.optional(Schema.Boolean),
  tool_choice: Schema.optional(Schema.Unknown),
  tools: Schema.optional(Schema.Array(Schema.Unknown)),
  truncation: Schema.optional(Schema.NullOr(Schema.String)),
  user: Schema.optional(Schema.NullOr(Schema.String))
}) {}

/** The text of every `output_text` part of a response's message items, joined. */
export const outputText = (response: ModelResponse): string =>
  response.output.flatMap((item: any) =>
    item?.type === "message" && Array.isArray(item.content)
      ? item.content.filter((part: any) => part?.type === "output_text").map((part: any) => String(part.text))
      : []
  ).join("")

const ContentPart = Schema.Struct({ type: Schema.String }, { key: Schema.String, value: Schema.Unknown })

/** An input item: a message with a role and string or part-array content, or another typed item. */
export const InputItem = Schema.Struct(
  {
    type: Schema.optional(Schema.String),
    role: Schema.optional(Schema.String),
    content: Schema.optional(Schema.Union(Schema.String, Schema.Array(ContentPart)))
  },
  { key: Schema.String, value: Schema.Unknown }
)

/**
 * Body of POST /responses. Field names the spec does not give follow the hosted Responses API
 * (docs/ASSUMPTIONS.md): `instructions`, `include`, `parallel_tool_calls`, `prompt_cache_key`, `store`,
 * `truncation` (only `disabled`), `max_tool_calls` (0 to 2147483647), `max_output_tokens` (at least 1),
 * `temperature` (0 to 2), `top_p` (0 to 1), and `prompt_token_ids` (the pre-tokenized prompt).
 */
export const CreateResponseRequest = Schema.Struct({
  model: Schema.String.pipe(Schema.minLength(1, { message: () => "model must not be empty" })),
  input: Schema.Union(
    Schema.String.pipe(Schema.minLength(1, { message: () => "input must have at least 1 character" })),
    Schema.Array(InputItem).pipe(Schema.minItems(1, { message: () => "input must have at least 1 item" }))
  ),
  stream: Schema.optional(Schema.Boolean),
  background: Schema.optional(Schema.Boolean),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  instructions: Schema.optional(Schema.NullOr(Schema.String)),
  include: Schema.optional(Schema.Array(Schema.String)),
  parallel_tool_calls: Schema.optional(Schema.Boolean),
  prompt_cache_key: Schema.optional(Schema.String),
  store: Schema.optional(Schema.Boolean),
  truncation: Schema.optional(Schema.Literal("disabled")),
  max_tool_calls: Schema.optional(Schema.Int.pipe(Schema.between(0, 2147483647))),
  max_output_tokens: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))),
  temperature: Schema.optional(Schema.Number.pipe(Schema.between(0, 2))),
  top_p: Schema.optional(Schema.Number.pipe(Schema.between(0, 1))),
  prompt_token_ids: Schema.optional(
    Schema.Array(Schema.Int.pipe(Schema.between(0, 2147483647))).pipe(
      Schema.minItems(1),
      Schema.maxItems(2000000)
    )
  ),
  user: Schema.optional(Schema.String),
  tools: Schema.optional(Schema.Array(Schema.Unknown)),
  tool_choice: Schema.optional(Schema.Unknown),
  reasoning: Schema.optional(Schema.Unknown),
  text: Schema.optional(Schema.Unknown)
}).annotations({ title: "CreateResponseRequest" })
/** Body of POST /responses. */
export type CreateResponseRequest = typeof CreateResponseRequest.Type
