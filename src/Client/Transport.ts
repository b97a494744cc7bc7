/**
 * The shared transport of every client service: the client derived from the contract (ContractClient.ts, the shape of
 * `HttpApiClient` at a fraction of its cost per call), with the bearer key added (from `Redacted`; `authorization`
 * is redacted by name wherever `@effect/platform` shows headers), a caller's non-ASCII `Idempotency-Key` sent as its
 * UTF-8 bytes, error answers decoded into the typed errors by `type` (with status, `Retry-After` and `billing_url`),
 * `call`, which runs one logical call with per-attempt timeouts, the retry Schedule and the overall deadline, and
 * `operation` (with `operationWithResponse` and `operationRaw`), through which every service method runs one
 * operation of the contract: the endpoint, `safeToRepeat`, retry overrides and the owner-override header, with the
 * errors the endpoint lists in the contract.
 * Per-call retry settings: {@link withRetry} or a service method's `retry` option. The answer's status and headers
 * beside its value: {@link withResponse}. Every request carries `User-Agent: boxkit/<version>` and the configured
 * default headers (`BoxkitOptions.headers`), and goes through `BoxkitOptions.transformClient` when one is set; the
 * error a call ends with carries its context (operation, method, path, attempts: `ApiError.CallContext`).
 *
 * Cost per call: one timer per attempt (in the HTTP client when it is the toolkit's own and the clock is
 * live, else a racing fiber), the retry Schedule set up only after a failure, settings merged only when overridden,
 * span attributes only when there is an operation span (Tracing.ts).
 *
 * Source: spec "Authentication" 1, 6; "Errors"; "Limits" (Idempotency-Key); docs/ASSUMPTIONS.md (client behaviour).
 *
 * @since 0.1.0
 */
import {
  Headers,
  type HttpApiEndpoint,
  HttpClient,
  HttpClientError,
  HttpClientRequest,
  type HttpClientResponse
} from "@effect/platform"
import { Cause, Clock, Context, Duration, Effect, Either, Exit, FiberRef, Option, ParseResult, Redacted, Schedule, Schema, type Tracer } from "effect"
import { dual, identity } from "effect/Function"
import { globalValue } from "effect/GlobalValue"
import * as ApiError from "../ApiError.js"
import { apiUrlGroups, BoxServiceApi, IdempotencyKeyHeader, OwnerOverrideHeader } from "../Contract/Api.js"
import { BoxkitConfig, type BoxkitSettings, mergeRetry, type RetrySettings } from "./BoxkitConfig.js"
import * as ContractClient from "./ContractClient.js"
import {
  type ClientFailure,
  type EndpointName,
  type EndpointOf,
  errorsListedBy,
  type GroupName,
  keepListed,
  type OperationError,
  type RequestOf
} from "./Operation.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import * as LostAnswer from "./LostAnswer.js"
import * as Retry from "./Retry.js"
import * as Timeout from "../Http/Timeout.js"
import * as Tracing from "./Tracing.js"
import * as UndiciHttpClient from "../Http/UndiciHttpClient.js"
import { userAgent } from "./Version.js"

export type {
  ApiErrorClass,
  ClientFailure,
  EndpointName,
  EndpointOf,
  GroupName,
  OperationError,
  RequestOf
} from "./Operation.js"
export { errorsListedBy } from "./Operation.js"

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

/** The validator of each schema `validate` has seen (made once: making one re-derives the schema's type AST). */
const validators = new WeakMap<Schema.Schema.Any, (value: unknown) => Either.Either<any, ParseResult.ParseError>>()

/**
 * Checks an input against its schema before any I/O; a violation is an `InvalidRequestError` naming the field.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = <A, I>(schema: Schema.Schema<A, I>, value: A): Effect.Effect<A, ApiError.InvalidRequestError> => {
  let validator = validators.get(schema)
  if (validator === undefined) {
    validator = Schema.validateEither(schema)
    validators.set(schema, validator)
  }
  const checked = validator(value) as Either.Either<A, ParseResult.ParseError>
  if (Either.isRight(checked)) return Effect.succeed(checked.right)
  const error = checked.left
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const param = issue?.path.length ? issue.path.map(String).join(".") : null
  return Effect.fail(
    new ApiError.InvalidRequestError({
      message: `Invalid ${param ?? "request"}: ${issue?.message ?? error.message} (checked by the client)`,
      param,
      code: null,
      status: 400
    })
  )
}

/** Strips the `/v1` version segment: the contract carries it as its prefix. */
const origin = (url: string) => url.replace(/\/+$/, "").replace(/\/v1$/, "")

