/**
 * What happens to every `/v1` request before it reaches the contract's handlers, in this order:
 * draining (503 with Retry-After), body size (400), authentication (401), credits (402), the new-organization
 * in-flight cap (429 with Retry-After), idempotency (replay, 409, in flight), then the handler. The body is read once
 * here and handed on.
 *
 * Source: spec "Authentication" 1, 4, 5; "Errors" rules 1-3; "Limits" (idempotency, new organization).
 *
 * @since 0.1.0
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Context, Deferred, Duration, Effect, Layer, Option, Redacted } from "effect"
import * as ApiError from "../ApiError.js"
import { IdempotencyKeyHeader, IdempotentReplayedHeader } from "../Contract/Api.js"
import { currentPrincipal, type PrincipalShape } from "../Contract/Principal.js"
import * as ErrorResponse from "./ErrorResponse.js"
import * as Idempotency from "./Idempotency.js"
import { LocalServiceConfig } from "./LocalServiceConfig.js"
import { Identity } from "./Repositories.js"
import * as Routes from "./Routes.js"

/** Admission state: draining, and requests in flight per organization. */
export class Admission extends Context.Tag("boxkit/server/Admission")<Admission, {
  /** From now on new requests answer 503 with Retry-After; requests in flight finish. */
  readonly startDraining: Effect.Effect<void>
  readonly isDraining: Effect.Effect<boolean>
  /** Requests in flight now, over all organizations. */
  readonly inFlight: Effect.Effect<number>
  /** Completes when no request is in flight. */
  readonly awaitIdle: Effect.Effect<void>
  /** Counts a request of `orgId` in; false when the cap `limit` would be exceeded (the request must not run). */
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
    awaitIdle: Effect.suspend(() => {
      if (total === 0) return Effect.void
      const deferred = Deferred.unsafeMake<void>(undefined as never)
      idle.push(deferred)
      return Deferred.await(deferred)
    }),
    enter: (orgId, limit) =>
      Effect.sync(() => {
        const current = perOrganization.get(orgId) ?? 0
        if (current >= limit) return false
        perOrganization.set(orgId, current + 1)
        total++
        return true
      }),
    leave: (orgId) =>
      Effect.suspend(() => {
        const current = perOrganization.get(orgId) ?? 1
        if (current <= 1) perOrganization.delete(orgId)
        else perOrganization.set(orgId, current - 1)
        total--
        if (total > 0) return Effect.void
        const waiting = idle
        idle = []
        return Effect.forEach(waiting, (deferred) => Deferred.succeed(deferred, undefined), { discard: true })
      })
  }
})

/** A request whose body has been read: the same request, with `arrayBuffer`, `text` and `json` answered from `bytes`. */
const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  bytes: Uint8Array
): HttpServerRequest.HttpServerRequest => {
  let text: string | undefined
  const readText = () => (text ??= new TextDecoder().decode(bytes))
  return Object.create(request, {
    arrayBuffer: { get: () => Effect.succeed(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) },
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
      if (new TextEncoder().encode(key).byteLength > Idempotency.maxKeyBytes) {
        return ErrorResponse.fromApiError(
          ApiError.make.invalidRequest(
            `Idempotency-Key must be at most ${Idempotency.maxKeyBytes} bytes (UTF-8).`,
            "Idempotency-Key"
          )
        )
      }
      const claim = yield* store.claim(
        principal.keyId,
        key,
        Idempotency.fingerprint(request.method, request.url, body)
      )
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
          yield* claim.settle({ status: response.status, headers, body: response.body.body })
          return response
        }
      }
    })

  return <E, R>(inner: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (yield* admission.isDraining) {
        return ErrorResponse.fromApiError(
          ApiError.make.unavailable("The service is shutting down. Retry after the Retry-After delay.", config.retryAfter)
        )
      }
      const contentLength = Number(request.headers["content-length"] ?? "0")
      if (contentLength > config.maxBodyBytes) {
        return ErrorResponse.fromApiError(ApiError.make.invalidRequest(
          `Request body too large: ${contentLength} bytes; the maximum is ${config.maxBodyBytes} bytes.`
        ))
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
      const admitted = orgId === null ? true : yield* admission.enter(orgId, limit)
      if (!admitted) return ErrorResponse.fromApiError(ApiError.make.rateLimited(config.retryAfter))
      const run = Effect.gen(function*() {
        let body = new Uint8Array(0)
        let forwarded = request
        if (hasBody(request)) {
          const read = yield* Effect.either(request.arrayBuffer)
          if (read._tag === "Left") {
            return ErrorResponse.fromApiError(ApiError.make.invalidRequest(
              `Request body could not be read (at most ${config.maxBodyBytes} bytes): ${read.left.message}`
            ))
          }
          body = new Uint8Array(read.right)
          forwarded = withBody(request, body)
        }
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
})
