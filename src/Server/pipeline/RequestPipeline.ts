/**
 * What happens to every `/v1` request before it reaches the contract's handlers, in this order:
 * 1. draining: 503 `server_error` with Retry-After (the check and the in-flight count are one atomic step, so a
 *    request counted in flight is always awaited by `Admission.awaitIdle`);
 * 2. a declared `Content-Length` over the operation's body limit (`MaxBodyBytes` in the contract, at most
 *    `LocalServiceConfig.maxBodyBytes`): 400 naming the limit;
 * 3. authentication: 401 `invalid_api_key` (only `Bearer <key>`; `Basic ...` and the rest are 401);
 * 4. credits: 402 `credits_exhausted` with `billing_url`;
 * 5. the new-organization in-flight cap: 429 `rate_limited` with Retry-After, before anything runs;
 * 6. the body, read once (a chunked body is counted as it arrives: over the limit it is a 400, never a dropped
 *    connection; `multipart/*` is a 400: no operation takes it) and handed on in the request object itself;
 * 7. idempotency on the endpoints annotated `Idempotent` (key over 255 bytes: 400 naming `Idempotency-Key`; replay
 *    with `Idempotent-Replayed: true`; 409 `conflict_error` for a reused key; 409 `server_error`
 *    `idempotent_request_in_flight`), then the handler.
 *
 * Steps 1-5 are one effect (`admit`) that needs nothing from the request's context, and steps 6-7 another
 * (`runAdmitted`); `handle` runs both for any `HttpServerRequest`. The Node handler runs `admit` when a request arrives,
 * reads the body with Node's events, and only then starts the request's fiber for `runAdmitted`. The caller is handed
 * to the contract as a value (`run(principal, request)`), not through a context merge; a key that was found once is
 * not wrapped in a new `Redacted` again.
 *
 * Each rule has its own module: Admission.ts (steps 1 and 5), Authentication.ts (3), RequestBody.ts and NodeBody.ts
 * (6), Idempotency.ts (7); this one runs them in order.
 *
 * Source: spec "Authentication" 1, 4, 5; "Errors" rules 1-3; "Limits" (idempotency, new organization); docs/decisions/0002-what-the-fast-paths-save.md
 * (per-request machinery).
 *
 * @since 0.1.0
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, type Clock, type Context, Duration, Effect, Redacted } from "effect"
import * as ApiError from "../../ApiError.js"
import { defaultMaxBodyBytes, IdempotencyKeyHeader, IdempotentReplayedHeader } from "../../Contract/Api.js"
import * as IdempotencyKey from "../../Contract/IdempotencyKey.js"
import { currentPrincipal, type PrincipalShape } from "../../Contract/Principal.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import { Admission } from "./Admission.js"
import { bearerValue, type Caller, invalidKey, lookUpCaller, missingKey } from "./Authentication.js"
import * as Idempotency from "./Idempotency.js"
import { Transactions } from "../state/Transactions.js"
import { emptyBody, hasBody, invalidUtf8, readGenericBody, refusedBeforeParse, withBody } from "./RequestBody.js"
import { LocalServiceConfig, type LocalServiceSettings } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import * as NodeBody from "./NodeBody.js"
import { Identity } from "../state/Repositories.js"
import * as Routes from "../http/Routes.js"
import * as StoreOutage from "../state/StoreOutage.js"

/**
 * The router settings the contract's app must be built with: path parameters up to 4,096 characters reach the
 * contract's schemas (the router's default of 100 would answer a 404 to, e.g., a valid 128-character secret name sent
 * with surrounding whitespace), so an over-long parameter gets the 400 that names it.
 */
export const routerConfig = { maxParamLength: 4096 } as const

const tooLarge = (size: string, maxBytes: number) =>
  ErrorResponse.fromApiError(ApiError.make.invalidRequest(
    `Request body too large: ${size}; the maximum is ${maxBytes} bytes.`
  ))

