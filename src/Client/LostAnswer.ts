/**
 * Whether a failed request may have reached the service, and whether a failed attempt may have been carried out:
 * the difference between "no service there" (nothing was sent, repeating is harmless) and "the answer was lost"
 * (the service may have done the work; repeating a request that is not safe to repeat could do it twice).
 *
 * Source: docs/ASSUMPTIONS.md ("Client": lost answers); spec "Errors" rules 1-2 (429 and 503: the request never
 * started).
 *
 * @since 0.1.0
 */
import type { HttpClientError } from "@effect/platform"
import * as ApiError from "../ApiError.js"

/**
 * Node and undici error codes of a connection that failed before anything was written: refused, host not found,
 * no route, connection or TLS set-up failed.
 */
const notSentCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EAI_FAIL",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EADDRNOTAVAIL",
  "ENOENT",
  "EACCES",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_INVALID_ARG",
  "ERR_INVALID_URL",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "ERR_SSL_WRONG_VERSION_NUMBER"
])

/** The `code` of `error`, of the first of its `errors` (an `AggregateError` of several addresses), else undefined. */
const codeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  if ("code" in error && typeof error.code === "string") return error.code
  if ("errors" in error && Array.isArray(error.errors)) return codeOf(error.errors[0])
  return undefined
}

/**
 * Whether the request of a failed `RequestError` may have reached the service: `false` when it certainly never left
 * the client (an invalid URL, a body that could not be encoded, or a connection that failed before anything was
 * written: refused, host not found, no route, connect timeout, TLS set-up; found by the Node or undici error code
 * anywhere in the cause chain), `true` otherwise (the connection was closed or reset after the request was written,
 * e.g. undici's `UND_ERR_SOCKET` "other side closed" or `ECONNRESET`, or the failure cannot be told apart). Works
 * for the toolkit's `HttpClient` and the stock ones of `@effect/platform-node` (undici and `node:http`), which all
 * fail with the Node or undici error as the cause.
 *
 * @since 0.1.0
 * @category Classification
 */
export const requestSent = (error: HttpClientError.RequestError): boolean => {
  if (error.reason === "InvalidUrl" || error.reason === "Encode") return false
  let cause: unknown = error.cause
  for (let depth = 0; depth < 8 && typeof cause === "object" && cause !== null; depth++) {
    const code = codeOf(cause)
    if (code !== undefined && notSentCodes.has(code)) return false
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return true
}

/**
 * Whether a failed attempt may have been carried out by the service, so that a repeat could find its effects (e.g.
 * an unpublish repeated after its answer was lost finds the port already gone): a `TransportError` whose request
 * was sent ({@link requestSent}), an attempt that timed out, a 500 `ServerError`, or an error status without an
 * envelope of 500, 502 or 504. `false` for answers that say the request never started (429, 503, "idempotent request
 * still in flight") and for every other answer.
 *
 * @since 0.1.0
 * @category Classification
 */
export const mayHaveRun = (error: unknown): boolean => {
  if (error instanceof ApiError.TransportError) return error.requestSent
  if (error instanceof ApiError.TimeoutError) return true
  if (error instanceof ApiError.ServerError) return error.status === 500 && !ApiError.isIdempotentRequestInFlight(error)
  if (error instanceof ApiError.UnexpectedResponseError) {
    return error.status === 500 || error.status === 502 || error.status === 504
  }
  return false
}
