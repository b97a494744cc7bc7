/**
 * The Responses area of the local service: validates a create request against every rule of the spec, builds the
 * prompt, runs the {@link LanguageModel}, counts usage with a real tokenizer (including cached prefix tokens under a
 * `prompt_cache_key`), stores the result, streams Responses events, and hands finished background results to the
 * completion webhook.
 *
 * Source: spec "POST {api_url}/responses", "Model response object", "Events / Completion webhook", Limits (result
 * retention). Field names the spec does not give: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Stream } from "effect"
import * as ApiError from "../ApiError.js"
import type { PrincipalShape } from "../Contract/Principal.js"
import * as ModelResponse from "../Domain/ModelResponse.js"
import { LanguageModel, type PromptMessage, tokenize } from "./LanguageModel.js"
import { LocalServiceConfig } from "./LocalServiceConfig.js"
import { type ResponseRecord, Responses } from "./Repositories.js"
import { isWebhookUrl, WebhookDelivery } from "./WebhookDelivery.js"

/** Models without image input (docs/ASSUMPTIONS.md): names starting with `boxkit-text`. Others are multimodal. */
export const isTextOnlyModel = (model: string): boolean => model.startsWith("boxkit-text")

/** A validated request: its completion window and webhook, and the prompt to send. */
export interface Prepared {
  readonly request: ModelResponse.CreateResponseRequest
  readonly window: ModelResponse.CompletionWindow
  readonly webhookUrl: string | null
  readonly webhookToken: Redacted.Redacted<string> | null
  readonly messages: ReadonlyArray<PromptMessage>
}

const invalid = (message: string, param: string | null) => Effect.fail(ApiError.make.invalidRequest(message, param))

/** The text of one input item's content, checking every part against the spec's input rules. */
const itemText = (
  model: string,
  item: typeof ModelResponse.InputItem.Type,
  index: number
): Effect.Effect<PromptMessage, ApiError.InvalidRequestError> =>
  Effect.gen(function*() {
    const where = `input[${index}]`
    if (item.type === "item_reference") {
      return yield* invalid("Item references are unsupported in input; send the item's content instead.", where)
    }
    if (item.type !== undefined && item.type !== "message") {
      return yield* invalid(`Input items of type ${item.type} are unsupported; send message items.`, `${where}.type`)
    }
    const role = item.role ?? "user"
    if (typeof item.content === "string") return { role, text: item.content }
    if (item.content === undefined) return yield* invalid("A message item needs content.", `${where}.content`)
    const texts: Array<string> = []
    for (const [partIndex, part] of item.content.entries()) {
      const param = `${where}.content[${partIndex}]`
      const fields = part as Record<string, unknown>
      switch (part.type) {
        case "input_text":
        case "output_text":
          if (typeof fields.text !== "string") return yield* invalid("A text part needs a text string.", `${param}.text`)
          texts.push(fields.text)
          break
        case "input_image":
          if (isTextOnlyModel(model)) {
            return yield* invalid(`Model ${model} does not accept input_image; use a multimodal model.`, param)
          }
          texts.push("[image]")
          break
        case "input_file":
          if (fields.file_id !== undefined || fields.file_url !== undefined) {
            return yield* invalid("input_file by file_id or file_url is unsupported; send an inline PDF in file_data.", param)
          }
          if (typeof fields.file_data !== "string" || !/^data:application\/pdf;base64,/.test(fields.file_data)) {
            return yield* invalid(
              "input_file must be an inline PDF: file_data as data:application/pdf;base64,...",
              `${param}.file_data`
            )
          }
          texts.push(`[file ${typeof fields.filename === "string" ? fields.filename : "document.pdf"}]`)
          break
        case "input_audio":
          return yield* invalid("Audio input is unsupported.", param)
        default:
          return yield* invalid(`Content parts of type ${part.type} are unsupported.`, `${param}.type`)
      }
    }
    return { role, text: texts.join("\n") }
  })