/**
 * Runs the contract for an admitted request: `principal` is the caller, `request` the request with its body read
 * (the same object when it could take the body in place).
 */
export type Run<E, R> = (
  principal: PrincipalShape,
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

/**
 * The request pipeline as a function of one request: every rule above, then `run`. Failures of the pipeline itself
 * are answered with the error envelope; failures of `run` pass through (the caller maps them to the envelope
 * before, so that idempotency remembers 4xx answers).
 */
export type Handle = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  run: Run<E, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

/**
 * The outcome of steps 1-5 for one request: `Refused` with the answer to send (nothing is held), or `Admitted` with
 * the caller and `release`, which gives back what the request took (its in-flight count and its organization's
 * slot) and must run once when the request has ended, whatever its outcome.
 */
export type Admit =
  | { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse }
  | {
    readonly _tag: "Admitted"
    readonly principal: PrincipalShape
    readonly release: () => void
    /** The contract's route of the request (undefined: no route; the contract answers 404). */
    readonly route: Routes.Route | undefined
    /** The request's body limit, in bytes: its route's, at most `LocalServiceConfig.maxBodyBytes`. */
    readonly maxBodyBytes: number
  }

/** The request pipeline: its steps, and the whole of it as one effect. */
export interface Pipeline {
  /** Runs the rules for `request`, then `run`; what admission took is given back when it ends. */
  readonly handle: Handle
  /**
   * Steps 1-5 (draining and the in-flight count, declared length, authentication, credits, the new-organization
   * cap). Needs nothing from the context, so that a server can run it before the request's own fiber starts.
   */
  readonly admit: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Admit>
  /**
   * {@link Pipeline.admit} decided now, without an effect, when the caller is in the pipeline's index of recent
   * callers; undefined when the identity store must be asked (then run `admit`).
   */
  readonly admitNow: (request: HttpServerRequest.HttpServerRequest) => Admit | undefined
  /**
   * Steps 6-7 and `run`, for an admitted caller. `body` is the body when it was read already (see
   * {@link Pipeline.refuseBody}); otherwise it is read here.
   */
  readonly runAdmitted: <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    admitted: Admitted,
    run: Run<E, R>,
    body?: Uint8Array
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  /**
   * The answer to a body that could not be taken (too large for `maxBodyBytes`, unreadable), or undefined when it
   * was read.
   */
  readonly refuseBody: (read: NodeBody.BodyRead, maxBodyBytes: number) => HttpServerResponse.HttpServerResponse | undefined
}

/**
 * How long the pipeline answers a key from its index of recent callers before it asks the identity store again, in
 * milliseconds: the longest a change to a key or its organization (credits) made elsewhere (another instance on a
 * shared database) takes to apply. docs/ASSUMPTIONS.md "Serving".
 */
export const callerIndexMillis = 5_000

/** An admitted request (see {@link Admit}). */
export type Admitted = Extract<Admit, { readonly _tag: "Admitted" }>

const refused = (response: HttpServerResponse.HttpServerResponse): Admit => ({ _tag: "Refused", response })

/**
 * What the pipeline's steps read, gathered once when it is built (never per request): the services, the settings
 * derived from `LocalServiceConfig`, and the index of recent callers.
 */
interface PipelineServices {
  readonly config: LocalServiceSettings
  readonly clock: Clock.Clock
  readonly identity: Context.Tag.Service<Identity>
  readonly admission: Context.Tag.Service<Admission>
  readonly store: Context.Tag.Service<Idempotency.IdempotencyStore>
  readonly transactions: Context.Tag.Service<Transactions>
  /** `config.newOrgWindow`, in milliseconds. */
  readonly newOrgWindowMillis: number
  /** The largest answer remembered for an Idempotency-Key, in bytes. */
  readonly maxAnswerBytes: number
  /** The answer to a request that arrives while the service drains. */
  readonly draining: Admit
  /**
   * The callers of recent requests by key, each for `callerIndexMillis` after it was looked up: most requests are
   * admitted without asking the identity store (only known keys are kept: at most one entry per API key).
   */
  readonly callers: Map<string, { readonly caller: Caller; readonly until: number }>
}

/**
 * Which writes of an idempotent request are stored as one unit of work (Routes.ts `atomic`, Transactions.ts
 * `claimsInUnit`): `WithClaim` the key's claim, the handler's writes and the remembered answer; `WithAnswer` the
 * handler's writes and the remembered answer (the claim is stored on its own); `None` each write on its own.
 */
type UnitOfWork = "WithClaim" | "WithAnswer" | "None"

/** Step 7 for a request with an Idempotency-Key on an `Idempotent` route: the key's claim, then `handled` or an answer. */
const runIdempotent = <E, R>(
  services: PipelineServices,
  handled: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  request: HttpServerRequest.HttpServerRequest,
  principal: PrincipalShape,
  key: string,
  body: Uint8Array,
  route: Routes.Route
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  if (IdempotencyKey.byteLength(key) > IdempotencyKey.maxBytes) {
    return Effect.succeed(ErrorResponse.fromApiError(
      ApiError.make.invalidRequest(
        `Idempotency-Key must be at most ${IdempotencyKey.maxBytes} bytes (UTF-8).`,
        IdempotencyKey.param
      )
    ))
  }
  // One writer: the claim joins the request's unit of work (Transactions.ts `claimsInUnit`); a crash before its
  // commit keeps neither the claim nor what the request made.
  const unit: UnitOfWork = !route.atomic ? "None" : services.transactions.claimsInUnit ? "WithClaim" : "WithAnswer"
  // The organization the caller acts for: its remembered answers count in that organization's stored bytes.
  const holder = { scope: principal.keyId, orgId: principal.organizationOfUser }
  const fingerprint = Idempotency.fingerprint(request.method, request.url, body)
  const claim = services.store.claim(holder, key, fingerprint, unit === "WithClaim")
  const answered = Effect.flatMap(
    Effect.either(claim),
    (claimed) => claimed._tag === "Left" ? storeFailed(claimed.left) : answerClaim(services, claimed.right, handled, unit)
  )
  return unit === "WithClaim" ? services.transactions.atomically(answered) : answered
}

function storeFailed(error: Idempotency.IdempotencyStoreError) {
  if (StoreOutage.isOutage(error.cause)) {
    return Effect.as(
      Effect.logWarning(`request refused: the idempotency store is unavailable (${error.reason})`),
      ErrorResponse.fromApiError(StoreOutage.unavailable())
    )
  }
  return Effect.as(
    Effect.logError("the idempotency store failed", error.reason),
    ErrorResponse.fromApiError(ApiError.make.server("The idempotency store failed; retry with the same key."))
  )
}

/** The answer to a claimed Idempotency-Key: a refusal, the remembered answer, or `handled` with its answer remembered. */
function answerClaim<E, R>(
  services: PipelineServices,
  claim: Idempotency.Claim,
  handled: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  unit: UnitOfWork
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
  switch (claim._tag) {
    case "Mismatch":
      return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.conflict(
        "This Idempotency-Key was used for a different request (method, path or body differ). Use a new key for new work.",
        null,
        IdempotencyKey.param
      )))
    case "InFlight":
      return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.idempotentRequestInFlight()))
    case "Full":
      return Effect.succeed(ErrorResponse.fromApiError(Quotas.idempotencyKeysExceeded()))
    case "Replay":
      return Effect.succeed(HttpServerResponse.uint8Array(claim.answer.body, {
        status: claim.answer.status,
        headers: { ...claim.answer.headers, [IdempotentReplayedHeader]: "true" }
      }))
    case "Started": {
      const answered = Effect.flatMap(handled, (response) => rememberAnswer(services.maxAnswerBytes, claim, response))
      // An atomic route's writes and its remembered answer are kept together: a crash before the commit keeps
      // neither, so a retry with the key runs again and makes its resource once (Routes.ts `atomic`).
      return Effect.onExit(
        unit === "WithAnswer" ? services.transactions.atomically(answered) : answered,
        (exit) => exit._tag === "Failure" ? claim.release : Effect.void
      )
    }
  }
}

