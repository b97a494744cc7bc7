/**
 * What happens to every `/v1` request before it reaches the contract's handlers, in this order:
 * 1. draining: 503 `server_error` with Retry-After (the check and the in-flight count are one atomic step, so a
 *    request counted in flight is always awaited by `Admission.awaitIdle`);
 * 2. a declared `Content-Length` over `maxBodyBytes`: 400 naming the limit;
 * 3. authentication: 401 `invalid_api_key` (only `Bearer <key>`; `Basic ...` and the rest are 401);
 * 4. credits: 402 `credits_exhausted` with `billing_url`;
 * 5. the new-organization in-flight cap: 429 `rate_limited` with Retry-After, before anything runs;
 * 6. the body, read once (a chunked body is counted as it arrives: over `maxBodyBytes` it is a 400, never a dropped
 *    connection; `multipart/*` is a 400: no operation takes it) and handed on in the request object itself;
 * 7. idempotency on the endpoints annotated `Idempotent` (key over 255 bytes: 400 naming `Idempotency-Key`; replay
 *    with `Idempotent-Replayed: true`; 409 `conflict_error` for a reused key; 409 `server_error`
 *    `idempotent_request_in_flight`), then the handler.
 *
 * Steps 1-5 only read in-memory state and run as one plain function (`Started.admit`, no effect); the Node handler
 * runs them when a request arrives, reads the body with Node's events (`Started.readBody`), and only then starts
 * the request's fiber for step 7 and the contract (`Started.effect`). `handle` runs the same steps inside an
 * effect, for any `HttpServerRequest`. The caller is handed to the contract as a value (`run(principal, request)`),
 * not through a context merge; a key that was found once is not wrapped in a new `Redacted` again.
 *
 * Each rule has its own module: Admission.ts (steps 1 and 5), Authentication.ts (3), RequestBody.ts (6),
 * Idempotency.ts (7); this one runs them in order.
 *
 * Source: spec "Authentication" 1, 4, 5; "Errors" rules 1-3; "Limits" (idempotency, new organization); issue 6
 * (per-request machinery).
 *
 * @since 0.1.0
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Duration, Effect, Redacted } from "effect"
import * as ApiError from "../../ApiError.js"
import { IdempotencyKeyHeader, IdempotentReplayedHeader } from "../../Contract/Api.js"
import { currentPrincipal, type PrincipalShape } from "../../Contract/Principal.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import { Admission } from "./Admission.js"
import { bearerValue, invalidKey, missingKey, principalOf } from "./Authentication.js"
import * as Idempotency from "./Idempotency.js"
import { emptyBody, hasBody, readGenericBody, withBody } from "./RequestBody.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as NodeRequest from "../http/fast/NodeRequest.js"
import { Identity } from "../state/Repositories.js"
import * as Routes from "../http/Routes.js"

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

/** What a request took that it must give back when it ends: its in-flight count and its organization's slot. */
class Admittance {
  admitted = false
  begun = false
  organization: string | null = null
  principal: PrincipalShape | undefined = undefined
}

/** The parts of a pipeline a {@link Started} request uses. */
interface StartedRules {
  readonly admit: (request: HttpServerRequest.HttpServerRequest, admittance: Admittance) => HttpServerResponse.HttpServerResponse | undefined
  readonly finish: (admittance: Admittance) => void
  readonly maxBodyBytes: number
  readonly tooLarge: () => HttpServerResponse.HttpServerResponse
  readonly unreadable: (message: string) => HttpServerResponse.HttpServerResponse
}

/**
 * A request started with {@link Pipeline.start} (a class, so that no closure is made per request). Either run
 * {@link Started.effect} from the start, or first {@link Started.admit} it and {@link Started.readBody} (outside any
 * fiber), then run the effect for the rest; in both cases call {@link Started.done} once when it has ended.
 */
export class Started<E, R> {
  constructor(
    /** Steps 1-7 (1-5 and the body read skipped when done already), then the contract. */
    readonly effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    private readonly request: HttpServerRequest.HttpServerRequest,
    private readonly admittance: Admittance,
    private readonly rules: StartedRules
  ) {}

