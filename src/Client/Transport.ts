/**
 * The shared transport of every client service: the client derived from the contract, with the bearer key added,
 * error answers decoded into the typed errors by `type` (with status, `Retry-After` and `billing_url`), and `call`,
 * which runs one logical call with per-attempt timeouts, the retry Schedule and the overall deadline.
 *
 * Source: spec "Authentication" 1, 6; "Errors"; docs/ASSUMPTIONS.md (client behaviour).
 *
 * @since 0.1.0
 */
import { HttpApiClient, HttpClient, HttpClientError, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Clock, Duration, Effect, ParseResult, Ref, Schema } from "effect"
import * as ApiError from "../ApiError.js"
import { BoxServiceApi } from "../Contract/Api.js"
import { BoxkitConfig } from "./BoxkitConfig.js"
import * as Retry from "./Retry.js"

/** Everything one attempt can fail with, after the transport normalized it. */
export type ClientFailure =
  | ApiError.AnyApiError
  | ApiError.TransportError
  | ApiError.TimeoutError
  | ApiError.UnexpectedResponseError

/** Turns an error answer into its typed error (by envelope `type`), or `UnexpectedResponseError` without envelope. */
export const decodeErrorResponse = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<never, ApiError.AnyApiError | ApiError.UnexpectedResponseError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const body = yield* Effect.either(response.json)
    const envelope = body._tag === "Right"
      ? Schema.decodeUnknownOption(ApiError.ErrorEnvelope)(body.right)
      : undefined
    if (envelope === undefined || envelope._tag === "None") {
      return yield* Effect.fail(new ApiError.UnexpectedResponseError({
        message: `HTTP ${response.status} without an error envelope from ${response.request.method} ${
          response.request.url
        }`,
        status: response.status
      }))
    }
    return yield* Effect.fail(
      ApiError.fromEnvelope(envelope.value, response.status, ApiError.parseRetryAfter(response.headers["retry-after"], now))
    )
  })

/** Normalizes any failure of the derived client into a {@link ClientFailure}. */
export const normalizeError = (error: unknown): ClientFailure => {
  if (
    ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError ||
    error instanceof ApiError.TransportError || error instanceof ApiError.TimeoutError ||
    error instanceof ApiError.UnexpectedResponseError
  ) {
    return error
  }
  if (HttpClientError.isHttpClientError(error)) {
    if (error._tag === "RequestError") {
      return new ApiError.TransportError({
        message: `${error.reason} error: ${error.description ?? String(error.cause ?? "request failed")}`,
        method: error.request.method,
        url: error.request.url
      })
    }
    return new ApiError.UnexpectedResponseError({
      message: `unexpected HTTP ${error.response.status} from ${error.methodAndUrl}`,
      status: error.response.status
    })
  }
  if (ParseResult.isParseError(error)) {
    return new ApiError.UnexpectedResponseError({
      message: `the answer does not match the resource schema: ${error.message}`,
      status: 200
    })
  }
  return new ApiError.UnexpectedResponseError({ message: String(error), status: 0 })
}

/** A class of the ten typed API errors. */
export type ApiErrorClass = (typeof ApiError.apiErrorClasses)[number]

/**
 * Keeps in the error channel exactly the typed errors of `classes` (the spec's list for one operation), plus the
 * client-side errors; any other envelope becomes `UnexpectedResponseError` carrying it as `cause`.
 */
export const only = <const Classes extends ReadonlyArray<ApiErrorClass>>(...classes: Classes) =>
<A, R>(
  effect: Effect.Effect<A, ClientFailure, R>
): Effect.Effect<
  A,
  InstanceType<Classes[number]> | ApiError.TransportError | ApiError.TimeoutError | ApiError.UnexpectedResponseError,
  R
> =>
  Effect.mapError(effect, (error) => {
    if (
      (ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError) &&
      !classes.some((errorClass) => error instanceof errorClass)
    ) {
      return new ApiError.UnexpectedResponseError({
        message: `${ApiError.typeOf(error)} (HTTP ${error.status}) is not an answer this operation lists: ${error.message}`,
        status: error.status,
        cause: error
      })
    }
    return error as any
  })