/**
 * Settles a started claim with `response` (status, content type, Retry-After and the body's bytes), or releases it
 * when the answer is not to be remembered; succeeds with `response` either way.
 */
const rememberAnswer = (
  maxAnswerBytes: number,
  claim: Extract<Idempotency.Claim, { readonly _tag: "Started" }>,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  if (
    response.status >= 500 || response.body._tag !== "Uint8Array" ||
    response.body.body.byteLength > maxAnswerBytes
  ) {
    // A server error leaves the key unsettled; a streamed answer cannot be replayed, and an answer over
    // `maxAnswerBytes` is not recorded (docs/ASSUMPTIONS.md).
    return Effect.as(claim.release, response)
  }
  const headers: Record<string, string> = {}
  const contentType = response.body.contentType
  if (contentType) headers["content-type"] = contentType
  if (response.headers["retry-after"] !== undefined) headers["retry-after"] = response.headers["retry-after"]
  // A failure to record the answer leaves the key unsettled: the answer goes out, a retry runs again.
  return Effect.as(
    Effect.catchAllCause(
      claim.settle({ status: response.status, headers, body: response.body.body }),
      (cause) =>
        Effect.zipRight(
          Effect.logWarning("could not record an idempotent answer; the key stays unsettled", Cause.squash(cause)),
          claim.release
        )
    ),
    response
  )
}

