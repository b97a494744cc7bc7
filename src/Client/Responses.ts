/**
 * Model responses: create (foreground), submit (background), stream (Server-Sent Events parsed with
 * `@effect/experimental` Sse into a typed `Stream` of events), retrieve, and wait for completion (polling on a
 * Schedule with a deadline).
 *
 * Source: spec "POST {api_url}/responses", "Model response object", "Events / Completion webhook" (rule 3: process a
 * finished result once and stop polling; rule 7: results can expire, then 404); field names and event shapes:
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Sse } from "@effect/experimental"
import { HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Option, Redacted, Schema, Stream } from "effect"
import { IdempotencyKeyHeader } from "../Contract/Headers.js"
import { ResponseId } from "../Domain/Ids.js"
import * as ModelResponse from "../Domain/ModelResponse.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { pollUntil } from "./Polling.js"
import { type ClientFailure, normalizeError, type OperationOptions, Transport, validate } from "./Transport.js"

/**
 * One event of a streamed response (`ModelResponse.StreamEvent`, the schema of the domain).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const StreamEvent = ModelResponse.StreamEvent
/** One event of a streamed response. @since 0.1.0 @category Models */
export type StreamEvent = ModelResponse.StreamEvent

/** The event types that end a stream (`ModelResponse.terminalEventTypes`). @since 0.1.0 @category Constants */
export const terminalEventTypes: ReadonlyArray<string> = ModelResponse.terminalEventTypes

/**
 * The Model response object an event carries in `response` (lifecycle events), decoded.
 *
 * @since 0.1.0
 * @category Utils
 */
export const responseOf = (event: StreamEvent): Option.Option<ModelResponse.ModelResponse> =>
  Schema.decodeUnknownOption(ModelResponse.ModelResponse)(event.response)

/** The text of a stream's `response.output_text.delta` events, joined in order. @since 0.1.0 @category Utils */
export const deltaText = (events: Iterable<StreamEvent>): string => {
  let text = ""
  for (const event of events) {
    if (event.type === "response.output_text.delta" && typeof event.delta === "string") text += event.delta
  }
  return text
}

/**
 * The result of a response is gone: it expired (10 minutes after its first successful delivery) or never existed.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ResponseExpiredError extends Schema.TaggedError<ResponseExpiredError>()("ResponseExpiredError", {
  response_id: Schema.String,
  message: Schema.String
}) {}

/**
 * Waiting for a response ran past its deadline; `lastStatus` is the last status observed (`unknown` if none).
 *
 * @since 0.1.0
 * @category Errors
 */
export class ResponseWaitTimeoutError extends Schema.TaggedError<ResponseWaitTimeoutError>()("ResponseWaitTimeoutError", {
  response_id: Schema.String,
  lastStatus: Schema.String,
  message: Schema.String
}) {}

/**
 * Where the service posts a finished response (spec "Events / Completion webhook"): `url` (http or https) and the
 * optional `token`, sent back as `Authorization: Bearer <token>` so the receiver knows the post is genuine (see
 * `WebhookReceiver`). Sent as `metadata.completion_webhook` and `metadata.webhook_token`; the token stays `Redacted`
 * until the request body is written.
 *
 * @since 0.1.0
 * @category Models
 */
export interface CompletionWebhook {
  readonly url: string
  readonly token?: Redacted.Redacted<string> | undefined
}

/**
 * Options of create, submit and stream: the caller's idempotency key (default: a fresh UUID per call, reused on its
 * retries), the completion-window header (a `metadata.completion_window` in the body wins), the completion webhook
 * (wins over the same keys in `metadata`), retry overrides and `safeToRepeat` (default true: the request carries an
 * idempotency key).
 *
 * @since 0.1.0
 * @category Models
 */
export interface CreateOptions extends OperationOptions {
  readonly idempotencyKey?: string | undefined
  readonly completionWindow?: ModelResponse.CompletionWindow | undefined
  readonly completionWebhook?: CompletionWebhook | undefined
}

/** The request with the options' completion webhook written into its `metadata`. */
const withWebhook = (
  request: ModelResponse.CreateResponseRequest,
  webhook: CompletionWebhook | undefined
): ModelResponse.CreateResponseRequest =>
  webhook === undefined ? request : {
    ...request,
    metadata: {
      ...request.metadata,
      completion_webhook: webhook.url,
      ...(webhook.token !== undefined ? { webhook_token: Redacted.value(webhook.token) } : {})
    }
  }

/**
 * A create request as the client takes it: the body without `background` and `stream` (set by the method).
 *
 * @since 0.1.0
 * @category Models
 */
export type ResponseRequest = Omit<ModelResponse.CreateResponseRequest, "background" | "stream">

/** The headers of a create request: the idempotency key and, when given, the completion-window header. */
const createHeadersOf = (key: string, options: CreateOptions) => ({
  [IdempotencyKeyHeader]: key,
  ...(options.completionWindow !== undefined ? { [ModelResponse.completionWindowHeader]: options.completionWindow } : {})
})

/**
 * Sends a create request (foreground or background, as `request.background` says) through `transport` with the
 * options' idempotency key (a fresh one when absent) and webhook: the answer with its key and whether it was replayed.
 */
const sendCreate = (
  transport: Transport,
  request: ModelResponse.CreateResponseRequest,
  options: CreateOptions
) =>
  Effect.gen(function*() {
    const payload = yield* validate(ModelResponse.CreateResponseRequest, withWebhook(request, options.completionWebhook))
    const key = yield* IdempotencyKey.resolve(options.idempotencyKey)
    const [value, response] = yield* transport.operationWithResponse(
      "responses",
      "create",
      { payload, headers: createHeadersOf(key, options) },
      { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry }
    )
    const replayed = IdempotencyKey.isReplayed(response.headers)
    yield* Effect.annotateCurrentSpan({ "boxkit.replayed": replayed, "boxkit.status": value.status })
    return { value, idempotencyKey: key, replayed } satisfies IdempotencyKey.Idempotent<ModelResponse.ModelResponse>
  })