/** The errors every box, secret and egress-policy operation lists: 400, 401, 402, 403, 404, 429, 500/503. */
export const commonErrors = [
  ApiError.InvalidRequestError,
  ApiError.AuthenticationError,
  ApiError.BillingError,
  ApiError.PermissionError,
  ApiError.NotFoundError,
  ApiError.RateLimitError,
  ApiError.ServerError
] as const

/** Checks an input against its schema before any I/O; a violation is an `InvalidRequestError` naming the field. */
export const validate = <A, I>(schema: Schema.Schema<A, I>, value: A): Effect.Effect<A, ApiError.InvalidRequestError> =>
  Schema.validate(schema)(value).pipe(
    Effect.mapError((error) => {
      const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
      const param = issue?.path.length ? issue.path.map(String).join(".") : null
      return new ApiError.InvalidRequestError({
        message: `Invalid ${param ?? "request"}: ${issue?.message ?? error.message} (checked by the client)`,
        param,
        code: null,
        status: 400
      })
    })
  )

/** Strips the `/v1` version segment: the contract carries it as its prefix. */
const origin = (url: string) => url.replace(/\/+$/, "").replace(/\/v1$/, "")

/** Options of one logical call. */
export interface CallOptions {
  /** True for reads and requests carrying an idempotency key: 500 and transport failures are then retried. */
  readonly safeToRepeat: boolean
}

/** The shared transport. */
export class Transport extends Effect.Service<Transport>()("boxkit/Transport", {
  effect: Effect.gen(function*() {
    const config = yield* BoxkitConfig
    const http = (yield* HttpClient.HttpClient).pipe(
      HttpClient.mapRequest(HttpClientRequest.bearerToken(config.apiKey)),
      HttpClient.transformResponse(Effect.flatMap((response) =>
        response.status >= 400 ? decodeErrorResponse(response) : Effect.succeed(response)
      ))
    )
    /** The contract's client on `{base_url}` (boxes, secrets, egress policies). */
    const box = yield* HttpApiClient.makeWith(BoxServiceApi, { httpClient: http, baseUrl: origin(config.baseUrl) })
    /** The contract's client on `{api_url}` (apps, responses). */
    const api = yield* HttpApiClient.makeWith(BoxServiceApi, { httpClient: http, baseUrl: origin(config.apiUrl) })

    /**
     * Runs one logical call: each attempt has `retry.attemptTimeout`; failures are retried by `Retry.schedule`; the
     * whole call is bounded by `retry.deadline` (TimeoutError). Interrupting the caller aborts the request in
     * flight. The current span gets `boxkit.attempts`.
     */
    const call = <A, E, R>(
      attempt: Effect.Effect<A, E, R>,
      options: CallOptions
    ): Effect.Effect<A, ClientFailure, R> =>
      Effect.gen(function*() {
        const attempts = yield* Ref.make(0)
        const settings = config.retry
        return yield* Ref.update(attempts, (n) => n + 1).pipe(
          Effect.zipRight(attempt),
          Effect.mapError(normalizeError),
          Effect.timeoutFail({
            duration: settings.attemptTimeout,
            onTimeout: () =>
              new ApiError.TimeoutError({
                message: `attempt timed out after ${Duration.format(settings.attemptTimeout)}`,
                timeout: settings.attemptTimeout
              })
          }),
          Effect.tapError((error) =>
            Effect.logDebug("boxkit attempt failed").pipe(
              Effect.annotateLogs({
                error: error._tag,
                status: "status" in error ? String(error.status) : "none"
              })
            )
          ),
          Effect.retry(Retry.schedule(settings, options.safeToRepeat)),
          Effect.timeoutFail({
            duration: settings.deadline,
            onTimeout: () =>
              new ApiError.TimeoutError({
                message: `call did not finish within its deadline of ${Duration.format(settings.deadline)}`,
                timeout: settings.deadline
              })
          }),
          Effect.ensuring(Effect.flatMap(Ref.get(attempts), (n) => Effect.annotateCurrentSpan("boxkit.attempts", n)))
        )
      })

    return { config, http, box, api, call }
  })
}) {}