/** True when the request says its body is JSON (or says nothing: the contract's bodies are JSON). */
const isJson = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const contentType = request.headers["content-type"]
  return contentType === undefined || contentType.toLowerCase().includes("json")
}

/** Step 7: the body is read; idempotency, then the contract. */
function runWithBody<E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  admitted: Admitted,
  run: Run<E, R>,
  body: Uint8Array
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
  // JSON nested too deep, or a member over its byte cap, is refused before anything parses or decodes it
  // (docs/ASSUMPTIONS.md "Request body limits").
  const refusal = isJson(request) ? refusedBeforeParse(body, admitted.route?.memberCaps) : undefined
  if (refusal !== undefined) return Effect.succeed(ErrorResponse.fromApiError(refusal))
  // A JSON body that is not UTF-8 is refused, naming the member it is in, rather than read with U+FFFD.
  if (body.byteLength > 0 && isJson(request)) {
    const broken = invalidUtf8(body)
    if (broken !== undefined) {
      return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.invalidRequest(
        "The request body is not valid UTF-8" + (broken.field !== null ? ` (in ${broken.field}).` : "."),
        broken.field
      )))
    }
  }
  let requestWithBody = request
  if (NodeBody.takesBodyInPlace(request)) request.setBody(body)
  else requestWithBody = withBody(request, body)
  const handled = run(admitted.principal, requestWithBody)
  const key = request.headers[IdempotencyKeyHeader]
  if (key !== undefined && !IdempotencyKey.isBlank(key) && admitted.route?.idempotent === true) {
    return runIdempotent(services, handled, requestWithBody, admitted.principal, key, body, admitted.route)
  }
  return handled
}

/** The answer to a body that could not be taken, or undefined when it was read ({@link Pipeline.refuseBody}). */
const refuseBody = (read: NodeBody.BodyRead, maxBodyBytes: number): HttpServerResponse.HttpServerResponse | undefined => {
  switch (read._tag) {
    case "Read":
      return undefined
    case "TooLarge":
      return tooLarge(`more than ${maxBodyBytes} bytes`, maxBodyBytes)
    case "Failed":
      return ErrorResponse.fromApiError(ApiError.make.invalidRequest(`Request body could not be read: ${read.message}`))
  }
}