/**
 * Per-call retry overrides in effect for the current fiber, set by {@link withRetry}. Empty by default.
 *
 * @since 0.1.0
 * @category Fiber refs
 */
export const currentRetryOverrides: FiberRef.FiberRef<Partial<RetrySettings>> = globalValue(
  Symbol.for("boxkit/Transport/currentRetryOverrides"),
  () => FiberRef.unsafeMake<Partial<RetrySettings>>({})
)

/**
 * Runs `self` (any client call, or a whole workflow of calls) with `overrides` on top of `BoxkitConfig.retry`, e.g.
 * `boxes.create(request).pipe(Transport.withRetry({ maxAttempts: 1 }))` or
 * `Transport.withRetry({ deadline: Duration.seconds(5) })(workflow)`. Nested uses combine, the inner winning; the
 * `retry` option of a service method wins over both.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withRetry: {
  (overrides: Partial<RetrySettings>): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: Partial<RetrySettings>): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: Partial<RetrySettings>): Effect.Effect<A, E, R> =>
    Effect.locallyWith(self, currentRetryOverrides, (current) => ({ ...current, ...overrides }))
)

/**
 * What the service answered beside an operation's value (see {@link withResponse}): the HTTP `status` and the
 * answer's `headers` (names in lower case; e.g. `idempotent-replayed`, `retry-after`, `content-type`). The spec
 * names no request-id header, so there is no request id field: a service that sends one (e.g. `x-request-id`)
 * has it in `headers` (docs/ASSUMPTIONS.md "Client").
 *
 * @since 0.1.0
 * @category Models
 */
export interface ResponseMetadata {
  readonly status: number
  readonly headers: Headers.Headers
}

/**
 * An operation's value with the {@link ResponseMetadata} of the answer it came from ({@link withResponse}).
 *
 * @since 0.1.0
 * @category Models
 */
export interface WithResponse<A> {
  readonly value: A
  readonly response: ResponseMetadata
}

/** Where {@link withResponse} collects the answers of the calls it runs; also hands each one to the enclosing one. */
class ResponseSlot {
  response: HttpClientResponse.HttpClientResponse | undefined = undefined
  constructor(private readonly outer: ResponseSlot | undefined) {}
  record(response: HttpClientResponse.HttpClientResponse): void {
    this.response = response
    this.outer?.record(response)
  }
}

/** The {@link withResponse} collecting the answers of the current fiber's calls, if any (none by default). */
const currentResponseSlot: FiberRef.FiberRef<ResponseSlot | undefined> = globalValue(
  Symbol.for("boxkit/Transport/currentResponseSlot"),
  () => FiberRef.unsafeMake<ResponseSlot | undefined>(undefined)
)

/**
 * Runs `self` (any client operation, e.g. `boxes.create(request)`) and answers its value with the status and
 * headers of the HTTP answer it came from: `{ value, response: { status, headers } }` (the `withResponse()` of
 * other SDKs, as a combinator: `boxes.retrieve(id).pipe(Transport.withResponse)`). After retries, the answer is
 * the last attempt's (the one that succeeded). When `self` makes several calls (a wait that polls, a workflow), the
 * answer is the last one received. Failures are `self`'s, unchanged. Dies when `self` succeeds without any HTTP
 * answer through this client (it was not a client operation).
 *
 * Source: docs/ASSUMPTIONS.md "Client" (answer metadata).
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withResponse = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<WithResponse<A>, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const slot = new ResponseSlot(fiber.getFiberRef(currentResponseSlot))
    return Effect.flatMap(Effect.locally(self, currentResponseSlot, slot), (value) => {
      const response = slot.response
      if (response === undefined) {
        return Effect.dieMessage("Transport.withResponse: the effect succeeded without an HTTP answer from the client")
      }
      return Effect.succeed({ value, response: { status: response.status, headers: response.headers } })
    })
  })

/**
 * The headers of a call's owner override (spec "Boxes": an admin acting on another user's private box names the
 * reason in `x-box-owner-override-reason`): the header when `reason` is set, else none.
 *
 * @since 0.1.0
 * @category Utils
 */
