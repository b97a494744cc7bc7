/**
 * What happens to every `/v1` request before it reaches the contract's handlers, in this order:
 * 1-5. admission (AdmitRequest.ts): draining, a declared `Content-Length` over the operation's limit,
 *    authentication, credits, the new-organization in-flight cap;
 * 6. the body, read once (RequestBody.ts: a chunked body is counted as it arrives, over the limit it is a 400, never
 *    a dropped connection; `multipart/*` is a 400: no operation takes it; a JSON body nested too deep, with a member
 *    over its cap or not UTF-8 is a 400 before anything parses it) and handed on in the request object
 *    (`RequestBody.BufferedRequest`);
 * 7. idempotency on the endpoints annotated `Idempotent` (IdempotentRequest.ts), then the contract.
 *
 * Steps 1-5 are one effect (`admit`) that needs nothing from the request's context, and steps 6-7 another
 * (`runAdmitted`); `handle` runs both for any `HttpServerRequest`. The caller reaches the contract one way: as
 * `Principal` in the context of the contract's effect (`run(principal, request)` is handed it to provide, with the
 * request holding the body, in one copy of the context: {@link withCaller}, which {@link runWithCaller} and the stock
 * path use; the contract's `Authorization` middleware reads it there, LocalService.authorizationLayer).
 *
 * Source: spec "Authentication" 1, 4, 5; "Errors" rules 1-3; "Limits"; docs/decisions/0001-two-serving-paths.md.
 *
 * @since 0.1.0
 */
import { type HttpApp, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Context, Duration, Effect, Exit } from "effect"
import * as ApiError from "../../ApiError.js"
import { IdempotencyKeyHeader } from "../../Contract/Api.js"
import * as IdempotencyKey from "../../Contract/IdempotencyKey.js"
import { Principal, type PrincipalShape } from "../../Contract/Principal.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import { Identity } from "../state/Repositories.js"
import { Transactions } from "../state/Transactions.js"
import { Admission } from "./Admission.js"
import * as AdmitRequest from "./AdmitRequest.js"
import * as Idempotency from "./Idempotency.js"
import * as IdempotentRequest from "./IdempotentRequest.js"
import * as RequestBody from "./RequestBody.js"

export {
  /** The outcome of admission (steps 1-5): `Refused` with its answer, or `Admitted` (AdmitRequest.ts). */
  type Admit,
  /** An admitted request (AdmitRequest.ts). */
  type Admitted,
  /** How long a caller stays in the index of recent callers, in milliseconds (AdmitRequest.ts). */
  callerIndexMillis
} from "./AdmitRequest.js"

/**
 * The router settings the contract's app must be built with: path parameters up to 4,096 characters reach the
 * contract's schemas (the router's default of 100 would answer a 404 to, e.g., a valid 128-character secret name sent
 * with surrounding whitespace), so an over-long parameter gets the 400 that names it.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export const routerConfig = { maxParamLength: 4096 } as const

/**
 * Runs the contract for an admitted request: `principal` is the caller (to provide as `Principal`), `request` the
 * request with its body in memory.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export type Run<E, R> = (
  principal: PrincipalShape,
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

/**
 * The request pipeline as a function of one request: every rule above, then `run`. Failures of the pipeline itself
 * are answered with the error envelope; failures of `run` pass through (the caller maps them to the envelope
 * before, so that idempotency remembers 4xx answers). `onEnd`, when given, runs once the request's effect ended,
 * whatever its end (interruption included), uninterruptibly, after what admission took was given back: in the same
 * finalizer when the caller was admitted at once (one finalizer per request instead of the pipeline's and the
 * caller's).
 *
 * @since 0.1.0
 * @category Pipeline
 */
export type Handle = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  run: Run<E, R>,
  onEnd?: OnEnd<E>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>

