/**
 * What happens to every `/v1` request before it reaches the contract's handlers, in this order:
 * 1. draining: 503 `server_error` with Retry-After (the check and the in-flight count are one atomic step, so a
 *    request counted in flight is always awaited by `Admission.awaitIdle`);
 * 2. a declared `Content-Length` over `maxBodyBytes`: 400 naming the limit;
 * 3. authentication: 401 `invalid_api_key` (only `Bearer <key>`; `Basic ...` and the rest are 401);
 * 4. credits: 402 `credits_exhausted` with `billing_url`;
 * 5. the new-organization in-flight cap: 429 `rate_limited` with Retry-After, before anything runs;
 * 6. the body, read once (a chunked body is counted as it arrives: over `maxBodyBytes` it is a 400, never a dropped
 *    connection; `multipart/*` is a 400: no operation takes it) and handed on;
 * 7. idempotency on the endpoints annotated `Idempotent` (key over 255 bytes: 400 naming `Idempotency-Key`; replay
 *    with `Idempotent-Replayed: true`; 409 `conflict_error` for a reused key; 409 `server_error`
 *    `idempotent_request_in_flight`), then the handler.
 *
 * Source: spec "Authentication" 1, 4, 5; "Errors" rules 1-3; "Limits" (idempotency, new organization).
 *
 * @since 0.1.0
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Clock, Context, Deferred, Duration, Effect, Layer, Option, Redacted, Stream } from "effect"
import * as ApiError from "../ApiError.js"
import { IdempotencyKeyHeader, IdempotentReplayedHeader } from "../Contract/Api.js"
import { currentPrincipal, type PrincipalShape } from "../Contract/Principal.js"
import * as ErrorResponse from "./ErrorResponse.js"
import * as Idempotency from "./Idempotency.js"
import { LocalServiceConfig } from "./LocalServiceConfig.js"
import { Identity } from "./Repositories.js"
import * as Routes from "./Routes.js"

/**
 * Admission state: draining, every `/v1` request in flight, and requests in flight per organization (for the
 * new-organization cap).
 */
export class Admission extends Context.Tag("boxkit/server/Admission")<Admission, {
  /** From now on new requests answer 503 with Retry-After; requests in flight finish. */
  readonly startDraining: Effect.Effect<void>
  readonly isDraining: Effect.Effect<boolean>
  /** Requests in flight now (every `/v1` request admitted past the draining check and not yet answered). */
  readonly inFlight: Effect.Effect<number>
  /** Completes when no request is in flight. */
  readonly awaitIdle: Effect.Effect<void>
  /**
   * Counts a request in, atomically with the draining check: false while draining (the request must not run).
   * Every `true` must be followed by one {@link end}.
   */
  readonly begin: Effect.Effect<boolean>
  /** Counts a request out; completes {@link awaitIdle} waiters when none is left. */
  readonly end: Effect.Effect<void>
  /**
   * Counts a request of `orgId` in: false when `limit` requests of the organization are already in flight (the
   * request must not run). Every `true` must be followed by one {@link leave}.
   */
  readonly enter: (orgId: string, limit: number) => Effect.Effect<boolean>
  readonly leave: (orgId: string) => Effect.Effect<void>
}>() {}

/** In-memory admission state. */
export const admissionLayer = Layer.sync(Admission, () => {
  let draining = false
  let total = 0
  const perOrganization = new Map<string, number>()
  let idle: Array<Deferred.Deferred<void>> = []
  return {
    startDraining: Effect.sync(() => {
      draining = true
    }),
    isDraining: Effect.sync(() => draining),
    inFlight: Effect.sync(() => total),
    awaitIdle: Effect.flatMap(Deferred.make<void>(), (deferred) =>
      Effect.suspend(() => {
        if (total === 0) return Effect.void
        idle.push(deferred)
        return Deferred.await(deferred)
      })),
    begin: Effect.sync(() => {
      if (draining) return false
      total++
      return true
    }),
    end: Effect.suspend(() => {
      total--
      if (total > 0) return Effect.void
      const waiting = idle
      idle = []
      return Effect.forEach(waiting, (deferred) => Deferred.succeed(deferred, undefined), { discard: true })
    }),
    enter: (orgId, limit) =>
      Effect.sync(() => {
        const current = perOrganization.get(orgId) ?? 0
        if (current >= limit) return false
        perOrganization.set(orgId, current + 1)
        return true
      }),
    leave: (orgId) =>
      Effect.sync(() => {
        const current = perOrganization.get(orgId) ?? 1
        if (current <= 1) perOrganization.delete(orgId)
        else perOrganization.set(orgId, current - 1)
      })
  }
})

/**
 * The router settings the contract's app must be built with: path parameters up to 4,096 characters reach the
 * contract's schemas (the router's default of 100 would answer a 404 to, e.g., a valid 128-character secret name sent
 * with surrounding whitespace), so an over-long parameter gets the 400 that names it.
 */
export const routerConfig = { maxParamLength: 4096 } as const