export const ownerOverrideHeaders = (reason: string | undefined): { readonly [OwnerOverrideHeader]?: string } =>
  reason !== undefined ? { [OwnerOverrideHeader]: reason } : {}

/**
 * The options every operation of the client takes: `retry`, overrides of `BoxkitConfig.retry` for this call only
 * (they win over {@link withRetry} and the configuration), and `safeToRepeat`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface OperationOptions {
  readonly retry?: Partial<RetrySettings> | undefined
  /**
   * Whether sending this call's request again is harmless, for this call only. `true`: failures after which the
   * service may have carried the request out (a connection lost after sending, an attempt timeout, a 500) are
   * retried, as they are for reads and requests carrying an idempotency key; say so for an operation without an
   * `Idempotency-Key` when a second run does no harm (each method's documentation says what a repeat does).
   * `false`: they are not retried, even for reads. Omitted: the operation's own default (true for reads,
   * replacements and requests carrying an idempotency key; false for creations without one). Failures after which
   * the request certainly did not run (429, 503, a connection refused) are retried either way.
   * Source: docs/ASSUMPTIONS.md ("Client").
   */
  readonly safeToRepeat?: boolean | undefined
}

/** Options of one operation of the contract (see `Transport.operation`). @since 0.1.0 @category Models */
export interface OperationCallOptions extends CallOptions {
  /** The reason of an admin's owner override, sent as `x-box-owner-override-reason` (box operations only). */
  readonly ownerOverrideReason?: string | undefined
}

/**
 * What a call is, for the context of the error it ends with (`ApiError.CallContext`): read only when the call
 * fails, so that a call that succeeds does not work out its path. `Transport.call`'s third argument.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (the context of a failed call).
 *
 * @since 0.1.0
 * @category Models
 */
export interface CallSite {
  /** The operation (`boxes.create`), the HTTP method, and the path without the base URL or the query. */
  readonly describe: () => { readonly operation: string; readonly method: string; readonly path: string }
}

/** Options of one logical call. @since 0.1.0 @category Models */
export interface CallOptions {
  /** True for reads and requests carrying an idempotency key: 500 and transport failures are then retried. */
  readonly safeToRepeat: boolean
  /** Overrides of the retry settings for this call only (win over {@link withRetry} and `BoxkitConfig.retry`). */
  readonly retry?: Partial<RetrySettings> | undefined
  /**
   * Called with the error of a failed attempt just before the call retries it (e.g. to remember that an earlier
   * attempt may have been carried out: `LostAnswer.mayHaveRun`).
   */
  readonly onRetry?: ((error: ClientFailure) => void) | undefined
}

/**
 * The retry settings of a call: `BoxkitConfig.retry`, then {@link withRetry}'s overrides, then `overrides`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const resolveRetry = (base: RetrySettings, overrides?: Partial<RetrySettings>) =>
  Effect.map(FiberRef.get(currentRetryOverrides), (local) => mergeRetry(base, local, overrides))

/** The live clock's class (its time is `Date.now()`). */
const liveClock = Clock.make().constructor

/** The retry overrides in effect when none were set (the FiberRef's initial value). */
const noOverrides: Partial<RetrySettings> = FiberRef.get(currentRetryOverrides).pipe(Effect.runSync)

/**
 * One logical call's state (see `Transport.call`): its settings, clock and attempts, and the two timeout errors. A
 * class, so that a call allocates one object rather than a closure per helper.
 */
class Call<A, R> {
  attempts = 0
  private readonly startedAt: number
  private readonly deadlineAt: number
  private readonly attemptMillis: number
  private deadlineError: ApiError.TimeoutError | undefined = undefined

  constructor(
    private readonly settings: RetrySettings,
    private readonly safeToRepeat: boolean,
    private readonly clock: Clock.Clock,
    private readonly attempt: Effect.Effect<A, ClientFailure, R>,
    private readonly byClient: boolean,
    private readonly onRetry: ((error: ClientFailure) => void) | undefined
  ) {
    this.startedAt = clock.unsafeCurrentTimeMillis()
    this.deadlineAt = this.startedAt + Duration.toMillis(settings.deadline)
    this.attemptMillis = Duration.toMillis(settings.attemptTimeout)
  }