/**
 * Checks a create request: reserved metadata keys (400), stream with background (400), the completion window
 * (metadata over header; a background request uses balanced or flex), the webhook URL (an invalid one is ignored),
 * the input parts, and builds the prompt (instructions first, as a system message).
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
    if (bodyWindow !== undefined && !["asap", "balanced", "flex"].includes(bodyWindow)) {
      return yield* invalid("metadata.completion_window must be asap, balanced or flex.", "metadata.completion_window")
    }
    const window = (bodyWindow ?? headerWindow ?? (request.background === true ? "balanced" : "asap")) as
      ModelResponse.CompletionWindow
    if (request.background === true && window === "asap") {
      return yield* invalid(
        "A background request uses a balanced or flex completion window, not asap.",
        bodyWindow !== undefined ? "metadata.completion_window" : ModelResponse.completionWindowHeader
      )
    }
    const messages: Array<PromptMessage> = []
    if (request.instructions) messages.push({ role: "system", text: request.instructions })
    if (typeof request.input === "string") {
      messages.push({ role: "user", text: request.input })
    } else {
      for (const [index, item] of request.input.entries()) {
        messages.push(yield* itemText(request.model, item, index))
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

/** One Responses streaming event: its `type`, `sequence_number` and the event's fields. */
export interface StreamEvent {
  readonly type: string
  readonly sequence_number: number
  readonly [key: string]: unknown
}

/** Takes at most `count` elements; an infinite count takes all. */
const takeAtMost = (count: number) => <A, E>(stream: Stream.Stream<A, E>) =>
  Number.isFinite(count) ? Stream.take(stream, count) : stream

const hex32 = () => crypto.randomUUID().replace(/-/g, "")

/** The Responses engine of the local service. */
export class ResponseEngine extends Context.Tag("boxkit/server/ResponseEngine")<ResponseEngine, {
  /** Runs a foreground request to its end and returns the finished object (status `completed` or `incomplete`). */
  readonly foreground: (principal: PrincipalShape, prepared: Prepared) => Effect.Effect<ModelResponse.ModelResponse, ApiError.ServerError>
  /** Runs a foreground request as a stream of Responses events; the result is stored when the stream ends. */
  readonly stream: (principal: PrincipalShape, prepared: Prepared) => Effect.Effect<Stream.Stream<StreamEvent>>
  /** Accepts a background request: stores it `queued`, completes it later, then delivers the webhook. */
  readonly background: (principal: PrincipalShape, prepared: Prepared) => Effect.Effect<ModelResponse.ModelResponse>
  /**
   * Reads a response of the caller's organization. A finished result's first read starts its retention clock;
   * an expired one is gone (404).
   */
  readonly retrieve: (principal: PrincipalShape, id: string) => Effect.Effect<ModelResponse.ModelResponse, ApiError.NotFoundError>
}>() {}

