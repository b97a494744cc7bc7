/**
 * Every failure of the local service becomes the spec's error envelope here, once: typed API errors, schema failures
 * of path, query, headers or body (400 naming the field), malformed JSON (400), unknown routes (404) and defects
 * (500, logged).
 *
 * Source: spec "Errors" (envelope, status table) and "Endpoints / Common rules" ("Error responses use the envelope").
 *
 * @since 0.1.0
 */
import { HttpApiError, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Data, Duration, Effect, Option } from "effect"
import * as ApiError from "../ApiError.js"
import * as Routes from "./Routes.js"

/** A request body that is not valid JSON where JSON was expected. */
export class MalformedJsonBody extends Data.TaggedError("MalformedJsonBody")<{ readonly reason: string }> {}

/** The HTTP answer of a typed API error: its status, the envelope, and `Retry-After` (whole seconds) when set. */
export const fromApiError = (error: ApiError.AnyApiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(ApiError.toEnvelope(error), {
    status: error.status,
    headers: error.retryAfter !== undefined
      ? { "retry-after": String(Math.max(0, Math.ceil(Duration.toSeconds(error.retryAfter)))) }
      : undefined
  })

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (text, key) => typeof key === "number" ? `${text}[${key}]` : text === "" ? String(key) : `${text}.${String(key)}`,
    ""
  )

/**
 * The 400 of a schema failure. `param` names the field (dotted, with `[i]` for array items); errors of path
 * parameters have `param` null, as the spec shows for the secret name (docs/ASSUMPTIONS.md), and their message names
 * the parameter.
 */
export const fromDecodeError = (
  error: HttpApiError.HttpApiDecodeError,
  request: HttpServerRequest.HttpServerRequest
): ApiError.InvalidRequestError => {
  const issue = error.issues[0]
  if (issue === undefined) return ApiError.make.invalidRequest(error.message)
  const field = formatPath(issue.path)
  const route = Routes.match(request.method, request.url.split("?")[0])
  const isPathParameter = route !== undefined && route.pathParameters.includes(String(issue.path[0]))
  const where = field === "" ? "request body" : isPathParameter ? `path parameter ${field}` : field
  return ApiError.make.invalidRequest(`Invalid ${where}: ${issue.message}`, isPathParameter || field === "" ? null : field)
}

/** Maps a failed request's cause to the envelope answer. Interruptions stay interruptions. */
export const fromCause = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError) {
      return Effect.succeed(fromApiError(error))
    }
    if (error instanceof HttpApiError.HttpApiDecodeError) {
      return Effect.succeed(fromApiError(fromDecodeError(error, request)))
    }
    if (error instanceof HttpServerError.RouteNotFound) {
      return Effect.succeed(fromApiError(ApiError.make.notFound(`No operation ${request.method} ${request.url}.`)))
    }
  }
  const defect = Cause.squash(cause)
  if (defect instanceof MalformedJsonBody) {
    return Effect.succeed(fromApiError(ApiError.make.invalidRequest(`Request body is not valid JSON: ${defect.reason}`)))
  }
  return Effect.logError("request failed with a server error", cause).pipe(
    Effect.as(fromApiError(ApiError.make.server()))
  )
}