/** Steps 6-7, for an authenticated caller whose organization (if any) passed the credits check. */
function runAdmitted<E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  admitted: Admitted,
  run: Run<E, R>,
  body?: Uint8Array
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
  if ((request.headers["content-type"] ?? "").toLowerCase().includes("multipart/")) {
    // No operation takes multipart bodies, and a buffered body cannot be handed on as one.
    return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.invalidRequest(
      "Content-Type multipart/* is not accepted: bodies are JSON (clipboard: text/plain or image/*).",
      "Content-Type"
    )))
  }
  if (body !== undefined) return runWithBody(services, request, admitted, run, body)
  if (!hasBody(request.headers)) return runWithBody(services, request, admitted, run, emptyBody)
  const maxBodyBytes = admitted.maxBodyBytes
  const read = NodeBody.takesBodyInPlace(request)
    ? NodeBody.readNodeBody(request.source, maxBodyBytes)
    : readGenericBody(request, maxBodyBytes)
  return Effect.flatMap(read, (result) => {
    const refusal = refuseBody(result, maxBodyBytes)
    return refusal !== undefined || result._tag !== "Read"
      ? Effect.succeed(refusal!)
      : runWithBody(services, request, admitted, run, result.bytes)
  })
}

/** Gives back what an admitted request took: its organization's slot (if any), then its in-flight count. */
const releaseOf = (admission: Context.Tag.Service<Admission>, orgId: string | null) =>
  orgId === null
    ? admission.end
    : () => {
      admission.leave(orgId)
      admission.end()
    }

/**
 * Steps 1-5 for a request whose caller was looked up (`caller` undefined: no such key; `missing`: no key sent).
 * The one home of these rules, whichever way the caller was found.
 */
const decideAdmission = (
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  caller: Caller | undefined | "missing"
): Admit => {
  // 1. draining, atomic with the in-flight count
  if (!services.admission.begin()) return services.draining
  const outcome = admitCounted(services, request, caller)
  if (outcome._tag === "Refused") services.admission.end()
  return outcome
}

/** Steps 2-5 for a request counted in flight. */
const admitCounted = (
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  caller: Caller | undefined | "missing"
): Admit => {
  const { admission, config } = services
  const queryAt = request.url.indexOf("?")
  const route = Routes.match(request.method, queryAt < 0 ? request.url : request.url.slice(0, queryAt))
  const maxBodyBytes = Math.min(route?.maxBodyBytes ?? defaultMaxBodyBytes, config.maxBodyBytes)
  // 2. declared length
  const declaredLength = request.headers["content-length"]
  if (declaredLength !== undefined && Number(declaredLength) > maxBodyBytes) {
    return refused(tooLarge(`${declaredLength} bytes`, maxBodyBytes))
  }
  // 3. authentication
  if (caller === "missing") return refused(ErrorResponse.fromApiError(missingKey()))
  if (caller === undefined) return refused(ErrorResponse.fromApiError(invalidKey()))
  const { organization, principal } = caller
  if (organization === undefined) return { _tag: "Admitted", principal, release: admission.end, route, maxBodyBytes }
  // 4. credits
  if (!organization.credits) return refused(ErrorResponse.fromApiError(ApiError.make.billing(config.billingUrl)))
  // 5. the new-organization cap
  const isNew = services.clock.unsafeCurrentTimeMillis() - organization.createdAtMillis < services.newOrgWindowMillis
  if (!admission.enter(organization.id, isNew ? config.newOrgInFlightCap : Number.POSITIVE_INFINITY)) {
    return refused(ErrorResponse.fromApiError(ApiError.make.rateLimited(config.retryAfter)))
  }
  return { _tag: "Admitted", principal, release: releaseOf(admission, organization.id), route, maxBodyBytes }
}