/** The engine, with background work running in the layer's scope. */
export const layer = Layer.scoped(
  ResponseEngine,
  Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const model = yield* LanguageModel
    const responses = yield* Responses
    const webhooks = yield* WebhookDelivery
    const scope = yield* Effect.scope
    const retentionMillis = Duration.toMillis(config.responseRetention)
    /** Prompts seen per organization and cache key, for cached prefix tokens. */
    const promptCache = new Map<string, Array<ReadonlyArray<number>>>()

    const usageOf = (orgId: string, prepared: Prepared, outputTokens: number) => {
      const prompt = prepared.request.prompt_token_ids ??
        tokenize(prepared.messages.map((message) => `${message.role}: ${message.text}`).join("\n"))
      let cached = 0
      const cacheKey = prepared.request.prompt_cache_key
      if (cacheKey !== undefined) {
        const id = `${orgId}\u0000${cacheKey}`
        const seen = promptCache.get(id) ?? []
        for (const previous of seen) {
          let common = 0
          const limit = Math.min(previous.length, prompt.length)
          while (common < limit && previous[common] === prompt[common]) common++
          cached = Math.max(cached, common)
        }
        promptCache.set(id, [prompt, ...seen].slice(0, 16))
      }
      const usage: ModelResponse.Usage = {
        input_tokens: prompt.length,
        output_tokens: outputTokens,
        total_tokens: prompt.length + outputTokens,
        prompt_tokens: prompt.length,
        completion_tokens: outputTokens,
        input_tokens_details: { cached_tokens: cached, reasoning_tokens: 0 },
        output_tokens_details: { cached_tokens: 0, reasoning_tokens: 0 }
      }
      return {
        usage,
        supercached: cached,
        supercacheWrite: cacheKey === undefined ? 0 : prompt.length - cached
      }
    }

    const baseObject = (id: string, createdAt: number, prepared: Prepared, status: ModelResponse.ResponseStatus) => {
      const { completion_webhook: _webhook, webhook_token: _token, ...metadata } = prepared.request.metadata ?? {}
      const request = prepared.request
      return new ModelResponse.ModelResponse({
        id,
        object: "response",
        created_at: createdAt,
        status,
        model: request.model,
        usage: null,
        metadata: _webhook !== undefined ? { ...metadata, completion_webhook: _webhook } : metadata,
        input: request.input,
        output: [],
        error: null,
        incomplete_details: null,
        max_output_tokens: request.max_output_tokens ?? null,
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
      })
    }

    const messageItem = (id: string, text: string, status: string) => ({
      type: "message",
      id: `msg_${id.slice(5)}`,
      status,
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [] }]
    })

    /** Generates the output pieces, stopping at max_output_tokens. */
    const generate = (prepared: Prepared) =>
      model.generate({
        model: prepared.request.model,
        messages: prepared.messages,
        promptTokenIds: prepared.request.prompt_token_ids,
        maxOutputTokens: prepared.request.max_output_tokens,
        temperature: prepared.request.temperature,
        topP: prepared.request.top_p
      })

    const finish = (
      principal: PrincipalShape,
      base: ModelResponse.ModelResponse,
      prepared: Prepared,
      pieces: ReadonlyArray<string>,
      truncated: boolean
    ): ModelResponse.ModelResponse => {
      const accounting = usageOf(principal.organizationOfUser ?? principal.keyId, prepared, pieces.length)
      const status = truncated ? "incomplete" : "completed"
      return new ModelResponse.ModelResponse({
        ...base,
        status,
        usage: accounting.usage,
        metadata: {
          ...base.metadata,
          supercached_input_tokens: String(accounting.supercached),
          supercache_write_input_tokens: String(accounting.supercacheWrite)
        },
        output: [messageItem(base.id, pieces.join(""), status)],
        incomplete_details: truncated ? { reason: "max_output_tokens" } : null
      })
    }

    const failed = (base: ModelResponse.ModelResponse, message: string) =>
      new ModelResponse.ModelResponse({ ...base, status: "failed", error: { code: "server_error", message } })

    const collect = (principal: PrincipalShape, prepared: Prepared, base: ModelResponse.ModelResponse) =>
      Effect.gen(function*() {
        const limit = prepared.request.max_output_tokens ?? Number.POSITIVE_INFINITY
        const pieces = yield* generate(prepared).pipe(takeAtMost(limit + 1), Stream.runCollect)
        const all = Array.from(pieces)
        const truncated = all.length > limit
        return finish(principal, base, prepared, truncated ? all.slice(0, limit) : all, truncated)
      })

    const store = (principal: PrincipalShape, prepared: Prepared, object: ModelResponse.ModelResponse, delivered: number | null) =>
      responses.insert({
        id: object.id,
        orgId: principal.organizationOfUser ?? "",
        keyId: principal.keyId,
        object,
        webhookUrl: prepared.webhookUrl,
        webhookToken: prepared.webhookToken,
        firstDeliveredAtMillis: delivered
      })

    const now = Effect.map(Clock.currentTimeMillis, (millis) => Math.floor(millis / 1000))

    const retrieve = (principal: PrincipalShape, id: string) =>
      Effect.gen(function*() {
        const notFound = ApiError.make.notFound(`No response ${id}, or its result expired.`, "response_id")
        const found = yield* responses.get(id)
        if (Option.isNone(found) || found.value.orgId !== (principal.organizationOfUser ?? "")) {
          return yield* Effect.fail(notFound)
        }
        const record = found.value
        const nowMillis = yield* Clock.currentTimeMillis
        if (record.firstDeliveredAtMillis !== null && nowMillis >= record.firstDeliveredAtMillis + retentionMillis) {
          yield* responses.remove(id)
          return yield* Effect.fail(notFound)
        }
        if (ModelResponse.isFinished(record.object.status) && record.firstDeliveredAtMillis === null) {
          yield* responses.update(id, (current) => ({ ...current, firstDeliveredAtMillis: nowMillis }))
        }
        return record.object
      })

    const deliverWebhook = (record: ResponseRecord) =>
      record.webhookUrl === null
        ? Effect.void
        : webhooks.deliver({
          responseId: record.id,
          url: record.webhookUrl,
          token: record.webhookToken,
          body: ModelResponse.ModelResponse.make(record.object)
        })

    return {
      foreground: (principal, prepared) =>
        Effect.gen(function*() {
          const base = baseObject(`resp_${hex32()}`, yield* now, prepared, "in_progress")
          const result = yield* collect(principal, prepared, base).pipe(
            Effect.catchTag("LanguageModelError", (error) => Effect.succeed(failed(base, error.message)))
          )
          yield* store(principal, prepared, result, yield* Clock.currentTimeMillis)
          return result
        }),
      stream: (principal, prepared) =>
        Effect.gen(function*() {
          const base = baseObject(`resp_${hex32()}`, yield* now, prepared, "in_progress")
          const limit = prepared.request.max_output_tokens ?? Number.POSITIVE_INFINITY
          const itemId = `msg_${base.id.slice(5)}`
          let sequence = 0
          const event = (type: string, fields: Record<string, unknown>): StreamEvent => ({
            type,
            sequence_number: sequence++,
            ...fields
          })
          const pieces: Array<string> = []
          let truncated = false
          const encoded = (object: ModelResponse.ModelResponse) => ModelResponse.ModelResponse.make(object)
          const head = Stream.suspend(() =>
            Stream.make(
              event("response.created", { response: encoded(base) }),
              event("response.in_progress", { response: encoded(base) }),
              event("response.output_item.added", {
                output_index: 0,
                item: { type: "message", id: itemId, status: "in_progress", role: "assistant", content: [] }
              }),
              event("response.content_part.added", {
                item_id: itemId,
                output_index: 0,
                content_index: 0,
                part: { type: "output_text", text: "", annotations: [] }
              })
            )
          )
          const deltas = generate(prepared).pipe(
            takeAtMost(limit + 1),
            Stream.filter((piece) => {
              if (pieces.length >= limit) {
                truncated = true
                return false
              }
              pieces.push(piece)
              return true
            }),
            Stream.map((delta) =>
              event("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta })
            )
          )
          const tail = Stream.unwrap(Effect.gen(function*() {
            const result = finish(principal, base, prepared, pieces, truncated)
            yield* store(principal, prepared, result, yield* Clock.currentTimeMillis)
            const text = pieces.join("")
            return Stream.make(
              event("response.output_text.done", { item_id: itemId, output_index: 0, content_index: 0, text }),
              event("response.content_part.done", {
                item_id: itemId,
                output_index: 0,
                content_index: 0,
                part: { type: "output_text", text, annotations: [] }
              }),
              event("response.output_item.done", { output_index: 0, item: messageItem(base.id, text, result.status) }),
              event(result.status === "completed" ? "response.completed" : "response.incomplete", {
                response: encoded(result)
              })
            )
          }))
          return Stream.concat(head, Stream.concat(deltas, tail)).pipe(
            Stream.catchAll((error) =>
              Stream.make(event("response.failed", { response: encoded(failed(base, error.message)) }))
            )
          )
        }),
      background: (principal, prepared) =>
        Effect.gen(function*() {
          const queued = baseObject(`resp_${hex32()}`, yield* now, prepared, "queued")
          yield* store(principal, prepared, queued, null)
          const process = Effect.gen(function*() {
            yield* Effect.sleep(config.backgroundDelay)
            const inProgress = new ModelResponse.ModelResponse({ ...queued, status: "in_progress" })
            yield* responses.update(queued.id, (record) => ({ ...record, object: inProgress }))
            const result = yield* collect(principal, prepared, inProgress).pipe(
              Effect.catchTag("LanguageModelError", (error) => Effect.succeed(failed(inProgress, error.message)))
            )
            const updated = yield* responses.update(queued.id, (record) => ({ ...record, object: result }))
            if (Option.isSome(updated) && result.status !== "failed") yield* deliverWebhook(updated.value)
          }).pipe(Effect.catchAllCause((cause) => Effect.logError("background response failed", cause)))
          yield* Effect.forkIn(process, scope)
          return queued
        }),
      retrieve
    }
  })
)
