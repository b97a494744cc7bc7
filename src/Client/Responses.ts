/**
 * Model responses: create (foreground), submit (background), stream (Server-Sent Events, parsed with
 * `@effect/experimental` Sse), retrieve, and wait for completion.
 *
 * Source: spec "POST {api_url}/responses", "Model response object", "Events"; field names: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Sse } from "@effect/experimental"
import { HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Schema, Stream } from "effect"
import * as ApiError from "../ApiError.js"
import { ResponseId } from "../Domain/Ids.js"
import * as ModelResponse from "../Domain/ModelResponse.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { pollUntil } from "./Polling.js"
import { type ClientFailure, commonErrors, normalizeError, only, Transport, validate } from "./Transport.js"

/** One event of a streamed response: its `type` (e.g. `response.output_text.delta`), `sequence_number`, fields. */
export const StreamEvent = Schema.Struct(
  { type: Schema.String, sequence_number: Schema.Int },
  { key: Schema.String, value: Schema.Unknown }
)
/** One event of a streamed response. */
export type StreamEvent = typeof StreamEvent.Type

/** The result of a response is gone: it expired (10 minutes after its first successful delivery) or never existed. */
export class ResponseExpiredError extends Schema.TaggedError<ResponseExpiredError>()("ResponseExpiredError", {
  response_id: Schema.String,
  message: Schema.String
}) {}

/** Waiting for a response ran past its deadline; `lastStatus` is the last status observed. */
export class ResponseWaitTimeoutError extends Schema.TaggedError<ResponseWaitTimeoutError>()("ResponseWaitTimeoutError", {
  response_id: Schema.String,
  lastStatus: Schema.String,
  message: Schema.String
}) {}

/** Options of create and submit: the caller's idempotency key and the completion-window header. */
export interface CreateOptions {
  readonly idempotencyKey?: string
  readonly completionWindow?: ModelResponse.CompletionWindow
}

const responseErrors = [...commonErrors, ApiError.ConflictError] as const

/** The Responses service. */
export class Responses extends Effect.Service<Responses>()("boxkit/Responses", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    const apiUrl = transport.config.apiUrl.replace(/\/+$/, "")

    const send = (request: ModelResponse.CreateResponseRequest, options: CreateOptions) =>
      Effect.gen(function*() {
        const payload = yield* validate(ModelResponse.CreateResponseRequest, request)
        const key = yield* IdempotencyKey.resolve(options.idempotencyKey)
        const [value, response] = yield* transport.call(
          transport.api.responses.create({
            payload,
            headers: {
              "idempotency-key": key,
              ...(options.completionWindow !== undefined ? { "x-completion-window": options.completionWindow } : {})
            },
            withResponse: true
          }),
          { safeToRepeat: true }
        ).pipe(only(...responseErrors))
        const replayed = IdempotencyKey.isReplayed(response.headers)
        yield* Effect.annotateCurrentSpan({ "boxkit.replayed": replayed, "boxkit.status": value.status })
        return { value, idempotencyKey: key, replayed } satisfies IdempotencyKey.Idempotent<ModelResponse.ModelResponse>
      })

    const retrieve = Effect.fn("Responses.retrieve")(function*(responseId: string) {
      return yield* transport.call(
        transport.api.responses.retrieve({ path: { response_id: ResponseId.make(responseId) } }),
        { safeToRepeat: true }
      ).pipe(only(...commonErrors))
    })

    return {
      /** A foreground request: answered when finished (status `completed` or `incomplete`). Idempotent. */
      create: Effect.fn("Responses.create")(function*(
        request: Omit<ModelResponse.CreateResponseRequest, "background" | "stream">,
        options: CreateOptions = {}
      ) {
        return yield* send({ ...request, background: false, stream: false }, options)
      }),
      /** A background request: answered 202 with the accepted object (status `queued`), completed later. */
      submit: Effect.fn("Responses.submit")(function*(
        request: Omit<ModelResponse.CreateResponseRequest, "background" | "stream">,
        options: CreateOptions = {}
      ) {
        return yield* send({ ...request, background: true, stream: false }, options)
      }),
      /**
       * A foreground request answered as a stream of Responses events (`response.created` ...
       * `response.completed` / `response.incomplete`), each with `sequence_number`. Not retried once started.
       */
      stream: (
        request: Omit<ModelResponse.CreateResponseRequest, "background" | "stream">,
        options: CreateOptions = {}
      ): Stream.Stream<StreamEvent, ClientFailure> =>
        Stream.unwrapScoped(Effect.gen(function*() {
          const payload = yield* validate(ModelResponse.CreateResponseRequest, { ...request, stream: true })
          const key = yield* IdempotencyKey.resolve(options.idempotencyKey)
          const httpRequest = HttpClientRequest.post(`${apiUrl}/responses`).pipe(
            HttpClientRequest.setHeader("idempotency-key", key),
            HttpClientRequest.setHeader("accept", "text/event-stream"),
            HttpClientRequest.bodyUnsafeJson(payload)
          )
          const response = yield* transport.http.execute(httpRequest).pipe(Effect.mapError(normalizeError))
          return response.stream.pipe(
            Stream.decodeText(),
            Stream.pipeThroughChannel(Sse.makeChannel()),
            Stream.mapEffect((event) =>
              Schema.decode(Schema.parseJson(StreamEvent))(event.data)
            ),
            Stream.mapError(normalizeError)
          )
        }).pipe(Effect.mapError(normalizeError))),
      /** Reads a response (`NotFoundError` when it never existed or its result expired). */
      retrieve,
      /**
       * Polls a response until it is finished (`completed`, `incomplete`, `failed` or `cancelled`), every `interval`
       * (default 100 ms, doubling to 2 s), for at most `timeout` (default 120 s). A 404 while waiting fails with
       * `ResponseExpiredError`; the deadline with `ResponseWaitTimeoutError` carrying the last status.
       */
      awaitCompletion: Effect.fn("Responses.awaitCompletion")(function*(
        responseId: string,
        options: { readonly timeout?: Duration.Duration; readonly interval?: Duration.Duration } = {}
      ) {
        let lastStatus = "unknown"
        const timeout = options.timeout ?? Duration.seconds(120)
        return yield* pollUntil(
          retrieve(responseId).pipe(
            Effect.catchTag("NotFoundError", (error) =>
              Effect.fail(new ResponseExpiredError({ response_id: responseId, message: error.message }))),
            Effect.tap((response) => {
              lastStatus = response.status
            })
          ),
          {
            done: (response) => ModelResponse.isFinished(response.status),
            timeout,
            interval: options.interval,
            onTimeout: () =>
              new ResponseWaitTimeoutError({
                response_id: responseId,
                lastStatus,
                message: `response ${responseId} did not finish within ${Duration.format(timeout)} (last status ${lastStatus})`
              })
          }
        )
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