/**
 * What runs when a request's effect ended ({@link Handle}'s `onEnd`), with how it ended.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export type OnEnd<E> = (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, E>) => Effect.Effect<void>

/**
 * The request pipeline: its steps, and the whole of it as one effect.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export interface Pipeline {
  /** Runs the rules for `request`, then `run`; what admission took is given back when it ends. */
  readonly handle: Handle
  /** Steps 1-5 (AdmitRequest.admit). */
  readonly admit: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<AdmitRequest.Admit>
  /** Steps 1-5 decided now (AdmitRequest.admitNow); undefined when the identity store must be asked. */
  readonly admitNow: (request: HttpServerRequest.HttpServerRequest) => AdmitRequest.Admit | undefined
  /**
   * Steps 6-7 and `run`, for an admitted caller. `body` is the body when it was read already (see
   * {@link Pipeline.refuseBody}); otherwise it is read here.
   */
  readonly runAdmitted: <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    admitted: AdmitRequest.Admitted,
    run: Run<E, R>,
    body?: Uint8Array
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  /**
   * The answer to a body that could not be taken (too large for `maxBodyBytes`, unreadable), or undefined when it
   * was read.
   */
  readonly refuseBody: (read: RequestBody.BodyRead, maxBodyBytes: number) => HttpServerResponse.HttpServerResponse | undefined
}

/** What the pipeline's steps read, gathered once when it is built (never per request). */
type PipelineServices = AdmitRequest.AdmissionServices & IdempotentRequest.IdempotencyServices

/** True when the request says its body is JSON (or says nothing: the contract's bodies are JSON). */
const isJson = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const contentType = request.headers["content-type"]
  return contentType === undefined || contentType.toLowerCase().includes("json")
}

/** Why a JSON body is refused before it is parsed (too deep, a member over its cap, not UTF-8), or undefined. */
const jsonRefusal = (body: Uint8Array, admitted: AdmitRequest.Admitted): ApiError.InvalidRequestError | undefined => {
  // docs/ASSUMPTIONS.md "Request body limits": refused before anything parses or decodes it.
  const refusal = RequestBody.refusedBeforeParse(body, admitted.route?.memberCaps)
  if (refusal !== undefined || body.byteLength === 0) return refusal
  // A JSON body that is not UTF-8 is refused, naming the member it is in, rather than read with U+FFFD.
  const broken = RequestBody.invalidUtf8(body)
  if (broken === undefined) return undefined
  return ApiError.make.invalidRequest(
    "The request body is not valid UTF-8" + (broken.field !== null ? ` (in ${broken.field}).` : "."),
    broken.field
  )
}

/** Step 7: the body is read; idempotency, then the contract. */
function runWithBody<E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  admitted: AdmitRequest.Admitted,
  run: Run<E, R>,
  body: Uint8Array
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> {
  const refusal = isJson(request) ? jsonRefusal(body, admitted) : undefined
  if (refusal !== undefined) return Effect.succeed(ErrorResponse.fromApiError(refusal))
  const requestWithBody = RequestBody.withBody(request, body)
  const handled = run(admitted.principal, requestWithBody)
  const key = request.headers[IdempotencyKeyHeader]
  if (key !== undefined && !IdempotencyKey.isBlank(key) && admitted.route?.idempotent === true) {
    return IdempotentRequest.run(services, handled, requestWithBody, admitted.principal, key, body, admitted.route)
  }
  return handled
}

/** {@link Pipeline.refuseBody}. */
const refuseBody = (read: RequestBody.BodyRead, maxBodyBytes: number): HttpServerResponse.HttpServerResponse | undefined => {
  const refusal = RequestBody.refusal(read, maxBodyBytes)
  return refusal === undefined ? undefined : ErrorResponse.fromApiError(refusal)
}

/** Steps 6-7, for an authenticated caller whose organization (if any) passed the credits check. */
function runAdmitted<E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  admitted: AdmitRequest.Admitted,
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
  if (!RequestBody.hasBody(request.headers)) return runWithBody(services, request, admitted, run, RequestBody.emptyBody)
  return Effect.flatMap(RequestBody.readRequestBody(request, admitted.maxBodyBytes), (read) => {
    const refusal = refuseBody(read, admitted.maxBodyBytes)
    return refusal !== undefined || read._tag !== "Read"
      ? Effect.succeed(refusal!)
      : runWithBody(services, request, admitted, run, read.bytes)
  })
}

/**
 * Steps 6-7 and `run` for the outcome of admission, interruptible; what an admitted request took is given back when
 * it ends, whatever its outcome, then `onEnd` runs (in the same finalizer). Runs where interruption is off, so that
 * nothing comes between admission and the release's registration.
 */