/** A request whose body has been read: the same request, with `arrayBuffer`, `text` and `json` answered from `bytes`. */
const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  bytes: Uint8Array
): HttpServerRequest.HttpServerRequest => {
  let text: string | undefined
  const readText = () => (text ??= new TextDecoder().decode(bytes))
  return Object.create(request, {
    arrayBuffer: { get: () => Effect.succeed(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) },
    stream: { get: () => Stream.succeed(bytes) },
    text: { get: () => Effect.sync(readText) },
    json: {
      get: () =>
        Effect.suspend(() => {
          const body = readText()
          if (body === "") return Effect.succeed(null)
          try {
            return Effect.succeed(JSON.parse(body) as unknown)
          } catch (error) {
            return Effect.die(new ErrorResponse.MalformedJsonBody({ reason: (error as Error).message }))
          }
        })
    }
  })
}

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["content-length"] !== undefined ? request.headers["content-length"] !== "0" :
  request.headers["transfer-encoding"] !== undefined

/**
 * Reads the whole body, at most `maxBytes`: None when it is larger. A body with `Content-Length` (already checked
 * against the limit; the HTTP parser enforces the length) is read at once; a chunked body is counted as it arrives
 * and, once over the limit, read to its end and discarded, so the client still gets an answer instead of a dropped
 * connection.
 */
const readBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  Effect.gen(function*() {
    if (request.headers["content-length"] !== undefined) {
      return Option.some(new Uint8Array(yield* request.arrayBuffer))
    }
    const state = { size: 0, chunks: [] as Array<Uint8Array> }
    yield* Stream.runForEach(request.stream, (chunk) =>
      Effect.sync(() => {
        state.size += chunk.byteLength
        if (state.size <= maxBytes) state.chunks.push(chunk)
        else state.chunks = []
      }))
    if (state.size > maxBytes) return Option.none()
    const body = new Uint8Array(state.size)
    let offset = 0
    for (const chunk of state.chunks) {
      body.set(chunk, offset)
      offset += chunk.byteLength
    }
    return Option.some(body)
  })

const tooLarge = (size: string, maxBytes: number) =>
  ErrorResponse.fromApiError(ApiError.make.invalidRequest(
    `Request body too large: ${size}; the maximum is ${maxBytes} bytes.`
  ))

/** Reads `Authorization: Bearer <key>`; anything else (missing, another scheme, empty key) is None. */
export const bearerKey = (header: string | undefined): Option.Option<Redacted.Redacted<string>> => {
  if (header === undefined) return Option.none()
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
  return match === null ? Option.none() : Option.some(Redacted.make(match[1]))
}

/** The caller of a request, or the 401 of the spec (code `invalid_api_key`). */
export const authenticate = (header: string | undefined) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const key = bearerKey(header)
    if (Option.isNone(key)) return yield* Effect.fail(ApiError.make.authentication("Missing API key: send Authorization: Bearer <API_KEY>."))
    const record = yield* identity.findKey(key.value)
    if (Option.isNone(record)) return yield* Effect.fail(ApiError.make.authentication("Invalid API key."))
    const user = record.value.userId === null ? Option.none() : yield* identity.user(record.value.userId)
    const principal: PrincipalShape = {
      keyId: record.value.keyId,
      orgId: record.value.orgId,
      userId: record.value.userId,
      organizationOfUser: record.value.orgId ?? Option.getOrNull(Option.map(user, (u) => u.orgId)),
      admin: Option.match(user, {
        onNone: () => false,
        onSome: (u) => u.admin && (record.value.orgId === null || u.orgId === record.value.orgId)
      })
    }
    return principal
  })

/**
 * Wraps the contract's `HttpApp` with the rules that apply to every `/v1` request. Failures of the pipeline itself
 * are answered with the error envelope.
 */
