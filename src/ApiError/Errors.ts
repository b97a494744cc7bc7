/**
 * The errors of the Box Service HTTP API as values: the envelope's schema, one tagged error class per error `type`,
 * the client-side errors that no envelope carries (transport, timeout, decoding, unknown type), their names as logs
 * show them with a failed call's context, and the builders the service and the client raise them with. Part of
 * `boxkit/ApiError` (ApiError.ts).
 *
 * Source: spec section "Errors" (envelope fields, status table, rules 1-5); the status chosen for
 * "idempotent request still in flight" is recorded in docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Duration, Schema } from "effect"
import * as IdempotencyKey from "../Contract/IdempotencyKey.js"
import { JsonValue } from "../Domain/Json.js"

/**
 * The wire shape of every error answer: `{ "error": { message, type, param, code, billing_url? } }`.
 * Additional properties are allowed (spec: "additional properties are allowed").
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ErrorBody = Schema.Struct(
  {
    message: Schema.String,
    type: Schema.String,
    param: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
    code: Schema.optionalWith(Schema.NullOr(Schema.Union(Schema.String, Schema.Number)), { default: () => null }),
    billing_url: Schema.optional(Schema.String)
  },
  { key: Schema.String, value: JsonValue }
)

/** The error envelope: `{ "error": ErrorBody }` (spec: Errors). @since 0.1.0 @category Schemas */
export const ErrorEnvelope = Schema.Struct({ error: ErrorBody }, { key: Schema.String, value: JsonValue })

/**
 * The encoded (wire) form of {@link ErrorEnvelope}.
 *
 * @since 0.1.0
 * @category Models
 */
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/**
 * Where and how far a client call had got when it failed, carried as `context` by every error a client operation
 * fails with once its retries are over: `operation`, the client's name of the operation (`boxes.create`: the
 * contract's group and endpoint); `method`, the HTTP method (`POST`); `path`, the request's path without the base
 * URL and without its query (`/v1/boxes/sb_...`; the API key is never part of it); `attempts`, the attempts made (the
 * first included); and `maxAttempts`, the attempts the call's retry settings allowed. An error's `name` (what a log
 * line and `Cause.pretty` print before its message) ends with it, e.g.
 * `RateLimitError (429 rate_limit_error) [boxes.create POST /v1/boxes, attempt 4 of 4]`; `message` stays the
 * service's message. Never on the wire: the service's answers do not carry it.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (the context of a failed call).
 *
 * @since 0.1.0
 * @category Models
 */
export const CallContext = Schema.Struct({
  operation: Schema.String,
  method: Schema.String,
  path: Schema.String,
  attempts: Schema.Number,
  maxAttempts: Schema.Number
})

/**
 * The context of a failed client call (see the {@link CallContext} schema).
 *
 * @since 0.1.0
 * @category Models
 */
export type CallContext = typeof CallContext.Type

/**
 * Fields shared by every typed API error: the envelope's `message`, `param` (request field the error is about, or
 * null), `code` (stable short code, a runtime token, or null), the HTTP `status`, `retryAfter`: the parsed
 * `Retry-After` header when the answer carried one (a Duration; the header is in seconds or an HTTP date), and
 * `context`: the client call that failed ({@link CallContext}; set by the client, absent on the service's side).
 */
const commonFields = {
  message: Schema.String,
  param: Schema.NullOr(Schema.String),
  code: Schema.NullOr(Schema.Union(Schema.String, Schema.Number)),
  status: Schema.Number,
  retryAfter: Schema.optional(Schema.DurationFromSelf),
  context: Schema.optional(CallContext)
}

/**
 * 400 `invalid_request_error`: the request was rejected; `message` and `param` name the field or rule.
 *
 * @since 0.1.0
 * @category Errors
 */
export class InvalidRequestError extends Schema.TaggedError<InvalidRequestError>()("InvalidRequestError", commonFields) {
  /** The envelope `type` of this class. */
  static readonly type = "invalid_request_error" as const
}

/**
 * 401 `authentication_error`, code `invalid_api_key`: the API key is missing or invalid (spec: Authentication 4).
 *
 * @since 0.1.0
 * @category Errors
 */
