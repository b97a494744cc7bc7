/**
 * Step 7 of the request pipeline (RequestPipeline.ts) for the endpoints annotated `Idempotent` in the contract: the
 * Idempotency-Key's claim in the `IdempotencyStore` (Idempotency.ts), the handler run once per key, and its answer
 * remembered (status, content type, Retry-After, body) for a replay; with a durable store the claim, the handler's
 * writes and the answer are one unit of work where the route asks for it (Routes.ts `atomic`).
 *
 * Source: spec "Idempotency"; "Limits" (idempotency keys); docs/ASSUMPTIONS.md "Idempotency (local service)".
 *
 * @since 0.1.0
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, type Context, Effect } from "effect"
import * as ApiError from "../../ApiError.js"
import { IdempotentReplayedHeader } from "../../Contract/Api.js"
import * as IdempotencyKey from "../../Contract/IdempotencyKey.js"
import type { PrincipalShape } from "../../Contract/Principal.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import type * as Routes from "../http/Routes.js"
import * as Quotas from "../Quotas.js"
import type { Transactions } from "../state/Transactions.js"
import * as StoreOutage from "../state/StoreOutage.js"
import * as Idempotency from "./Idempotency.js"

/**
 * What step 7 reads, gathered once when the pipeline is built: the store of keys, the units of work, and the largest
 * answer remembered for a key, in bytes.
 *
 * @since 0.1.0
 * @category Idempotency
 */
export interface IdempotencyServices {
  readonly store: Context.Tag.Service<Idempotency.IdempotencyStore>
  readonly transactions: Context.Tag.Service<Transactions>
  readonly maxAnswerBytes: number
}

/**
 * Which writes of an idempotent request are stored as one unit of work (Routes.ts `atomic`, Transactions.ts
 * `claimsInUnit`): `WithClaim` the key's claim, the handler's writes and the remembered answer; `WithAnswer` the
 * handler's writes and the remembered answer (the claim is stored on its own); `None` each write on its own.
 */
type UnitOfWork = "WithClaim" | "WithAnswer" | "None"

/**
 * Step 7 for a request with an Idempotency-Key on an `Idempotent` route: the key's claim, then `handled` (the
 * contract's answer, run at most once per key) or an answer without it (400 for a key over 255 bytes, 409 for a
 * reused key or one in flight, the remembered answer replayed with `Idempotent-Replayed: true`). `body` is the
 * request's body, part of the key's fingerprint.
 *
 * @since 0.1.0
 * @category Idempotency
 */
export const run = <E, R>(
  services: IdempotencyServices,
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
  const claim = services.store.claim(holder, key, fingerprint, unit === "WithClaim" ? "InUnitOfWork" : "Standalone")
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
  services: IdempotencyServices,
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

