/**
 * A create-response request checked and prepared for the engine: the rules of the request body that the schema
 * cannot express (input items and their roles, inline PDFs and images, text-only models, the completion window from
 * the body or the header, the webhook settings), turned into the prompt the model runs. Every violation is a 400
 * naming the field.
 *
 * Source: spec "POST {api_url}/responses" (request fields, input items, completion window); docs/ASSUMPTIONS.md
 * "Model responses".
 *
 * @since 0.1.0
 */
import { Effect, Redacted, Schema } from "effect"
import * as ApiError from "../../ApiError.js"
import * as ModelResponse from "../../Domain/ModelResponse.js"
import { messageText, type PromptMessage, type PromptPart, textMessage, tokenize } from "./LanguageModel.js"
import type { PromptCache } from "./PromptCache.js"
import { isWebhookUrl, redactUserinfo } from "./WebhookDelivery.js"

/** Models without image input (docs/ASSUMPTIONS.md): names starting with `boxkit-text`. Others are multimodal. */
export const isTextOnlyModel = (model: string): boolean => model.startsWith("boxkit-text")

/** The roles an input message may have. */
export const inputRoles = ["user", "assistant", "system", "developer"] as const

/**
 * A validated request: the request, its completion window (body over header), its webhook URL and token (null when
 * omitted or invalid: no webhook), and the prompt messages (instruction text first, as a system message).
 */
export interface Prepared {
  readonly request: ModelResponse.CreateResponseRequest
  readonly window: ModelResponse.CompletionWindow
  readonly webhookUrl: string | null
  readonly webhookToken: Redacted.Redacted<string> | null
  readonly messages: ReadonlyArray<PromptMessage>
}

const invalid = (message: string, param: string | null) => Effect.fail(ApiError.make.invalidRequest(message, param))

const pdfDataUrl = /^data:application\/pdf;base64,([A-Za-z0-9+/]+={0,2})$/
const imageDataUrl = /^data:image\/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+/]+={0,2}$/

/** True when `data` is a base64 `data:application/pdf` URL whose bytes start with the PDF signature `%PDF-`. */
export const isInlinePdf = (data: string): boolean => {
  const match = pdfDataUrl.exec(data)
  return match !== null && Buffer.from(match[1].slice(0, 12), "base64").toString("latin1").startsWith("%PDF-")
}

/** One input item as a prompt message, checking every part against the spec's input rules (400 naming the part). */
const itemMessage = (
  model: string,
  item: typeof ModelResponse.InputItem.Type,
  index: number
): Effect.Effect<PromptMessage, ApiError.InvalidRequestError> =>
  Effect.gen(function*() {
    const where = `input[${index}]`
    if (item.type === "item_reference") {
      return yield* invalid("Item references are unsupported in input; send the item's content instead.", `${where}.type`)
    }
    if (item.type !== undefined && item.type !== "message") {
      return yield* invalid(`Input items of type ${item.type} are unsupported; send message items.`, `${where}.type`)
    }
    const role = item.role ?? "user"
    if (!(inputRoles as ReadonlyArray<string>).includes(role)) {
      return yield* invalid(`Input role must be one of ${inputRoles.join(", ")}.`, `${where}.role`)
    }
    const typedRole = role as PromptMessage["role"]
    if (typeof item.content === "string") return textMessage(typedRole, item.content)
    if (item.content === undefined) return yield* invalid("A message item needs content.", `${where}.content`)
    if (item.content.length === 0) return yield* invalid("A message item needs at least 1 content part.", `${where}.content`)
    const parts: Array<PromptPart> = []
    for (const [partIndex, part] of item.content.entries()) {
      const param = `${where}.content[${partIndex}]`
      const fields = part as Record<string, unknown>
      switch (part.type) {
        case "input_text":
        case "output_text":
          if (typeof fields.text !== "string") return yield* invalid("A text part needs a text string.", `${param}.text`)
          parts.push({ type: "text", text: fields.text })
          break
        case "input_image": {
          if (isTextOnlyModel(model)) {
            return yield* invalid(`Model ${model} does not accept input_image; use a multimodal model.`, `${param}.type`)
          }
          if (fields.file_id !== undefined && fields.file_id !== null) {
            return yield* invalid("input_image by file_id is unsupported; send image_url.", `${param}.file_id`)
          }
          const url = fields.image_url
          if (typeof url !== "string" || !(isWebhookUrl(url) || imageDataUrl.test(url))) {
            return yield* invalid(
              "input_image needs image_url: an http(s) URL or a data:image/...;base64,... URL.",
              `${param}.image_url`
            )
          }
          parts.push({ type: "image", url })
          break
        }
        case "input_file": {
          if (fields.file_id !== undefined && fields.file_id !== null) {
            return yield* invalid("input_file by file_id is unsupported; send an inline PDF in file_data.", `${param}.file_id`)
          }
          if (fields.file_url !== undefined && fields.file_url !== null) {
            return yield* invalid("input_file by file_url is unsupported; send an inline PDF in file_data.", `${param}.file_url`)
          }
          if (typeof fields.file_data !== "string" || !isInlinePdf(fields.file_data)) {
            return yield* invalid(
              "input_file must be an inline PDF: file_data as data:application/pdf;base64,... of a PDF document.",
              `${param}.file_data`
            )
          }
          parts.push({
            type: "file",
            filename: typeof fields.filename === "string" && fields.filename !== "" ? fields.filename : "document.pdf",
            data: fields.file_data
          })
          break
        }
        case "input_audio":
          return yield* invalid("Audio input is unsupported.", `${param}.type`)
        default:
          return yield* invalid(`Content parts of type ${part.type} are unsupported.`, `${param}.type`)
      }
    }
    return { role: typedRole, parts }
  })