export const make = Effect.gen(function*() {
  const config = yield* LocalServiceConfig
  const identity = yield* Identity
  const admission = yield* Admission
  const store = yield* Idempotency.IdempotencyStore
  const context = yield* Effect.context<Identity>()
  const newOrgWindowMillis = Duration.toMillis(config.newOrgWindow)

  const runIdempotent = <E, R>(
    inner: HttpApp.Default<E, R>,
    request: HttpServerRequest.HttpServerRequest,
    principal: PrincipalShape,
    key: string,
    body: Uint8Array
  ) =>
    Effect.gen(function*() {
      if (Idempotency.headerBytes(key) > Idempotency.maxKeyBytes) {
        return ErrorResponse.fromApiError(
          ApiError.make.invalidRequest(
            `Idempotency-Key must be at most ${Idempotency.maxKeyBytes} bytes (UTF-8).`,
            "Idempotency-Key"
          )
        )
      }
      const claimed = yield* Effect.either(store.claim(
        principal.keyId,
        key,
        Idempotency.fingerprint(request.method, request.url, body)
      ))
      if (claimed._tag === "Left") {
        yield* Effect.logError("the idempotency store failed", claimed.left.reason)
        return ErrorResponse.fromApiError(ApiError.make.server("The idempotency store failed; retry with the same key."))
      }
      const claim = claimed.right
      switch (claim._tag) {
        case "Mismatch":
          return ErrorResponse.fromApiError(ApiError.make.conflict(
            "This Idempotency-Key was used for a different request (method, path or body differ). Use a new key for new work.",
            null,
            "Idempotency-Key"
          ))
        case "InFlight":
          return ErrorResponse.fromApiError(ApiError.make.idempotentRequestInFlight())
        case "Replay":
          return HttpServerResponse.uint8Array(claim.answer.body, {
            status: claim.answer.status,
            headers: { ...claim.answer.headers, [IdempotentReplayedHeader]: "true" }
          })
        case "Started": {
          const response = yield* inner.pipe(Effect.onExit((exit) => exit._tag === "Failure" ? claim.release : Effect.void))
          if (response.status >= 500 || response.body._tag !== "Uint8Array") {
            // A server error leaves the key unsettled; a streamed answer cannot be replayed (docs/ASSUMPTIONS.md).
            yield* claim.release
            return response
          }
          const headers: Record<string, string> = {}
          const contentType = response.body.contentType
          if (contentType) headers["content-type"] = contentType
          if (response.headers["retry-after"] !== undefined) headers["retry-after"] = response.headers["retry-after"]
          // A failure to record the answer leaves the key unsettled: the answer goes out, a retry runs again.
          yield* claim.settle({ status: response.status, headers, body: response.body.body }).pipe(
            Effect.catchAllCause((cause) =>
              Effect.zipRight(
                Effect.logWarning("could not record an idempotent answer; the key stays unsettled", Cause.squash(cause)),
                claim.release
              )
            )
          )
          return response
        }
      }
    })

  const pipeline = <E, R>(
    inner: HttpApp.Default<E, R>
  ): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!(yield* admission.begin)) {
        return ErrorResponse.fromApiError(
          ApiError.make.unavailable("The service is shutting down. Retry after the Retry-After delay.", config.retryAfter)
        )
      }
      return yield* Effect.ensuring(admitted(inner, request), admission.end)
    })

  /** The rest of the pipeline, for a request counted in flight. */
  const admitted = <E, R>(inner: HttpApp.Default<E, R>, request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const declaredLength = request.headers["content-length"]
      if (declaredLength !== undefined && Number(declaredLength) > config.maxBodyBytes) {
        return tooLarge(`${declaredLength} bytes`, config.maxBodyBytes)
      }
      const authenticated = yield* Effect.either(Effect.provide(authenticate(request.headers.authorization), context))
      if (authenticated._tag === "Left") return ErrorResponse.fromApiError(authenticated.left)
      const principal = authenticated.right
      const orgId = principal.organizationOfUser
      const organization = orgId === null ? Option.none() : yield* identity.organization(orgId)
      if (Option.isSome(organization) && !organization.value.credits) {
        return ErrorResponse.fromApiError(ApiError.make.billing(config.billingUrl))
      }
      const now = yield* Clock.currentTimeMillis
      const isNew = Option.isSome(organization) && now - organization.value.createdAtMillis < newOrgWindowMillis
      const limit = isNew ? config.newOrgInFlightCap : Number.POSITIVE_INFINITY
      const entered = orgId === null ? true : yield* admission.enter(orgId, limit)
      if (!entered) return ErrorResponse.fromApiError(ApiError.make.rateLimited(config.retryAfter))
      const run = Effect.gen(function*() {
        if ((request.headers["content-type"] ?? "").toLowerCase().includes("multipart/")) {
          // No operation takes multipart bodies, and a buffered body cannot be handed on as one.
          return ErrorResponse.fromApiError(ApiError.make.invalidRequest(
            "Content-Type multipart/* is not accepted: bodies are JSON (clipboard: text/plain or image/*).",
            "Content-Type"
          ))
        }
        let body = new Uint8Array(0)
        if (hasBody(request)) {
          const read = yield* Effect.either(readBody(request, config.maxBodyBytes))
          if (read._tag === "Left") {
            return ErrorResponse.fromApiError(ApiError.make.invalidRequest(
              `Request body could not be read: ${read.left.message}`
            ))
          }
          if (Option.isNone(read.right)) return tooLarge(`more than ${config.maxBodyBytes} bytes`, config.maxBodyBytes)
          body = read.right.value
        }
        const forwarded = withBody(request, body)
        const handled = Effect.locally(
          Effect.provideService(inner, HttpServerRequest.HttpServerRequest, forwarded),
          currentPrincipal,
          principal
        )
        const route = Routes.match(request.method, request.url.split("?")[0])
        const key = request.headers[IdempotencyKeyHeader]
        if (route?.idempotent === true && key !== undefined && key.trim() !== "") {
          return yield* runIdempotent(handled, forwarded, principal, key, body)
        }
        return yield* handled
      })
      return yield* (orgId === null ? run : Effect.ensuring(run, admission.leave(orgId)))
    })

  return pipeline
})
