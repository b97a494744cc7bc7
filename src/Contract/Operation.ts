/**
 * The pieces every operation of the contract is built from: the bearer authentication middleware, the idempotency
 * and body-limit annotations the local service's request pipeline reads, the errors every operation lists, and
 * `operation` (an endpoint with those errors and its OpenAPI summary, description and body limit).
 *
 * Source: spec "Authentication", "Errors", "Idempotency"; docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context } from "effect"
import type * as ApiError from "../ApiError.js"
import * as Ids from "../Domain/Ids.js"
import type * as Json from "../Domain/Json.js"
import { Errors } from "./Errors.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { alsoRefusedText, answerHeaders, byteSize, type OperationDocs } from "./OpenApiDocs.js"
import { Principal } from "./Principal.js"

/**
 * Marks an endpoint that honours `Idempotency-Key` (create box, upgrade, create response). The local service's
 * idempotency layer applies to exactly the endpoints carrying this annotation.
 *
 * @since 0.1.0
 * @category Contract
 */
export class Idempotent extends Context.Tag("boxkit/Idempotent")<Idempotent, true>() {}

/**
 * Bearer authentication (spec: Authentication 1, 4). Fails with `AuthenticationError` (401, `invalid_api_key`) and
 * provides the {@link Principal} to handlers.
 *
 * @since 0.1.0
 * @category Contract
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Authorization", {
  failure: Errors.Authentication,
  provides: Principal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** The errors every box, secret and egress-policy operation can answer: 400, 401, 402, 403, 404, 429, 500, 503. */
const commonErrors = <E extends HttpApiEndpoint.HttpApiEndpoint.Any>(endpoint: E) =>
  // `HttpApiEndpoint.Any` has no `addError`: the endpoint is used through `AnyWithProps`, and the result type below
  // says what the eight calls add.
  (endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps)
    .addError(Errors.InvalidRequest)
    .addError(Errors.Authentication)
    .addError(Errors.Billing)
    .addError(Errors.Permission)
    .addError(Errors.NotFound)
    .addError(Errors.RateLimit)
    .addError(Errors.Server)
    .addError(Errors.Unavailable) as unknown as HttpApiEndpoint.HttpApiEndpoint.AddError<E, CommonError, never>

/**
 * The largest request body an endpoint takes when its operation names no other limit, in bytes: 16 KiB (requests
 * without a body, and small JSON bodies). docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultMaxBodyBytes = 16 * 1024

/**
 * The largest request body an endpoint takes, in bytes (a larger one is answered 400 naming the limit, before it is
 * read). Set on each endpoint of the contract; read by the local service's request pipeline (Routes.ts).
 *
 * @since 0.1.0
 * @category Contract
 */
export class MaxBodyBytes extends Context.Tag("boxkit/MaxBodyBytes")<MaxBodyBytes, number>() {}

/**
 * The byte caps of an endpoint's bounded top-level body members (`Json.MemberCaps`, declared next to the request's
 * schema): the local service's request pipeline refuses a member over its cap with a 400 naming it, before the body is
 * parsed (Routes.ts reads it; an endpoint without it has no caps). docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category Contract
 */
export class MemberByteCaps extends Context.Tag("boxkit/MemberByteCaps")<MemberByteCaps, Json.MemberCaps>() {}

/**
 * One operation of the contract: the endpoint with the common errors, its summary and description in the OpenAPI
 * document, and its body limit (stated in the description too). Used by the groups of the contract (groups/).
 *
 * @since 0.1.0
 * @category Contract
 */
export const operation = <E extends HttpApiEndpoint.HttpApiEndpoint.Any>(endpoint: E, docs: OperationDocs) => {
  const maxBodyBytes = docs.maxBodyBytes ?? defaultMaxBodyBytes
  // `HttpApiEndpoint.Any` has no `annotate`; the result has the type of `commonErrors(endpoint)`.
  const annotations = (endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps).annotations
  const idempotent = Context.getOption(annotations, Idempotent)._tag === "Some"
  return (commonErrors(endpoint) as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps)
    .annotate(OpenApi.Summary, docs.summary)
    .annotate(
      OpenApi.Description,
      `${docs.description}${alsoRefusedText(docs.alsoRefused)} Request body: at most ${byteSize(maxBodyBytes)}.`
    )
    .annotate(OpenApi.Transform, answerHeaders(idempotent, docs))
    .annotate(MaxBodyBytes, maxBodyBytes) as unknown as ReturnType<typeof commonErrors<E>>
}

/**
 * The API errors every endpoint lists: 400, 401, 402, 403, 404, 429 (`RateLimitError`) and 500/503 (`ServerError`).
 *
 * Source: spec "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type CommonError =
  | ApiError.InvalidRequestError
  | ApiError.AuthenticationError
  | ApiError.BillingError
  | ApiError.PermissionError
  | ApiError.NotFoundError
  | ApiError.RateLimitError
  | ApiError.ServerError

/** The `box_id` path parameter of the box operations. @since 0.1.0 @category Contract */
export const BoxIdParam = HttpApiSchema.param("box_id", Ids.BoxId)

/**
 * A name's text that JSON Schema cannot refuse: an unpaired surrogate half (docs/ASSUMPTIONS.md "Text fields"). An
 * "also refused" rule (OpenApiDocs.ts) of the operations that take a name.
 *
 * @since 0.1.0
 * @category Contract
 */
export const wellFormedName = { param: "name", rule: "a name with an unpaired surrogate half (not well-formed Unicode)" }

/**
 * `Idempotency-Key` is limited in UTF-8 bytes, JSON Schema counts characters (docs/ASSUMPTIONS.md): an "also refused"
 * rule of the idempotent operations.
 *
 * @since 0.1.0
 * @category Contract
 */
export const idempotencyKeyBytes = {
  param: IdempotencyKey.param,
  rule: `an \`Idempotency-Key\` of more than ${IdempotencyKey.maxBytes} bytes of UTF-8`
}