  /**
   * Steps 1-5 (draining and the in-flight count, declared length, authentication, credits, the new-organization
   * cap), now: the refusal to answer, if any.
   */
  admit(): HttpServerResponse.HttpServerResponse | undefined {
    return this.rules.admit(this.request, this.admittance)
  }

  /**
   * Reads the body of a {@link NodeRequest.LocalRequest} into it (at most `maxBodyBytes`; see
   * {@link NodeRequest.readNodeBody}), then calls `then` with the refusal to answer (too large, unreadable) or
   * undefined to go on. Any other request, or one without a body, goes on at once.
   */
  readBody(then: (refusal: HttpServerResponse.HttpServerResponse | undefined) => void): void {
    const request = this.request
    if (!(request instanceof NodeRequest.LocalRequest) || !hasBody(request.headers)) return then(undefined)
    const rules = this.rules
    NodeRequest.readNodeBodyThen(request.source, rules.maxBodyBytes, (read) => {
      switch (read._tag) {
        case "Read":
          request.setBody(read.bytes)
          return then(undefined)
        case "TooLarge":
          return then(rules.tooLarge())
        case "Failed":
          return then(rules.unreadable(read.message))
      }
    })
  }

  /** Counts the request out (once; nothing when it was never counted in). */
  done(): void {
    this.rules.finish(this.admittance)
  }
}

/** The request pipeline, two ways to run it. */
export interface Pipeline {
  /** Runs the rules for `request`, then `run`; counts the request in and out of the in-flight figures. */
  readonly handle: Handle
  /**
   * The same, for a caller that runs each request in a fiber of its own: `effect` counts the request in; `done()`
   * (to call once, as a method, when the request's fiber has ended, whatever its outcome) counts it out.
   */
  readonly start: <E, R>(request: HttpServerRequest.HttpServerRequest, run: Run<E, R>) => Started<E, R>
}

/** Builds the request pipeline over the services in context. */
export const makePipeline: Effect.Effect<
  Pipeline,
  never,
  LocalServiceConfig | Identity | Admission | Idempotency.IdempotencyStore
