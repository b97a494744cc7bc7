/**
 * Every failure of the local service becomes the spec's error envelope here, once: typed API errors, schema failures
 * of path, query, headers or body (400 naming the field), malformed JSON (400, without quoting the body), unknown
 * routes (404), a failed state store (`StoreError`: 503 with `Retry-After` when it cannot answer now, else 500,
 * StoreOutage.ts), defects (500,
 * logged), and requests that are not even valid HTTP (400, see
 * {@link withEnvelopeOnClientError}).
 *
 * Source: spec "Errors" (envelope, status table) and "Endpoints / Common rules" ("Error responses use the envelope").
 *
 * @since 0.1.0
 */
import { HttpApiError, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Data, Duration, Effect, Option } from "effect"
import type { Server } from "node:http"
import type { Duplex } from "node:stream"
import * as ApiError from "../../ApiError.js"
import * as Routes from "./Routes.js"
import * as StoreOutage from "../state/StoreOutage.js"

/**
 * Makes a Node HTTP server answer requests that are not valid HTTP (a raw non-ASCII byte in the path, a malformed
 * header line, headers too large) with the error envelope too: 400 `invalid_request_error`, then the connection is
 * closed, as Node does by default with an empty body. Connections that are already gone are just destroyed.
 */
export const withEnvelopeOnClientError = <S extends Server>(server: S): S => {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy()
      return
    }
    const reason = error.code === "HPE_HEADER_OVERFLOW" ? "the request headers are too large" : "the request is not valid HTTP"
    const body = JSON.stringify(ApiError.toEnvelope(ApiError.make.invalidRequest(`Malformed request: ${reason}.`)))
    socket.end(
      "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n" +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
    )
  })
  return server
}

/** A request body that is not valid JSON where JSON was expected. */
export class MalformedJsonBody extends Data.TaggedError("MalformedJsonBody")<{ readonly reason: string }> {}

/** The {@link MalformedJsonBody} reason of a JSON body that is not UTF-8 (docs/ASSUMPTIONS.md "Text fields"). */
export const notUtf8Reason = "not valid UTF-8"

/**
 * The HTTP answer of a typed API error: its status, the envelope (JSON, in a buffer from Node's shared pool), and
 * `Retry-After` (whole seconds) when set.
 */
export const fromApiError = (error: ApiError.AnyApiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.uint8Array(Buffer.from(JSON.stringify(ApiError.toEnvelope(error)), "utf8"), {
    status: error.status,
    contentType: "application/json",
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
 * A schema message made readable: the structural "Expected { readonly ... }, actual ..." of a whole object or array
 * becomes "must be a JSON object" / "must be a JSON array"; other messages are kept.
 */
const readableMessage = (message: string): string => {
  if (/^Expected \{/.test(message)) return "must be a JSON object"
  if (/^Expected (?:ReadonlyArray|Array)</.test(message)) return "must be a JSON array"
  if (/^Expected \[/.test(message)) return "must be a JSON array"
  return message
}

/**
 * The 400 of a schema failure. `param` names the field (dotted, with `[i]` for array items); errors of path
 * parameters have `param` null, as the spec shows for the secret name (docs/ASSUMPTIONS.md), and their message names
 * the parameter. Of several issues (a union tried member by member) the deepest one is reported: it names the most
 * specific field.
 */
export const fromDecodeError = (
  error: HttpApiError.HttpApiDecodeError,
  request: HttpServerRequest.HttpServerRequest
): ApiError.InvalidRequestError => {
  const issue = error.issues.reduce<(typeof error.issues)[number] | undefined>(
    (deepest, candidate) => deepest === undefined || candidate.path.length > deepest.path.length ? candidate : deepest,
    undefined
  )
  if (issue === undefined) return ApiError.make.invalidRequest(error.message)
  const field = formatPath(issue.path)
  const route = Routes.match(request.method, request.url.split("?")[0])
  const isPathParameter = route !== undefined && route.pathParameters.includes(String(issue.path[0]))
  const message = readableMessage(issue.message)
  if (field === "") return ApiError.make.invalidRequest(`Invalid request body: ${message}`, null)
  const where = isPathParameter ? `path parameter ${field}` : field
  return ApiError.make.invalidRequest(`Invalid ${where}: ${message}`, isPathParameter ? null : field)
}

/**
 * The message of a body that is not valid JSON. Only the position of the error is kept: the parser's own message can
 * quote the body, which may hold a secret.
 */
export const malformedJsonMessage = (reason: string): string => {
  if (reason === notUtf8Reason) return "Request body is not valid UTF-8."
  const position = /position (\d+)/.exec(reason)
  return position !== null
    ? `Request body is not valid JSON (syntax error at position ${position[1]}).`
    : "Request body is not valid JSON."
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
  const stored = StoreOutage.storeErrorOf(cause)
  if (Option.isSome(stored)) return Effect.map(StoreOutage.answer(stored.value), fromApiError)
  const defect = Cause.squash(cause)
  if (defect instanceof MalformedJsonBody) {
    return Effect.succeed(fromApiError(ApiError.make.invalidRequest(malformedJsonMessage(defect.reason))))
  }
  return Effect.logError("request failed with a server error", cause).pipe(
    Effect.as(fromApiError(ApiError.make.server()))
  )
}