  /** The call's deadline passed (one error per call: it ends the call, it is never retried). */
  pastDeadline(): ApiError.TimeoutError {
    return this.deadlineError ??= new ApiError.TimeoutError({
      message: `call did not finish within its deadline of ${Duration.format(this.settings.deadline)}`,
      timeout: this.settings.deadline
    })
  }

  /** One attempt ran past `attemptTimeout` (retried like any transport failure). */
  attemptTimedOut(): ApiError.TimeoutError {
    return new ApiError.TimeoutError({
      message: `attempt timed out after ${Duration.format(this.settings.attemptTimeout)}`,
      timeout: this.settings.attemptTimeout
    })
  }

  /** One attempt, bounded by `min(attemptTimeout, time left before the deadline)`. */
  once(): Effect.Effect<A, ClientFailure, R> {
    const now = this.clock.unsafeCurrentTimeMillis()
    const left = this.deadlineAt - now
    if (left <= 0) return Effect.fail(this.pastDeadline())
    this.attempts++
    const byDeadline = left <= this.attemptMillis
    if (this.byClient) {
      return UndiciHttpClient.withDeadline(
        this.attempt,
        byDeadline ? new CallDeadline(this, now + left) : new AttemptDeadline(this, now + this.attemptMillis)
      )
    }
    return byDeadline
      ? Timeout.timeoutFail(this.attempt, left, () => this.pastDeadline())
      : Timeout.timeoutFail(this.attempt, this.attemptMillis, () => this.attemptTimedOut())
  }

  /** After a first failure: the retry Schedule (set up only now), each retry an `once` again. */
  retry(first: ClientFailure, once: Effect.Effect<A, ClientFailure, R>): Effect.Effect<A, ClientFailure, R> {
    if (first === this.deadlineError) return Effect.fail(first)
    return Effect.flatMap(
      Schedule.driver(Retry.schedule(this.settings, this.safeToRepeat, this.startedAt)),
      (driver) => this.loop(driver, first, once)
    )
  }

  private loop(
    driver: Schedule.ScheduleDriver<number, unknown>,
    error: ClientFailure,
    once: Effect.Effect<A, ClientFailure, R>
  ): Effect.Effect<A, ClientFailure, R> {
    return Effect.matchEffect(driver.next(error), {
      onFailure: () => Effect.fail(error),
      onSuccess: () => {
        this.onRetry?.(error)
        return Effect.catchAll(once, (next) => next === this.deadlineError ? Effect.fail(next) : this.loop(driver, next, once))
      }
    })
  }

  /** `error`, the call's last, carrying the call's context: `site`, the attempts made and allowed. */
  withContext(error: ClientFailure, site: CallSite): ClientFailure {
    const { method, operation, path } = site.describe()
    const attempts = { attempts: this.attempts, maxAttempts: this.settings.maxAttempts }
    return ApiError.withContext(error, { operation, method, path, ...attempts })
  }

  /** The operation span's attributes (see `Transport.call`). */
  annotate(span: Tracer.Span, exit: Exit.Exit<A, ClientFailure>): void {
    span.attribute("boxkit.attempts", this.attempts)
    span.attribute("boxkit.safe_to_repeat", this.safeToRepeat)
    span.attribute("boxkit.outcome", Exit.isSuccess(exit) ? "success" : "failure")
    if (Exit.isFailure(exit)) {
      const fields = Retry.errorFields(Option.getOrUndefined(Cause.failureOption(exit.cause)))
      for (const key in fields) span.attribute(key === "status" ? "boxkit.http_status" : `boxkit.${key}`, fields[key])
    }
  }
}

/** An attempt's deadline set by the call's deadline. */
class CallDeadline implements UndiciHttpClient.Deadline {
  constructor(private readonly call: Call<any, any>, readonly atMillis: number) {}
  onExpire() {
    return this.call.pastDeadline()
  }
}

/** An attempt's deadline set by `attemptTimeout`. */
class AttemptDeadline implements UndiciHttpClient.Deadline {
  constructor(private readonly call: Call<any, any>, readonly atMillis: number) {}
  onExpire() {
    return this.call.attemptTimedOut()
  }
}