> = Effect.gen(function*() {
  const config = yield* LocalServiceConfig
  const clock = yield* Effect.clock
  const identity = yield* Identity
  const admission = yield* Admission
  const store = yield* Idempotency.IdempotencyStore
  const newOrgWindowMillis = Duration.toMillis(config.newOrgWindow)
  const maxBodyBytes = config.maxBodyBytes
  // The redacted form of each key that was found once, so a request with a known key makes no new `Redacted` (each
  // one is registered in a global weak map). Only keys the identity store knows get here: at most one per API key.
  const knownKeys = new Map<string, Redacted.Redacted<string>>()

  const draining = () =>
    ErrorResponse.fromApiError(
      ApiError.make.unavailable("The service is shutting down. Retry after the Retry-After delay.", config.retryAfter)
    )

  const runIdempotent = <E, R>(
    inner: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    request: HttpServerRequest.HttpServerRequest,
    principal: PrincipalShape,
    key: string,
    body: Uint8Array
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
    if (Idempotency.headerBytes(key) > Idempotency.maxKeyBytes) {
      return Effect.succeed(ErrorResponse.fromApiError(
        ApiError.make.invalidRequest(
          `Idempotency-Key must be at most ${Idempotency.maxKeyBytes} bytes (UTF-8).`,
          "Idempotency-Key"
        )
      ))
    }
    const claim = store.claim(principal.keyId, key, Idempotency.fingerprint(request.method, request.url, body))
    return Effect.flatMap(
      Effect.either(claim),
      (claimed) => claimed._tag === "Left" ? storeFailed(claimed.left) : answerClaim(claimed.right, inner)
    )
  }

  function storeFailed(error: Idempotency.IdempotencyStoreError) {
    return Effect.as(
      Effect.logError("the idempotency store failed", error.reason),
      ErrorResponse.fromApiError(ApiError.make.server("The idempotency store failed; retry with the same key."))
    )
  }

  function answerClaim<E, R>(
    claim: Idempotency.Claim,
    inner: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
    switch (claim._tag) {
      case "Mismatch":
        return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.conflict(
          "This Idempotency-Key was used for a different request (method, path or body differ). Use a new key for new work.",
          null,
          "Idempotency-Key"
        )))
      case "InFlight":
        return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.idempotentRequestInFlight()))
      case "Replay":
        return Effect.succeed(HttpServerResponse.uint8Array(claim.answer.body, {
          status: claim.answer.status,
          headers: { ...claim.answer.headers, [IdempotentReplayedHeader]: "true" }
        }))
      case "Started":
        return Effect.flatMap(
          Effect.onExit(inner, (exit) => exit._tag === "Failure" ? claim.release : Effect.void),
          (response) => {
            if (response.status >= 500 || response.body._tag !== "Uint8Array") {
              // A server error leaves the key unsettled; a streamed answer cannot be replayed (docs/ASSUMPTIONS.md).
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
        )
    }
  }

  /** Step 7: the body is read; idempotency, then the contract. */
  function forward<E, R>(
    request: HttpServerRequest.HttpServerRequest,
    headers: HttpServerRequest.HttpServerRequest["headers"],
    principal: PrincipalShape,
    run: Run<E, R>,
    body: Uint8Array
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
    let forwarded = request
    if (request instanceof NodeRequest.LocalRequest) request.setBody(body)
    else forwarded = withBody(request, body)
    const handled = run(principal, forwarded)
    const key = headers[IdempotencyKeyHeader]
    if (key !== undefined && key.trim() !== "") {
      const queryAt = request.url.indexOf("?")
      const route = Routes.match(request.method, queryAt < 0 ? request.url : request.url.slice(0, queryAt))
      if (route?.idempotent === true) return runIdempotent(handled, forwarded, principal, key, body)
    }
    return handled
  }

  /** Steps 5-7, for an authenticated caller whose organization (if any) passed the credits check. */
  function admitted<E, R>(
    request: HttpServerRequest.HttpServerRequest,
    headers: HttpServerRequest.HttpServerRequest["headers"],
    principal: PrincipalShape,
    run: Run<E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
    if ((headers["content-type"] ?? "").toLowerCase().includes("multipart/")) {
      // No operation takes multipart bodies, and a buffered body cannot be handed on as one.
      return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.invalidRequest(
        "Content-Type multipart/* is not accepted: bodies are JSON (clipboard: text/plain or image/*).",
        "Content-Type"
      )))
    }
    if (request instanceof NodeRequest.LocalRequest && request.bodyBytes !== undefined) {
      return forward(request, headers, principal, run, request.bodyBytes)
    }
    if (!hasBody(headers)) return forward(request, headers, principal, run, emptyBody)
    const read = request instanceof NodeRequest.LocalRequest
      ? NodeRequest.readNodeBody(request.source, maxBodyBytes)
      : readGenericBody(request, maxBodyBytes)
    return Effect.flatMap(read, (result) => {
      switch (result._tag) {
        case "Read":
          return forward(request, headers, principal, run, result.bytes)
        case "TooLarge":
          return Effect.succeed(tooLarge(`more than ${maxBodyBytes} bytes`, maxBodyBytes))
        case "Failed":
          return Effect.succeed(ErrorResponse.fromApiError(ApiError.make.invalidRequest(
            `Request body could not be read: ${result.message}`
          )))
      }
    })
  }

  /**
   * Steps 1-5, now (they only read in-memory state): the refusal to answer, if any. Otherwise the caller is in
   * `admittance.principal`, and the request is counted in flight (and in its organization's cap).
   */
  function admit(request: HttpServerRequest.HttpServerRequest, admittance: Admittance) {
    admittance.admitted = true
    // 1. draining (atomic with the in-flight count)
    if (!admission.beginNow()) return draining()
    admittance.begun = true
    const headers = request.headers
    // 2. declared length
    const declaredLength = headers["content-length"]
    if (declaredLength !== undefined && Number(declaredLength) > maxBodyBytes) {
      return tooLarge(`${declaredLength} bytes`, maxBodyBytes)
    }
    // 3. authentication
    const value = bearerValue(headers.authorization)
    if (value === undefined) return ErrorResponse.fromApiError(missingKey())
    const known = knownKeys.get(value)
    const key = known ?? Redacted.make(value)
    const record = identity.findKeyNow(key)
    if (record === undefined) return ErrorResponse.fromApiError(invalidKey())
    if (known === undefined) knownKeys.set(value, key)
    const principal = principalOf(record, record.userId === null ? undefined : identity.userNow(record.userId))
    admittance.principal = principal
    const orgId = principal.organizationOfUser
    if (orgId === null) return undefined
    const organization = identity.organizationNow(orgId)
    if (organization === undefined) return undefined
    // 4. credits
    if (!organization.credits) return ErrorResponse.fromApiError(ApiError.make.billing(config.billingUrl))
    // 5. the new-organization cap
    const isNew = clock.unsafeCurrentTimeMillis() - organization.createdAtMillis < newOrgWindowMillis
    if (!admission.enterNow(orgId, isNew ? config.newOrgInFlightCap : Number.POSITIVE_INFINITY)) {
      return ErrorResponse.fromApiError(ApiError.make.rateLimited(config.retryAfter))
    }
    admittance.organization = orgId
    return undefined
  }

  /** Steps 1-7 for one request (1-5 unless admitted already); `admittance` records what to count out at the end. */
  function steps<E, R>(
    request: HttpServerRequest.HttpServerRequest,
    run: Run<E, R>,
    admittance: Admittance
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
    if (!admittance.admitted) {
      const refused = admit(request, admittance)
      if (refused !== undefined) return Effect.succeed(refused)
    }
    if (admittance.principal === undefined) return Effect.die(new Error("RequestPipeline: a refused request was run"))
    return admitted(request, request.headers, admittance.principal, run)
  }

  /** What {@link Started} needs of this pipeline. */
  const rules: StartedRules = {
    admit,
    finish: (admittance) => finish(admittance),
    maxBodyBytes,
    tooLarge: () => tooLarge(`more than ${maxBodyBytes} bytes`, maxBodyBytes),
    unreadable: (message) =>
      ErrorResponse.fromApiError(ApiError.make.invalidRequest(`Request body could not be read: ${message}`))
  }

  function finish(admittance: Admittance) {
    if (!admittance.begun) return
    admittance.begun = false
    if (admittance.organization !== null) admission.leaveNow(admittance.organization)
    admittance.organization = null
    admission.endNow()
  }

  return {
    handle: <E, R>(request: HttpServerRequest.HttpServerRequest, run: Run<E, R>) =>
      Effect.suspend(() => {
        const admittance = new Admittance()
        const effect = steps(request, run, admittance)
        return admittance.begun ? Effect.onExit(effect, () => Effect.sync(() => finish(admittance))) : effect
      }),
    start: <E, R>(request: HttpServerRequest.HttpServerRequest, run: Run<E, R>) => {
      const admittance = new Admittance()
      return new Started(Effect.suspend(() => steps(request, run, admittance)), request, admittance, rules)
    }
  }
})

/** Builds the request pipeline ({@link Handle}) over the services in context. */
export const makeHandle: Effect.Effect<
  Handle,
  never,
  LocalServiceConfig | Identity | Admission | Idempotency.IdempotencyStore
> = Effect.map(makePipeline, (pipeline) => pipeline.handle)

/**
 * Wraps an `HttpApp` with the rules that apply to every `/v1` request ({@link makeHandle}); the caller is handed to
 * the app through `currentPrincipal` (read by the contract's `Authorization` middleware). Failures of the pipeline
 * itself are answered with the error envelope.
 */
export const make = Effect.map(
  makeHandle,
  (handle) =>
  <E, R>(inner: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      handle(request, (principal, forwarded) =>
        Effect.locally(
          forwarded === request ? inner : Effect.provideService(inner, HttpServerRequest.HttpServerRequest, forwarded),
          currentPrincipal,
          principal
        )))
)
