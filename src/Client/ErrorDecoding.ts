/**
 * Error answers and failures of the client as its typed errors: an answer of status 400 or more decoded by its
 * envelope's `type` (with status, `Retry-After` and `billing_url`), and any failure of an attempt (an
 * `HttpClientError`, a `ParseError`, a deadline) normalized into a `ClientFailure`.
 *
 * Source: spec "Errors"; docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 */
import { HttpClientError, type HttpClientResponse } from "@effect/platform"
import { Clock, Effect, ParseResult, Schema } from "effect"
import * as ApiError from "../ApiError.js"
import * as LostAnswer from "./LostAnswer.js"
import type { ClientFailure } from "./Operation.js"

/**
 * Turns an error answer into its typed error (by envelope `type`), or `UnexpectedResponseError` without envelope.
 *
 * @since 0.1.0
 * @category Utils
 */
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

/**
 * Normalizes any failure of the derived client into a {@link ClientFailure}.
 *
 * @since 0.1.0
 * @category Utils
 */
export const normalizeError = (error: unknown): ClientFailure => {
  if (
    ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError ||
    error instanceof ApiError.TransportError || error instanceof ApiError.TimeoutError ||
    error instanceof ApiError.UnexpectedResponseError
  ) {
    return error
  }
  if (HttpClientError.isHttpClientError(error)) {
    // A deadline that ended the wait (UndiciHttpClient.currentDeadline): the attempt's TimeoutError.
    if (error.cause instanceof ApiError.TimeoutError) return error.cause
    if (error._tag === "RequestError") {
      return new ApiError.TransportError({
        message: `${error.reason} error: ${error.description ?? String(error.cause ?? "request failed")}`,
        method: error.request.method,
        url: error.request.url,
        requestSent: LostAnswer.requestSent(error)
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