/**
 * Checks a create request beyond its schema: reserved metadata keys (400), `stream` with `background` (400), the
 * completion window (`metadata.completion_window` over the header; 400 when not asap, balanced or flex; a background
 * request uses balanced (default) or flex, so asap is a 400), the webhook URL (omitted or invalid: no webhook, nothing
 * else changes), the input items and parts, and builds the prompt (instructions first, as a system message).
 */
export const prepare = (
  request: ModelResponse.CreateResponseRequest,
  headerWindow: ModelResponse.CompletionWindow | undefined
): Effect.Effect<Prepared, ApiError.InvalidRequestError> =>
  Effect.gen(function*() {
    const metadata = request.metadata ?? {}
    for (const key of ModelResponse.reservedMetadataKeys) {
      if (key in metadata) {
        return yield* invalid(`metadata.${key} is reserved: the service writes it.`, `metadata.${key}`)
      }
    }
    if (request.background === true && request.stream === true) {
      return yield* invalid("A background request cannot be streamed: set stream to false or background to false.", "stream")
    }
    const bodyWindow = metadata.completion_window
    if (bodyWindow !== undefined && !Schema.is(ModelResponse.CompletionWindow)(bodyWindow)) {
      return yield* invalid("metadata.completion_window must be asap, balanced or flex.", "metadata.completion_window")
    }
    const window: ModelResponse.CompletionWindow = bodyWindow ?? headerWindow ??
      (request.background === true ? "balanced" : "asap")
    if (request.background === true && window === "asap") {
      return yield* invalid(
        "A background request uses a balanced or flex completion window, not asap.",
        bodyWindow !== undefined ? "metadata.completion_window" : ModelResponse.completionWindowHeader
      )
    }
    const messages: Array<PromptMessage> = []
    if (typeof request.instructions === "string" && request.instructions !== "") {
      messages.push(textMessage("system", request.instructions))
    }
    if (typeof request.input === "string") {
      messages.push(textMessage("user", request.input))
    } else {
      for (const [index, item] of request.input.entries()) {
        messages.push(yield* itemMessage(request.model, item, index))
      }
    }
    return {
      request,
      window,
      webhookUrl: isWebhookUrl(metadata.completion_webhook) ? metadata.completion_webhook : null,
      webhookToken: metadata.webhook_token !== undefined && metadata.webhook_token !== ""
        ? Redacted.make(metadata.webhook_token)
        : null,
      messages
    }
  })

/**
 * The object a new response starts as (`status` queued or in_progress): the request's fields with the API's defaults,
 * its metadata without `webhook_token`, no output and no usage yet.
 */
export const initialObject = (
  id: string,
  createdAt: number,
  prepared: Prepared,
  status: ModelResponse.ResponseStatus
): ModelResponse.ModelResponse => {
  const request = prepared.request
  const { webhook_token: _token, ...given } = request.metadata ?? {}
  // The webhook URL is echoed without its credentials (they stay with the delivery).
  const metadata: Record<string, string> = typeof given.completion_webhook === "string"
    ? { ...given, completion_webhook: redactUserinfo(given.completion_webhook) }
    : given
  return new ModelResponse.ModelResponse({
    id,
    object: "response",
    created_at: createdAt,
    status,
    model: request.model,
    usage: null,
    metadata,
    input: request.input,
    output: [],
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    background: request.background ?? false,
    max_output_tokens: request.max_output_tokens ?? null,
    max_tool_calls: request.max_tool_calls ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    reasoning: request.reasoning ?? null,
    text: request.text ?? { format: { type: "text" } },
    store: request.store ?? true,
    temperature: request.temperature ?? 1,
    top_p: request.top_p ?? 1,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    tool_choice: request.tool_choice ?? "auto",
    tools: request.tools ?? [],
    truncation: request.truncation ?? "disabled",
    user: request.user ?? null
  }, true)
}

/**
 * Usage of a finished response: input counted with the tokenizer (or the pre-tokenized prompt's length), with
 * what the prompt cache of the organization had of it.
 */
export const usageOf = (
  promptCache: PromptCache,
  orgId: string,
  prepared: Prepared,
  outputTokens: number,
  reasoningTokens: number
) => {
  const prompt = prepared.request.prompt_token_ids ??
    tokenize(prepared.messages.map((message) => `${message.role}: ${messageText(message)}`).join("\n"))
  const cache = promptCache.lookupAndStore(orgId, prepared.request.prompt_cache_key ?? undefined, prompt)
  const usage: ModelResponse.Usage = {
    input_tokens: prompt.length,
    output_tokens: outputTokens,
    total_tokens: prompt.length + outputTokens,
    prompt_tokens: prompt.length,
    completion_tokens: outputTokens,
    input_tokens_details: { cached_tokens: cache.cached, reasoning_tokens: 0 },
    output_tokens_details: { cached_tokens: 0, reasoning_tokens: reasoningTokens }
  }
  return { usage, cache }
}