/**
 * The headers the toolkit sends on every request, under each request's own: `User-Agent: boxkit/<version>`, then
 * `BoxkitConfig.headers` (names in lower case; a `Redacted` value unwrapped here, for the wire only), so that a
 * configured `User-Agent` wins over the toolkit's.
 */
const defaultHeadersOf = (config: BoxkitSettings): Record<string, string> => {
  const headers: Record<string, string> = { "user-agent": userAgent }
  const configured = config.headers ?? {}
  for (const name in configured) {
    const value = configured[name]
    headers[name.toLowerCase()] = Redacted.isRedacted(value) ? Redacted.value(value) : value
  }
  return headers
}

/** The site of an operation of the contract: `group.name`, its method and its path (parameters URL-encoded). */
class OperationSite implements CallSite {
  constructor(private readonly group: string, private readonly name: string, private readonly request: object) {}
  describe() {
    const groups = BoxServiceApi.groups as Record<string, { readonly endpoints: Record<string, { readonly method: string }> }>
    const endpoint = groups[this.group].endpoints[this.name]
    const params = (this.request as { readonly path?: Readonly<Record<string, unknown>> }).path ?? {}
    const encoded: Record<string, string> = {}
    for (const key in params) encoded[key] = encodeURIComponent(String(params[key]))
    return {
      operation: `${this.group}.${this.name}`,
      method: endpoint.method,
      path: ContractClient.pathOf(BoxServiceApi, this.group, this.name)(encoded)
    }
  }
}

/**
 * The site of a request built by hand: the operation, the request's method, and its URL without `base` (the group's
 * address without `/v1`, as the contract's paths carry it) and without query.
 */