/**
 * A streamed create request through `transport`: the answer's Server-Sent Events decoded as `StreamEvent`s; the
 * request is retried (same idempotency key) only until its answer starts.
 */
const streamEvents = (
  transport: Transport,
  request: ResponseRequest,
  options: CreateOptions
): Stream.Stream<StreamEvent, ClientFailure> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const payload = yield* validate(
      ModelResponse.CreateResponseRequest,
      withWebhook({ ...request, stream: true }, options.completionWebhook)
    )
    const key = yield* IdempotencyKey.resolve(options.idempotencyKey)
    const httpRequest = HttpClientRequest.post(transport.urlOf("responses", "create")).pipe(
      HttpClientRequest.setHeaders(createHeadersOf(key, options)),
      HttpClientRequest.setHeader("accept", "text/event-stream"),
      HttpClientRequest.bodyUnsafeJson(payload)
    )
    const response = yield* transport.operationRaw("responses", "create", httpRequest, Effect.succeed, {
      safeToRepeat: options.safeToRepeat ?? true,
      retry: options.retry
    })
    return response.stream.pipe(
      Stream.decodeText(),
      Stream.pipeThroughChannel(Sse.makeChannel()),
      Stream.mapEffect((event) => Schema.decode(Schema.parseJson(StreamEvent))(event.data)),
      Stream.mapError(normalizeError)
    )
  }).pipe(Effect.mapError(normalizeError)))

/**
 * The Responses service (`yield* Responses`): `create` (foreground, idempotent), `submit` (background, idempotent,
 * with an optional completion webhook), `stream` (the events as a `Stream`), `retrieve`, and `awaitCompletion`
 * (polling until a final status or a deadline). Each method fails with the errors its endpoint lists
 * (`OperationErrors["responses"]`); `awaitCompletion` adds `ResponseExpiredError` and `ResponseWaitTimeoutError`.
 * Provided by `Boxkit.layer`; source: spec "POST {api_url}/responses", "Model response object".
 *
 * @since 0.1.0
 * @category Services
 */
export class Responses extends Effect.Service<Responses>()("boxkit/Responses", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport

    const retrieve = Effect.fn("Responses.retrieve")(function*(
      responseId: string,
      options: OperationOptions = {}
    ) {
      return yield* transport.operation(
        "responses",
        "retrieve",
        { path: { response_id: ResponseId.make(responseId) } },
        { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry }
      )
    })

    return {
      /**
       * A foreground request: answered when finished, status `completed`, or `incomplete` with `incomplete_details`
       * and the partial output at `max_output_tokens`. Idempotent (one key for every retry). A model failure is a
       * `ServerError` (500).
       */
      create: Effect.fn("Responses.create")(function*(request: ResponseRequest, options: CreateOptions = {}) {
        return yield* sendCreate(transport, { ...request, background: false, stream: false }, options)
      }),
      /**
       * A background request: answered 202 with the accepted object (status `queued`), completed later; wait with
       * `awaitCompletion` or a completion webhook (`options.completionWebhook`, received by `WebhookReceiver`).
       */
      submit: Effect.fn("Responses.submit")(function*(request: ResponseRequest, options: CreateOptions = {}) {
        return yield* sendCreate(transport, { ...request, background: true, stream: false }, options)
      }),
      /**
       * A foreground request answered as a stream of Responses events (`response.created` ... `response.completed`
       * / `response.incomplete` / `response.failed`), each with `sequence_number`. The request is retried (same
       * idempotency key) only until its answer starts; a stream that breaks or sends an event that is not JSON fails with
       * `UnexpectedResponseError`. Errors before the stream are the typed API errors (e.g. `InvalidRequestError`).
       */
      stream: (request: ResponseRequest, options: CreateOptions = {}): Stream.Stream<StreamEvent, ClientFailure> =>
        streamEvents(transport, request, options),
      /** Reads a response (`NotFoundError` when it never existed or its result expired). */
      retrieve,
      /**
       * Polls a response until it is finished (`completed`, `incomplete`, `failed` or `cancelled`) and returns it:
       * reads at once, then every `interval` (default 100 ms) doubling up to 2 s, for at most `timeout` (default
       * 120 s). A 404 while waiting fails with `ResponseExpiredError` (the result expired or never existed); the
       * deadline with `ResponseWaitTimeoutError` carrying the last status seen.
       */
      awaitCompletion: Effect.fn("Responses.awaitCompletion")(function*(
        responseId: string,
        options: { readonly timeout?: Duration.Duration | undefined; readonly interval?: Duration.Duration | undefined } = {}
      ) {
        const timeout = options.timeout ?? Duration.seconds(120)
        return yield* pollUntil(
          retrieve(responseId).pipe(
            Effect.catchTag("NotFoundError", (error) =>
              Effect.fail(new ResponseExpiredError({ response_id: responseId, message: error.message })))
          ),
          {
            done: (response) => ModelResponse.isFinished(response.status),
            timeout,
            interval: options.interval,
            onTimeout: (last) => {
              const lastStatus = Option.match(last, { onNone: () => "unknown", onSome: (response) => response.status })
              return new ResponseWaitTimeoutError({
                response_id: responseId,
                lastStatus,
                message: `response ${responseId} did not finish within ${Duration.format(timeout)} (last status ${lastStatus})`
              })
            }
          }
        )
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