const runOutcome = <E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  run: Run<E, R>,
  outcome: AdmitRequest.Admit,
  onEnd: OnEnd<E> | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  if (outcome._tag === "Refused") {
    return onEnd === undefined ? Effect.succeed(outcome.response) : Effect.as(onEnd(Exit.succeed(outcome.response)), outcome.response)
  }
  const admitted = Effect.interruptible(runAdmitted(services, request, outcome, run))
  if (onEnd === undefined) return Effect.ensuring(admitted, Effect.sync(outcome.release))
  return Effect.onExit(admitted, (exit) => {
    outcome.release()
    return onEnd(exit)
  })
}

/**
 * {@link Pipeline.handle}: admission, then steps 6-7 and `run`; what admission took is given back at the end.
 * Admission is decided in the same step when the caller is in the index of recent callers (most requests), else
 * after the identity store answered.
 */
const handleRequest = <E, R>(
  services: PipelineServices,
  request: HttpServerRequest.HttpServerRequest,
  run: Run<E, R>,
  onEnd: OnEnd<E> | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.uninterruptible(Effect.suspend(() => {
    const now = AdmitRequest.admitNow(services, request)
    if (now !== undefined) return runOutcome(services, request, run, now, onEnd)
    const admitted = Effect.flatMap(
      AdmitRequest.admit(services, request),
      (outcome) => runOutcome(services, request, run, outcome, undefined)
    )
    return onEnd === undefined ? admitted : Effect.onExit(admitted, onEnd)
  }))

/**
 * Builds the request pipeline over the services in context.
 *
 * @since 0.1.0
 * @category Pipeline
 */
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
    draining: AdmitRequest.refused(ErrorResponse.fromApiError(
      ApiError.make.unavailable("The service is shutting down. Retry after the Retry-After delay.", config.retryAfter)
    )),
    callers: new Map()
  }
  return {
    admit: (request) => AdmitRequest.admit(services, request),
    admitNow: (request) => AdmitRequest.admitNow(services, request),
    runAdmitted: (request, admitted, run, body) => runAdmitted(services, request, admitted, run, body),
    refuseBody,
    handle: (request, run, onEnd) => handleRequest(services, request, run, onEnd)
  }
})

/**
 * The {@link Run} of an `HttpApp`: `inner` with the request whose body is in memory as its `HttpServerRequest` and the
 * caller as `Principal`, both added to its context in one copy of it (two `Effect.provideService` would copy the
 * context twice). Made once per app, not per request.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export const runWithCaller = <E, R>(
  inner: HttpApp.Default<E, R>
): Run<E, Exclude<R, Principal> | HttpServerRequest.HttpServerRequest> =>
(principal, requestWithBody) =>
  Effect.mapInputContext(
    inner,
    (context: Context.Context<Exclude<R, Principal> | HttpServerRequest.HttpServerRequest>) =>
      // What `inner` needs: the context it was given, the request and the caller.
      withCaller(context, requestWithBody, principal) as Context.Context<R | HttpServerRequest.HttpServerRequest>
  )

/**
 * `context` with `request` (the request whose body is in memory) as the `HttpServerRequest` and `principal` as
 * `Principal`, in one copy of it: what {@link runWithCaller} runs its app in.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export const withCaller = <R>(
  context: Context.Context<R>,
  request: HttpServerRequest.HttpServerRequest,
  principal: PrincipalShape
): Context.Context<R | HttpServerRequest.HttpServerRequest | Principal> => {
  const services = new Map(context.unsafeMap)
  services.set(HttpServerRequest.HttpServerRequest.key, request)
  services.set(Principal.key, principal)
  return Context.unsafeMake(services)
}

/**
 * Wraps an `HttpApp` with the rules that apply to every `/v1` request ({@link make}); the app runs with the request
 * whose body is in memory and the caller as `Principal` in its context (read by the contract's `Authorization`
 * middleware; {@link runWithCaller}). Failures of the pipeline itself are answered with the error envelope.
 *
 * @since 0.1.0
 * @category Pipeline
 */
export const middleware = Effect.map(
  make,
  ({ handle }) =>
  <E, R>(inner: HttpApp.Default<E, R>): HttpApp.Default<E, Exclude<R, Principal> | HttpServerRequest.HttpServerRequest> => {
    const run = runWithCaller(inner)
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => handle(request, run))
  }
)