class RawSite implements CallSite {
  constructor(
    private readonly operation: string,
    private readonly request: HttpClientRequest.HttpClientRequest,
    private readonly base: string
  ) {}
  describe() {
    const url = this.request.url.replace(/[?#].*$/, "")
    const path = url.startsWith(this.base)
      ? url.slice(this.base.length)
      : URL.canParse(url)
      ? new URL(url).pathname
      : url
    return { operation: this.operation, method: this.request.method, path }
  }
}

/** The shared transport. @since 0.1.0 @category Services */
export class Transport extends Effect.Service<Transport>()("boxkit/Transport", {
  effect: Effect.gen(function*() {
    const config = yield* BoxkitConfig
    const provided = yield* HttpClient.HttpClient
    // `transformClient` wraps the client every request goes through, outside the headers the toolkit sets (so it
    // sees them). A transformed client may run requests on fibers of its own: attempts are then bounded by a racing
    // timer instead of the toolkit's own client's deadline (`lean` is false).
    const transform = config.transformClient ?? identity
    const base = transform(provided)
    const lean = UndiciHttpClient.honoursDeadline(base)
    /** Every request's headers under its own: `User-Agent`, the configured ones, the bearer key (which wins). */
    const defaultHeaders = {
      ...defaultHeadersOf(config),
      authorization: `Bearer ${Redacted.value(config.apiKey)}`
    }
    /**
     * Raw requests (streams, raw bodies): the default headers, the bearer key and the key encoding added, then
     * `transformClient`; error answers decoded.
     */
    const defaultHeaderSet = Headers.fromInput(defaultHeaders)
    const http = transform(provided.pipe(
      HttpClient.mapRequest((request) => {
        const key = request.headers[IdempotencyKeyHeader]
        const encoded = key === undefined ? undefined : IdempotencyKey.toHeaderValue(key)
        const own = encoded === key ? request.headers : Headers.set(request.headers, IdempotencyKeyHeader, encoded!)
        // The request's own headers over the defaults; the bearer key over both.
        const headers = Headers.set(Headers.merge(defaultHeaderSet, own), "authorization", defaultHeaders.authorization)
        return HttpClientRequest.setHeaders(request, headers)
      })
    )).pipe(
      HttpClient.transformResponse(Effect.flatMap((response) =>
        response.status >= 400 ? decodeErrorResponse(response) : Effect.succeed(response)
      ))
    )
    const contract = (baseUrl: string) =>
      ContractClient.make(BoxServiceApi, {
        httpClient: base,
        baseUrl: origin(baseUrl),
        headers: defaultHeaders,
        mapHeaders: (headers) => {
          const key = headers[IdempotencyKeyHeader]
          return key === undefined || IdempotencyKey.toHeaderValue(key) === key
            ? headers
            : { ...headers, [IdempotencyKeyHeader]: IdempotencyKey.toHeaderValue(key) }
        },
        onErrorStatus: decodeErrorResponse
      })
    /** The contract's client on `{base_url}` (boxes, secrets, egress policies). */
    const box = contract(config.baseUrl)
    /** The contract's client on `{api_url}` (apps, responses). */
    const api = contract(config.apiUrl)

    /**
     * Runs one logical call. `attempt` is the request effect; it is run again, unchanged, for every retry (resolve
     * idempotency keys before it, never inside it). Each attempt is bounded by `attemptTimeout` (`TimeoutError`);
     * failures are retried by `Retry.schedule` (see Retry.ts); the whole call is bounded by `deadline`
     * (`TimeoutError`, not retried). Interrupting the caller, a per-attempt timeout and the deadline all interrupt
     * the attempt in flight, which aborts its HTTP request. The settings are `BoxkitConfig.retry` with the
     * overrides of {@link withRetry} and `options.retry`.
     *
     * How it is bounded: each attempt gets one timer of `min(attemptTimeout, time left before the deadline)`; a
     * retry whose wait would reach the deadline is not made (`Retry.schedule`), so no second timer is needed for the
     * deadline. With the toolkit's own `HttpClient` (`UndiciHttpClient`) and the live clock, the timer is the
     * client's (`UndiciHttpClient.withDeadline`: it bounds the HTTP exchanges the attempt runs on this fiber, which
     * is where an attempt of this transport waits); otherwise a racing fiber (`Timeout.timeoutFail`). The retry
     * Schedule is only set up after a first failure.
     *
     * With a `site`, the error the call ends with carries its context (`ApiError.CallContext`: operation, method,
     * path, attempts made and allowed), shown in its `name`.
     *
     * The current operation span (e.g. `Boxes.create`; see Tracing.ts) gets `boxkit.attempts`,
     * `boxkit.safe_to_repeat`, `boxkit.outcome` (`success` or `failure`) and on failure `boxkit.error`,
     * `boxkit.error_type`, `boxkit.http_status` and `boxkit.code`.
     */
    const call = <A, E, R>(
      attempt: Effect.Effect<A, E, R>,
      options: CallOptions,
      site?: CallSite
    ): Effect.Effect<A, ClientFailure, R> =>
      Effect.withFiberRuntime<A, ClientFailure, R>((fiber) => {
        const local = fiber.getFiberRef(currentRetryOverrides)
        const settings = local === noOverrides && options.retry === undefined
          ? config.retry
          : mergeRetry(config.retry, local, options.retry)
        const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
        // The live clock and the toolkit's own HttpClient: its exchanges honour a deadline, so a plain timer bounds
        // the attempt. Otherwise (another HttpClient, or a TestClock) a racing fiber does.
        const state = new Call(
          settings,
          options.safeToRepeat,
          clock,
          Effect.mapError(attempt, normalizeError),
          lean && clock.constructor === liveClock,
          options.onRetry
        )
        const once = Effect.suspend(() => state.once())
        const retried = Effect.catchAll(once, (first) => state.retry(first, once))
        const ended = site === undefined ? retried : Effect.mapError(retried, (error) => state.withContext(error, site))
        const span = Tracing.spanOf(fiber)
        if (span === undefined) return ended
        return Effect.onExit(ended, (exit) => Effect.sync(() => state.annotate(span, exit)))
      })

    const clientOf = (group: string) => (apiUrlGroups.has(group) ? api : box) as unknown as Record<
      string,
      Record<string, (request: object) => Effect.Effect<any, unknown>>
    >
    // The headers schema of an endpoint that has one wants an object, even when every header is optional; an
    // endpoint without one ignores `headers`.
    const noHeaders = {}
    const withOverride = (request: object, reason: string | undefined): object => {
      const headers = (request as { readonly headers?: object }).headers
      if (reason !== undefined) return { ...request, headers: { ...headers, ...ownerOverrideHeaders(reason) } }
      return headers === undefined ? { ...request, headers: noHeaders } : request
    }

    /**
     * Endpoint `name` of `group` sent with `request` by {@link call}, with its {@link OperationSite}: its value, or
     * `[value, response]` when `answerResponse`; the answer is handed to an enclosing {@link withResponse}.
     */
    const sendOperation = (
      group: string,
      name: string,
      request: object,
      options: OperationCallOptions,
      answerResponse: boolean
    ): Effect.Effect<any, ClientFailure> =>
      Effect.withFiberRuntime((fiber) => {
        const slot = fiber.getFiberRef(currentResponseSlot)
        const sent = withOverride(request, options.ownerOverrideReason)
        const endpoint = clientOf(group)[group][name]
        const site = new OperationSite(group, name, request)
        if (slot === undefined && !answerResponse) return call(endpoint(sent), options, site)
        const withResponse = endpoint({ ...sent, withResponse: true }) as Effect.Effect<
          readonly [unknown, HttpClientResponse.HttpClientResponse],
          unknown
        >
        const answered = Effect.map(withResponse, (answer) => {
          slot?.record(answer[1])
          return answerResponse ? answer : answer[0]
        })
        return call(answered, options, site)
      })

    /**
     * One operation of the contract, the way every service method runs it: endpoint `name` of `group` called with
     * `request` on the group's address (`{api_url}` or `{base_url}`), the owner-override header added when
     * `options.ownerOverrideReason` is set, run by {@link call} (`safeToRepeat`, `retry`), and failing with exactly
     * the errors the endpoint lists in the contract (`OperationError`); any other envelope is an
     * `UnexpectedResponseError`.
     */
    const operation = <G extends GroupName, N extends EndpointName<G>>(
      group: G,
      name: N,
      request: RequestOf<G, N>,
      options: OperationCallOptions
    ): Effect.Effect<HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<G, N>>, OperationError<G, N>> =>
      keepListed(errorsListedBy(group, name), sendOperation(group, name, request, options, false))

    /** {@link operation}, answering the value with the HTTP response (for its headers, e.g. `Idempotent-Replayed`). */
    const operationWithResponse = <G extends GroupName, N extends EndpointName<G>>(
      group: G,
      name: N,
      request: RequestOf<G, N>,
      options: OperationCallOptions
    ): Effect.Effect<
      readonly [HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<G, N>>, HttpClientResponse.HttpClientResponse],
      OperationError<G, N>
    > =>
      keepListed(errorsListedBy(group, name), sendOperation(group, name, request, options, true))

    /**
     * {@link operation} for a request built by hand (a raw body, a streamed answer): `request` is sent as is (its URL
     * from {@link urlOf}), with the bearer key; `use` reads the answer. Errors as {@link operation}.
     */
    const operationRaw = <G extends GroupName, N extends EndpointName<G>, A>(
      group: G,
      name: N,
      request: HttpClientRequest.HttpClientRequest,
      use: (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<A, unknown>,
      options: OperationCallOptions
    ): Effect.Effect<A, OperationError<G, N>> =>
      keepListed(
        errorsListedBy(group, name),
        Effect.withFiberRuntime((fiber) => {
          const slot = fiber.getFiberRef(currentResponseSlot)
          const sent = http.execute(
            HttpClientRequest.setHeaders(request, ownerOverrideHeaders(options.ownerOverrideReason))
          )
          return call(
            Effect.flatMap(sent, (response) => {
              slot?.record(response)
              return use(response)
            }),
            options,
            new RawSite(`${group}.${name}`, request, origin(apiUrlGroups.has(group) ? config.apiUrl : config.baseUrl))
          )
        })
      )

    /**
     * The URL of endpoint `name` of `group` for `params` (each path parameter URL-encoded), on the group's address:
     * for requests built by hand ({@link operationRaw}).
     */
    const urlOf = <G extends GroupName>(group: G, name: EndpointName<G>, params: Record<string, string> = {}) => {
      const path = ContractClient.pathOf(BoxServiceApi, group, name)
      const encoded: Record<string, string> = {}
      for (const key in params) encoded[key] = encodeURIComponent(params[key])
      return `${origin(apiUrlGroups.has(group) ? config.apiUrl : config.baseUrl)}${path(encoded)}`
    }

    return { config, http, box, api, call, operation, operationWithResponse, operationRaw, urlOf }
  })
}) {}