/** The caller of `value` from the index; undefined when it is not there or too old. */
const indexedCaller = (services: PipelineServices, value: string): Caller | undefined => {
  const entry = services.callers.get(value)
  if (entry === undefined) return undefined
  if (services.clock.unsafeCurrentTimeMillis() < entry.until) return entry.caller
  services.callers.delete(value)
  return undefined
}

/** {@link Pipeline.admitNow}. */
const admitRequestNow = (services: PipelineServices, request: HttpServerRequest.HttpServerRequest): Admit | undefined => {
  const value = bearerValue(request.headers.authorization)
  if (value === undefined) return decideAdmission(services, request, "missing")
  const caller = indexedCaller(services, value)
  return caller === undefined ? undefined : decideAdmission(services, request, caller)
}

/** {@link Pipeline.admit}: from the index of recent callers, else from the identity store (then indexed). */
const admitRequest = (services: PipelineServices, request: HttpServerRequest.HttpServerRequest): Effect.Effect<Admit> =>
  Effect.suspend(() => {
    const now = admitRequestNow(services, request)
    if (now !== undefined) return Effect.succeed(now)
    const value = bearerValue(request.headers.authorization)!
    return Effect.map(lookUpCaller(services.identity, Redacted.make(value)), (caller) => {
      if (caller !== undefined) {
        services.callers.set(value, { caller, until: services.clock.unsafeCurrentTimeMillis() + callerIndexMillis })
      }
      return decideAdmission(services, request, caller)
    }).pipe(Effect.catchTag("StoreError", (error) =>
      Effect.map(StoreOutage.answer(error), (answer) => refused(ErrorResponse.fromApiError(answer)))))
  })

/** {@link Pipeline.handle}: admission, then steps 6-7 and `run`; what admission took is given back at the end. */
const handleRequest = <E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  run: Run<E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.acquireUseRelease(
    admitRequest(services, request),
    (outcome) =>
      outcome._tag === "Refused"
        ? Effect.succeed(outcome.response)
        : Effect.interruptible(runAdmitted(services, request, outcome, run)),
    (outcome) => outcome._tag === "Admitted" ? Effect.sync(outcome.release) : Effect.void
  )

/** Builds the request pipeline over the services in context. */
export const make: Effect.Effect<
  Pipeline,
  never,
  LocalServiceConfig | Identity | Admission | Idempotency.IdempotencyStore | Transactions
> = Effect.gen(function*() {
  const config = yield* LocalServiceConfig
  const services: PipelineServices = {
    config,
    clock: yield* Effect.clock,
    identity: yield* Identity,
    admission: yield* Admission,
    store: yield* Idempotency.IdempotencyStore,
    transactions: yield* Transactions,
    newOrgWindowMillis: Duration.toMillis(config.newOrgWindow),
    maxAnswerBytes: config.quotas.idempotencyAnswerBytes ?? Idempotency.maxRememberedAnswerBytes,
    draining: refused(ErrorResponse.fromApiError(
      ApiError.make.unavailable("The service is shutting down. Retry after the Retry-After delay.", config.retryAfter)
    )),
    callers: new Map()
  }
  return {
    admit: (request) => admitRequest(services, request),
    admitNow: (request) => admitRequestNow(services, request),
    runAdmitted: (request, admitted, run, body) => runAdmitted(services, request, admitted, run, body),
    refuseBody,
    handle: (request, run) => handleRequest(services, request, run)
  }
})

/**
 * Wraps an `HttpApp` with the rules that apply to every `/v1` request ({@link make}); the caller is handed to
 * the app through `currentPrincipal` (read by the contract's `Authorization` middleware). Failures of the pipeline
 * itself are answered with the error envelope.
 */
export const middleware = Effect.map(
  make,
  ({ handle }) =>
  <E, R>(inner: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      handle(request, (principal, requestWithBody) =>
        Effect.locally(
          requestWithBody === request
            ? inner
            : Effect.provideService(inner, HttpServerRequest.HttpServerRequest, requestWithBody),
          currentPrincipal,
          principal
        )))
)