export class AuthenticationError extends Schema.TaggedError<AuthenticationError>()("AuthenticationError", commonFields) {
  static readonly type = "authentication_error" as const
}

/**
 * 403 `permission_error`: the key is not allowed, e.g. not organization-scoped (spec: Authentication 2, 3, 7).
 *
 * @since 0.1.0
 * @category Errors
 */
export class PermissionError extends Schema.TaggedError<PermissionError>()("PermissionError", commonFields) {
  static readonly type = "permission_error" as const
}

/**
 * 402 `billing_error`, code `credits_exhausted`: the organization is out of credits. `billing_url` is the page for
 * adding credits (spec: Authentication 5).
 *
 * @since 0.1.0
 * @category Errors
 */
export class BillingError extends Schema.TaggedError<BillingError>()("BillingError", {
  ...commonFields,
  billing_url: Schema.optional(Schema.String)
}) {
  static readonly type = "billing_error" as const
}

/**
 * 404 `not_found_error`: the secret, policy, box, app or response does not exist in the organization.
 *
 * @since 0.1.0
 * @category Errors
 */
export class NotFoundError extends Schema.TaggedError<NotFoundError>()("NotFoundError", commonFields) {
  static readonly type = "not_found_error" as const
}

/**
 * 409 `conflict_error`: e.g. an idempotency key reused with a different request, listener operations on a box
 * without persistence, or a runtime token (`already_exists`, `failed_precondition`) in `code`.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ConflictError extends Schema.TaggedError<ConflictError>()("ConflictError", commonFields) {
  static readonly type = "conflict_error" as const
}

/**
 * 429 `rate_limit_error`, code `rate_limited`: the request never started. `retryAfter` carries the `Retry-After`
 * header (spec: Errors rule 1).
 *
 * @since 0.1.0
 * @category Errors
 */
export class RateLimitError extends Schema.TaggedError<RateLimitError>()("RateLimitError", commonFields) {
  static readonly type = "rate_limit_error" as const
}

/**
 * `quota_exceeded_error`: a quota was exceeded (listed by the spec; no status is given, boxkit uses 429).
 *
 * @since 0.1.0
 * @category Errors
 */
export class QuotaExceededError extends Schema.TaggedError<QuotaExceededError>()("QuotaExceededError", commonFields) {
  static readonly type = "quota_exceeded_error" as const
}

/**
 * 501 `not_implemented_error`, code `unimplemented`: e.g. the guest image has no clipboard.
 *
 * @since 0.1.0
 * @category Errors
 */
export class NotImplementedError extends Schema.TaggedError<NotImplementedError>()("NotImplementedError", commonFields) {
  static readonly type = "not_implemented_error" as const
}

/**
 * `server_error`: 500 (server failure), 503 (momentarily unavailable; `retryAfter` when the header was sent), or
 * 409 with code `idempotent_request_in_flight` (docs/ASSUMPTIONS.md). Use {@link isIdempotentRequestInFlight}.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", commonFields) {
  static readonly type = "server_error" as const
}

/**
 * The `code` of the "idempotent request still in flight" server_error (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Constants
 */
export const idempotentRequestInFlightCode = "idempotent_request_in_flight"

/**
 * True for the "idempotent request still in flight" answer: a `ServerError` with that code.
 *
 * @since 0.1.0
 * @category Guards
 */
export const isIdempotentRequestInFlight = (error: unknown): boolean =>
  error instanceof ServerError && error.code === idempotentRequestInFlightCode

/**
 * An error envelope whose `type` is not one of the ten the spec lists. The set is closed in the spec, but a newer
 * service may add types: the client keeps the envelope instead of failing to decode it.
 *
 * @since 0.1.0
 * @category Errors
 */
export class UnknownApiError extends Schema.TaggedError<UnknownApiError>()("UnknownApiError", {
  ...commonFields,
  type: Schema.String
}) {}

