/**
 * A {@link LanguageModel} backed by any OpenAI-compatible upstream (a local inference server such as vLLM, llama.cpp
 * or Ollama, or a hosted API), so the local service answers with real text.
 *
 * - A prompt of messages goes to `POST {url}/chat/completions` with `stream: true`; `developer` messages are sent as
 *   `system`; image parts as `image_url` parts, inline PDFs as `file` parts (`file_data`); text-only messages as plain
 *   strings. `max_output_tokens` is sent as `max_tokens`, with `temperature`, `top_p` and `reasoning_effort` when set.
 * - A pre-tokenized prompt goes verbatim to `POST {url}/completions` as `prompt: [ids...]` (no templating).
 * - The answer's Server-Sent Events are parsed with `@effect/experimental` Sse: `choices[0].delta.content` (or `text`)
 *   is answer text, `delta.reasoning_content` / `delta.reasoning` is reasoning text, `finish_reason: "length"` means the
 *   upstream stopped at `max_tokens`; `data: [DONE]` ends it. An upstream that ignores `stream` and answers one JSON
 *   object is read too. Output tokens are counted with the o200k tokenizer.
 * - The API key comes from the environment ({@link apiKeyEnv}) as `Redacted` and is sent as `Authorization: Bearer`.
 *   A non-2xx answer, an `error` event, a network error or no answer headers within `headersTimeout` fail the response
 *   with `LanguageModelError`.
 *
 * Source: README "The local box service" (`--model-upstream`); spec "POST {api_url}/responses" (pre-tokenized prompt
 * "forwarded verbatim with no templating"); docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Sse } from "@effect/experimental"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Config, Duration, Effect, Layer, Option, Redacted, Stream } from "effect"
import {
  countTokens,
  type GenerateRequest,
  LanguageModel,
  LanguageModelError,
  type ModelChunk,
  type PromptMessage
} from "./LanguageModel.js"
import * as Tokenizer from "./Tokenizer.js"

/**
 * The environment variable holding the upstream's API key (optional: local servers often need none).
 *
 * @since 0.1.0
 * @category Constants
 */
export const apiKeyEnv = "BOXKIT_MODEL_UPSTREAM_API_KEY"

