/**
 * Steps 1-5 of the request pipeline (RequestPipeline.ts), decided when a `/v1` request arrives, before its body:
 * 1. draining: 503 `server_error` with Retry-After (the check and the in-flight count are one atomic step, so a
 *    request counted in flight is always awaited by `Admission.awaitIdle`);
 * 2. a declared `Content-Length` over the operation's body limit (`MaxBodyBytes` in the contract, at most
 *    `LocalServiceConfig.maxBodyBytes`): 400 naming the limit;
 * 3. authentication: 401 `invalid_api_key` (only `Bearer <key>`; `Basic ...` and the rest are 401);
 * 4. credits: 402 `credits_exhausted` with `billing_url`;
 * 5. the new-organization in-flight cap: 429 `rate_limited` with Retry-After, before anything runs.
 *
 * The caller of a key looked up once is kept in an index for {@link callerIndexMillis}, so that most requests are
 * decided without an effect ({@link admitNow}); a key that was found once is not wrapped in a new `Redacted` again.
 *
 * Source: spec "Authentication" 1, 4, 5; "Errors" rules 1-3; "Limits" (new organization); docs/ASSUMPTIONS.md
 * "Serving (local service)".
 *
 * @since 0.1.0
 */
import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Clock, type Context, Effect, Redacted } from "effect"
import * as ApiError from "../../ApiError.js"
import { defaultMaxBodyBytes } from "../../Contract/Api.js"
import type { PrincipalShape } from "../../Contract/Principal.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import * as Routes from "../http/Routes.js"
import type { LocalServiceSettings } from "../LocalServiceConfig.js"
import type { Identity } from "../state/Repositories.js"
import * as StoreOutage from "../state/StoreOutage.js"
import type { Admission } from "./Admission.js"
import { bearerValue, type Caller, invalidKey, lookUpCaller, missingKey } from "./Authentication.js"
import * as RequestBody from "./RequestBody.js"

/**
 * The outcome of steps 1-5 for one request: `Refused` with the answer to send (nothing is held), or `Admitted` with
 * the caller and `release`, which gives back what the request took (its in-flight count and its organization's
 * slot) and must run once when the request has ended, whatever its outcome.
 *
 * @since 0.1.0
 * @category Admission
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

/**
 * How long the pipeline answers a key from its index of recent callers before it asks the identity store again, in
 * milliseconds: the longest a change to a key or its organization (credits) made elsewhere (another instance on a
 * shared database) takes to apply. docs/ASSUMPTIONS.md "Serving (local service)".
 *
 * @since 0.1.0
 * @category Admission
 */
export const callerIndexMillis = 5_000

/**
 * An admitted request (see {@link Admit}).
 *
 * @since 0.1.0
 * @category Admission
 */
export type Admitted = Extract<Admit, { readonly _tag: "Admitted" }>

/**
 * What admission reads, gathered once when the pipeline is built (never per request): the settings, the clock, the
 * identity store, the in-flight counts, and the index of recent callers.
 *
 * @since 0.1.0
 * @category Admission
 */
export interface AdmissionServices {
  readonly config: LocalServiceSettings
  readonly clock: Clock.Clock
  readonly identity: Context.Tag.Service<Identity>
  readonly admission: Context.Tag.Service<Admission>
  /** `config.newOrgWindow`, in milliseconds. */
  readonly newOrgWindowMillis: number
  /** The answer to a request that arrives while the service drains. */
  readonly draining: Admit
  /**
   * The callers of recent requests by key, each for `callerIndexMillis` after it was looked up: most requests are
   * admitted without asking the identity store (only known keys are kept: at most one entry per API key).
   */
  readonly callers: Map<string, { readonly caller: Caller; readonly until: number }>
}

/**
 * A refusal of admission: the answer to send, nothing held.
 *
 * @since 0.1.0
 * @category Admission
 */
export const refused = (response: HttpServerResponse.HttpServerResponse): Admit => ({ _tag: "Refused", response })

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
  services: AdmissionServices,
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
  services: AdmissionServices,
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
    return refused(ErrorResponse.fromApiError(RequestBody.tooLarge(`${declaredLength} bytes`, maxBodyBytes)))
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
const indexedCaller = (services: AdmissionServices, value: string): Caller | undefined => {
  const entry = services.callers.get(value)
  if (entry === undefined) return undefined
  if (services.clock.unsafeCurrentTimeMillis() < entry.until) return entry.caller
  services.callers.delete(value)
  return undefined
}

/**
 * Steps 1-5 decided now, without an effect, when the caller is in the index of recent callers; undefined when the
 * identity store must be asked (then run {@link admit}).
 *
 * @since 0.1.0
 * @category Admission
 */
export const admitNow = (services: AdmissionServices, request: HttpServerRequest.HttpServerRequest): Admit | undefined => {
  const value = bearerValue(request.headers.authorization)
  if (value === undefined) return decideAdmission(services, request, "missing")
  const caller = indexedCaller(services, value)
  return caller === undefined ? undefined : decideAdmission(services, request, caller)
}

/**
 * Steps 1-5 (draining and the in-flight count, declared length, authentication, credits, the new-organization
 * cap): the caller from the index of recent callers, else from the identity store (then indexed). Needs nothing from
 * the context, so that a server can run it before the request's own fiber starts; never fails (a store that fails is
 * a refusal with the envelope of StoreOutage.ts).
 *
 * @since 0.1.0
 * @category Admission
 */
export const admit = (services: AdmissionServices, request: HttpServerRequest.HttpServerRequest): Effect.Effect<Admit> =>
  Effect.suspend(() => {
    const now = admitNow(services, request)
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