/** Every class of an error `type` the spec lists, in the spec's order. @since 0.1.0 @category Errors */
export const apiErrorClasses = [
  InvalidRequestError,
  AuthenticationError,
  PermissionError,
  BillingError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  QuotaExceededError,
  NotImplementedError,
  ServerError
] as const

/** One of the ten typed API errors. @since 0.1.0 @category Errors */
export type ApiError = InstanceType<(typeof apiErrorClasses)[number]>

/** Any error decoded from an envelope, including an unknown `type`. @since 0.1.0 @category Errors */
export type AnyApiError = ApiError | UnknownApiError

/** True when `u` is one of the ten typed API errors. @since 0.1.0 @category Guards */
export const isApiError = (u: unknown): u is ApiError => apiErrorClasses.some((errorClass) => u instanceof errorClass)

/** The envelope `type` of an error instance. @since 0.1.0 @category Utils */
export const typeOf = (error: AnyApiError): string =>
  error instanceof UnknownApiError ? error.type : (error.constructor as unknown as { type: string }).type

/**
 * The request never produced an HTTP answer: connection refused or reset, DNS failure, or the body could not be read.
 *
 * `requestSent` says whether the service may have received the request: `false` when it certainly never left the
 * client (connection refused, host not found, no route, a connection or TLS set-up that failed, an invalid URL:
 * nothing was written), so repeating it is harmless and it is retried like a 503; `true` when the connection was lost
 * after the request was written, or when the client cannot tell (the default): the service may have carried it out,
 * so it is retried only when the request is safe to repeat (a read, one carrying an idempotency key, or a call marked
 * `safeToRepeat`). Classification: `LostAnswer.requestSent`; source: docs/ASSUMPTIONS.md ("Client").
 *
 * @since 0.1.0
 * @category Errors
 */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  message: Schema.String,
  method: Schema.String,
  url: Schema.String,
  requestSent: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  cause: Schema.optional(Schema.Defect),
  context: Schema.optional(CallContext)
}) {}

/**
 * An attempt or the whole call ran past its deadline. `timeout` is the limit that was hit; `context`, the call that
 * failed ({@link CallContext}).
 *
 * @since 0.1.0
 * @category Errors
 */
export class TimeoutError extends Schema.TaggedError<TimeoutError>()("TimeoutError", {
  message: Schema.String,
  timeout: Schema.DurationFromSelf,
  context: Schema.optional(CallContext)
}) {}

/**
 * The service answered, but not in a shape this client understands: a 2xx body that does not match the resource
 * schema, an error status without an envelope, or a status the operation does not list. `context`: the call that
 * failed ({@link CallContext}).
 *
 * @since 0.1.0
 * @category Errors
 */
export class UnexpectedResponseError extends Schema.TaggedError<UnexpectedResponseError>()("UnexpectedResponseError", {
  message: Schema.String,
  status: Schema.Number,
  cause: Schema.optional(Schema.Defect),
  context: Schema.optional(CallContext)
}) {}

/**
 * The one-line summary of an API error: HTTP status, envelope `type`, and `code` and `param` when set, e.g.
 * `409 conflict_error, code idempotency_key_reused` or `400 invalid_request_error, param name`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const summary = (error: AnyApiError): string =>
  [
    `${error.status} ${typeOf(error)}`,
    ...(error.code !== null && error.code !== undefined ? [`code ${error.code}`] : []),
    ...(error.param !== null && error.param !== undefined ? [`param ${error.param}`] : [])
  ].join(", ")

/**
 * A failed call's context as a person reads it, e.g. `boxes.create POST /v1/boxes, attempt 4 of 4`, or
 * `..., no attempt of 6 made` when the call's deadline had passed before its first attempt.
 *
 * @since 0.1.0
 * @category Utils
 */
export const formatContext = (context: CallContext): string =>
  `${context.operation} ${context.method} ${context.path}, ${
    context.attempts === 0 ? `no attempt of ${context.maxAttempts} made` : `attempt ${context.attempts} of ${context.maxAttempts}`
  }`