/** Settings of the upstream adapter. @since 0.1.0 @category Models */
export interface UpstreamSettings {
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8000/v1` (no trailing path). */
  readonly url: string
  /** Sent as `Authorization: Bearer <key>` when set; never logged. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Model name sent upstream instead of the request's `model` (default: the request's). */
  readonly model?: string | undefined
  /** How long to wait for the upstream's answer headers (default 120 s). */
  readonly headersTimeout?: Duration.Duration | undefined
}

/** One message in the chat-completions shape. @since 0.1.0 @category Utils */
export const chatMessage = (message: PromptMessage): { readonly role: string; readonly content: unknown } => {
  const role = message.role === "developer" ? "system" : message.role
  if (message.parts.every((part) => part.type === "text")) {
    return { role, content: message.parts.map((part) => (part as { text: string }).text).join("\n") }
  }
  return {
    role,
    content: message.parts.map((part) =>
      part.type === "text"
        ? { type: "text", text: part.text }
        : part.type === "image"
        ? { type: "image_url", image_url: { url: part.url } }
        : { type: "file", file: { filename: part.filename, file_data: part.data } }
    )
  }
}

/** The upstream request for a generate request: its path and JSON body. @since 0.1.0 @category Utils */
export const upstreamRequest = (
  settings: Pick<UpstreamSettings, "model">,
  request: GenerateRequest
): { readonly path: "/chat/completions" | "/completions"; readonly body: Record<string, unknown> } => {
  const common: Record<string, unknown> = { model: settings.model ?? request.model, stream: true }
  if (request.maxOutputTokens !== undefined) common.max_tokens = request.maxOutputTokens
  if (request.temperature !== undefined) common.temperature = request.temperature
  if (request.topP !== undefined) common.top_p = request.topP
  if (request.promptTokenIds !== undefined) {
    return { path: "/completions", body: { ...common, prompt: request.promptTokenIds } }
  }
  if (request.reasoningEffort !== undefined) common.reasoning_effort = request.reasoningEffort
  return { path: "/chat/completions", body: { ...common, messages: request.messages.map(chatMessage) } }
}

const describe = (value: unknown): string => {
  if (typeof value === "string") return value
  if (typeof value === "object" && value !== null && "message" in value && typeof value.message === "string") {
    return value.message
  }
  return JSON.stringify(value)
}

/**
 * An upstream failure as callers see it: a generic message and a code; what happened (the upstream's address, its
 * answer) only in `detail`, which the service logs at debug level.
 *
 * @since 0.1.0
 * @category Errors
 */
export const upstreamFailure = (
  code: "upstream_unreachable" | "upstream_timeout" | "upstream_error" | "upstream_bad_answer",
  detail: string,
  status?: number
): LanguageModelError =>
  new LanguageModelError({
    code,
    detail,
    message: code === "upstream_unreachable"
      ? "The model upstream could not be reached."
      : code === "upstream_timeout"
      ? "The model upstream did not answer in time."
      : code === "upstream_error"
      ? `The model upstream refused the request${status !== undefined ? ` (HTTP ${status})` : ""}.`
      : "The model upstream sent an answer that could not be read."
  })

/**
 * The chunks of one parsed upstream message (a stream event's data, or a whole non-streamed answer). Fails with
 * `LanguageModelError` code `upstream_bad_answer` when `data` is not a JSON object, `upstream_error` when it holds an
 * `error` member the upstream sent.
 *
 * @since 0.1.0
 * @category Utils
 */
export const chunksOf = (data: unknown): Effect.Effect<Array<ModelChunk>, LanguageModelError> => {
  if (typeof data !== "object" || data === null) {
    return Effect.fail(upstreamFailure("upstream_bad_answer", "upstream sent an event that is not a JSON object"))
  }
  const record = data as Record<string, any>
  if (record.error !== undefined && record.error !== null) {
    return Effect.fail(upstreamFailure("upstream_error", `upstream error: ${describe(record.error)}`))
  }
  const choice = Array.isArray(record.choices) ? record.choices[0] : undefined
  if (choice === undefined || choice === null) return Effect.succeed([])
  const chunks: Array<ModelChunk> = []
  const source = choice.delta ?? choice.message ?? {}
  const reasoning = source.reasoning_content ?? source.reasoning
  if (typeof reasoning === "string" && reasoning !== "") {
    chunks.push({ _tag: "Reasoning", text: reasoning, tokens: countTokens(reasoning) })
  }
  const text = typeof source.content === "string" ? source.content : typeof choice.text === "string" ? choice.text : ""
  if (text !== "") chunks.push({ _tag: "Text", text, tokens: countTokens(text) })
  if (choice.finish_reason === "length") chunks.push({ _tag: "Length" })
  return Effect.succeed(chunks)
}

const parseJson = (text: string): Effect.Effect<unknown, LanguageModelError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => upstreamFailure("upstream_bad_answer", `upstream sent invalid JSON: ${text.slice(0, 200)}`)
  })

/** Reads an upstream answer: SSE events, or one JSON object when the upstream did not stream. */
const readAnswer = (
  response: HttpClientResponse.HttpClientResponse
): Stream.Stream<ModelChunk, LanguageModelError> => {
  const contentType = response.headers["content-type"] ?? ""
  if (contentType.includes("application/json")) {
    return Stream.unwrap(response.text.pipe(
      Effect.mapError((error) => upstreamFailure("upstream_bad_answer", `upstream answer could not be read: ${error.message}`)),
      Effect.flatMap(parseJson),
      Effect.flatMap(chunksOf),
      Effect.map(Stream.fromIterable)
    ))
  }
  return response.stream.pipe(
    Stream.mapError((error) => upstreamFailure("upstream_bad_answer", `upstream stream broke: ${error.message}`)),
    Stream.decodeText(),
    Stream.pipeThroughChannel(Sse.makeChannel()),
    Stream.takeWhile((event) => event.data.trim() !== "[DONE]"),
    Stream.filter((event) => event.data.trim() !== ""),
    Stream.mapEffect((event) => Effect.flatMap(parseJson(event.data), chunksOf)),
    Stream.flattenIterables
  )
}

/**
 * The adapter as a `LanguageModel` implementation, using the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (settings: UpstreamSettings) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const base = settings.url.replace(/\/+$/, "")
    const headersTimeout = settings.headersTimeout ?? Duration.seconds(120)
    return LanguageModel.of({
      generate: (request) =>
        Stream.unwrapScoped(Effect.gen(function*() {
          // The answer's pieces are counted with the tokenizer (loaded once per process).
          yield* Tokenizer.load
          const { body, path } = upstreamRequest(settings, request)
          let httpRequest = HttpClientRequest.post(`${base}${path}`).pipe(
            HttpClientRequest.setHeader("accept", "text/event-stream"),
            HttpClientRequest.bodyUnsafeJson(body)
          )
          if (settings.apiKey !== undefined) httpRequest = HttpClientRequest.bearerToken(httpRequest, settings.apiKey)
          const response = yield* client.execute(httpRequest).pipe(
            Effect.mapError((error) =>
              upstreamFailure("upstream_unreachable", `upstream ${base}${path} could not be reached: ${error.message}`)
            ),
            Effect.timeoutFail({
              duration: headersTimeout,
              onTimeout: () =>
                upstreamFailure(
                  "upstream_timeout",
                  `upstream ${base}${path} did not answer within ${Duration.format(headersTimeout)}`
                )
            })
          )
          if (response.status < 200 || response.status >= 300) {
            const text = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
            return yield* Effect.fail(upstreamFailure(
              "upstream_error",
              `upstream ${base}${path} answered HTTP ${response.status}: ${text.slice(0, 300)}`,
              response.status
            ))
          }
          return readAnswer(response)
        }))
    })
  })

/**
 * The upstream adapter ({@link make}) as the local service's `LanguageModel`. Needs an `HttpClient`; the upstream's
 * failures are `LanguageModelError`s of the generated stream, not of the layer.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (settings: UpstreamSettings): Layer.Layer<LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel, make(settings))

/**
 * The adapter for `url`, with the API key read from the environment variable {@link apiKeyEnv} (optional). An
 * unreadable variable is a defect at start-up.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerFromEnv = (
  url: string,
  options: Omit<UpstreamSettings, "url" | "apiKey"> = {}
): Layer.Layer<LanguageModel, never, HttpClient.HttpClient> =>
  Layer.unwrapEffect(
    Config.option(Config.redacted(apiKeyEnv)).pipe(
      Effect.orDie,
      Effect.map((apiKey) =>
        layer({
          ...options,
          url,
          apiKey: Option.getOrUndefined(Option.filter(apiKey, (key) => Redacted.value(key) !== ""))
        })
      )
    )
  )