/**
 * What a log line and `Cause.pretty` show before an error's message (they print `name: message`): the class with
 * what a person needs beside the message, then the failed call's context when the client set one, e.g.
 * `NotFoundError (404 not_found_error) [secrets.retrieve GET /v1/secrets/X, attempt 1 of 6]: No secret named X.` or
 * `TransportError (GET http://127.0.0.1:8787/v1/secrets/X): connect ECONNREFUSED 127.0.0.1:8787`. `message` itself
 * stays the envelope's message.
 */
const nameWith = (errorClass: { readonly prototype: object }, describe?: (error: any) => string) =>
  Object.defineProperty(errorClass.prototype, "name", {
    configurable: true,
    get(this: { readonly _tag: string; readonly context?: CallContext | undefined }) {
      const described = describe === undefined ? this._tag : `${this._tag} (${describe(this)})`
      return this.context === undefined ? described : `${described} [${formatContext(this.context)}]`
    }
  })
for (const errorClass of [...apiErrorClasses, UnknownApiError]) nameWith(errorClass, summary)
nameWith(TransportError, (error: TransportError) => `${error.method} ${error.url}`)
nameWith(UnexpectedResponseError, (error: UnexpectedResponseError) => `HTTP ${error.status}`)
nameWith(TimeoutError)

/** Any error a client call can end with: the typed API errors and the client's own. */
type ContextualError = AnyApiError | TransportError | TimeoutError | UnexpectedResponseError

/**
 * A copy of `error` carrying `context` (the failed call: operation, method, path, attempts; see {@link CallContext}),
 * every other field as it was. The client's transport sets it on the error a call ends with, once its retries are
 * over. `error` itself is not changed (one error may be shared, e.g. by a test double).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const withContext = <E extends ContextualError>(error: E, context: CallContext): E => {
  // `message` and `cause` are own properties that are not enumerable (as on every `Error`): named, not spread.
  const fields: Record<string, unknown> = { ...error, message: error.message, context }
  if ("cause" in error && error.cause !== undefined) fields.cause = error.cause
  delete fields._tag
  const ErrorClass = error.constructor as new(fields: object, disableValidation: boolean) => E
  return new ErrorClass(fields, true)
}

/**
 * Builders for the errors the local service and the client raise, with the spec's default `code` values.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = {
  invalidRequest: (message: string, param: string | null = null) =>
    new InvalidRequestError({ message, param, code: null, status: 400 }),
  authentication: (message = "Missing or invalid API key.") =>
    new AuthenticationError({ message, param: null, code: "invalid_api_key", status: 401 }),
  permission: (message: string) => new PermissionError({ message, param: null, code: null, status: 403 }),
  billing: (billingUrl: string) =>
    new BillingError({
      message: "The organization is out of credits. Add credits and retry.",
      param: null,
      code: "credits_exhausted",
      status: 402,
      billing_url: billingUrl
    }),
  notFound: (message: string, param: string | null = null) =>
    new NotFoundError({ message, param, code: null, status: 404 }),
  conflict: (message: string, code: string | null = null, param: string | null = null) =>
    new ConflictError({ message, param, code, status: 409 }),
  rateLimited: (retryAfter: Duration.Duration) =>
    new RateLimitError({
      message: "Too many requests in flight for a new organization. Retry after the Retry-After delay.",
      param: null,
      code: "rate_limited",
      status: 429,
      retryAfter
    }),
  quotaExceeded: (message: string, code: string) =>
    new QuotaExceededError({ message, param: null, code, status: 429 }),
  notImplemented: (message: string) =>
    new NotImplementedError({ message, param: null, code: "unimplemented", status: 501 }),
  server: (message = "The server failed to answer the request.", code: string | null = null) =>
    new ServerError({ message, param: null, code, status: 500 }),
  unavailable: (message: string, retryAfter?: Duration.Duration) =>
    new ServerError({ message, param: null, code: null, status: 503, retryAfter }),
  idempotentRequestInFlight: () =>
    new ServerError({
      message: "An idempotent request with this Idempotency-Key is still in flight. Retry later with the same key.",
      param: IdempotencyKey.param,
      code: idempotentRequestInFlightCode,
      status: 409,
      retryAfter: Duration.seconds(1)
    })
}
