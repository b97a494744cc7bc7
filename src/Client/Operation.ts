/**
 * The operations of the contract as the client names them (`group` and endpoint `name`), and what each one may fail
 * with: exactly the typed errors its endpoint lists in the contract (read from the endpoint's error schema), plus the
 * client's own. `Transport.operation` runs every service method through these.
 *
 * Source: spec "Errors" (the errors of each endpoint).
 *
 * @since 0.1.0
 */
import type { HttpApi, HttpApiClient, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"
import { BoxServiceApi } from "../Contract/Api.js"
import type * as Contract from "../Contract/Api.js"

/**
 * Everything one attempt can fail with, after the transport normalized it.
 *
 * @since 0.1.0
 * @category Models
 */
export type ClientFailure =
  | ApiError.AnyApiError
  | ApiError.TransportError
  | ApiError.TimeoutError
  | ApiError.UnexpectedResponseError

/** The groups of the contract. */
type ContractGroups = typeof BoxServiceApi extends HttpApi.HttpApi<infer _Id, infer Groups, infer _E, infer _R> ? Groups
  : never

/**
 * The name of a group of the contract (`"boxes"`, `"apps"`, ...).
 *
 * @since 0.1.0
 * @category Models
 */
export type GroupName = HttpApiGroup.HttpApiGroup.Name<ContractGroups>

/**
 * The name of an endpoint of group `G` (`"create"`, `"retrieve"`, ...).
 *
 * @since 0.1.0
 * @category Models
 */
export type EndpointName<G extends GroupName> = HttpApiEndpoint.HttpApiEndpoint.Name<
  HttpApiGroup.HttpApiGroup.EndpointsWithName<ContractGroups, G>
>

/**
 * The endpoint `N` of group `G`.
 *
 * @since 0.1.0
 * @category Models
 */
export type EndpointOf<G extends GroupName, N extends string> = HttpApiEndpoint.HttpApiEndpoint.WithName<
  HttpApiGroup.HttpApiGroup.EndpointsWithName<ContractGroups, G>,
  N
>

/** The request the derived client's method for endpoint `N` of group `G` takes. */
type ClientRequestOf<G extends GroupName, N extends EndpointName<G>> = Parameters<
  HttpApiClient.Client.Method<EndpointOf<G, N>, never, never, never>
>[0]

/**
 * What an operation of endpoint `N` of group `G` is called with: path, payload, query and headers as the contract
 * declares them, the headers optional (the owner-override header is added from `OperationCallOptions`).
 *
 * @since 0.1.0
 * @category Models
 */
export type RequestOf<G extends GroupName, N extends EndpointName<G>> =
  & Omit<ClientRequestOf<G, N>, "withResponse" | "headers">
  & (ClientRequestOf<G, N> extends { readonly headers: infer H } ? { readonly headers?: Partial<H> } : {})

/**
 * The client's own errors, which any operation can fail with: `TransportError` (no answer: refused, reset, closed),
 * `TimeoutError` (an attempt or the call's deadline ran out) and `UnexpectedResponseError` (an answer the operation
 * does not list, or one that does not decode).
 *
 * Source: docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 * @category Errors
 */
export type ClientError = ApiError.TransportError | ApiError.TimeoutError | ApiError.UnexpectedResponseError

/**
 * The API errors every endpoint of the contract lists: 400 `InvalidRequestError`, 401 `AuthenticationError`, 402
 * `BillingError`, 403 `PermissionError`, 404 `NotFoundError`, 429 `RateLimitError`, 500/503 `ServerError`.
 *
 * Source: spec "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type CommonError = Contract.CommonError

/**
 * What any operation can fail with: {@link CommonError} and {@link ClientError}. The operations that list nothing
 * more (reads, `Boxes.terminate`, `Exec.resize`, renaming an egress policy) fail with exactly this.
 *
 * @since 0.1.0
 * @category Errors
 */
export type CallError = CommonError | ClientError

/**
 * What creating a box can fail with: {@link CallError}, 409 `ConflictError` (its idempotency key reused with another
 * body; a key still in flight is a `ServerError`) and 429 `QuotaExceededError`. Source: spec "Create a box", "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type BoxesCreateError = CommonError | ApiError.ConflictError | ApiError.QuotaExceededError | ClientError

/**
 * What a box's lifecycle moves (pause, resume, sleep) can fail with: {@link CallError} and 409
 * `ConflictError` (the box's status does not allow the move). Source: spec "States and transitions", "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type BoxesTransitionError = CommonError | ApiError.ConflictError | ClientError

/**
 * What upgrading a box can fail with: {@link BoxesTransitionError} and 429 `QuotaExceededError` (code
 * `idempotency_keys`: a new `Idempotency-Key` while the API key holds its quota of remembered keys). Source: spec
 * "Upgrade a box", "Errors"; docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 * @category Errors
 */
export type BoxesUpgradeError = CommonError | ApiError.ConflictError | ApiError.QuotaExceededError | ClientError

/**
 * What publishing, unpublishing and adding domains to listeners can fail with: {@link CallError} and 409
 * `ConflictError`. Source: spec "Listeners", "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type ListenersError = CommonError | ApiError.ConflictError | ClientError

/**
 * What writing a clipboard can fail with: {@link CallError}, 409 `ConflictError`, 429 `QuotaExceededError` (stored
 * bytes over the quota) and 501 `NotImplementedError`. Source: spec "Clipboard", "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type ClipboardWriteError =
  | CommonError
  | ApiError.ConflictError
  | ApiError.QuotaExceededError
  | ApiError.NotImplementedError
  | ClientError

/**
 * What creating or submitting a model response can fail with: {@link CallError}, 409 `ConflictError` (its
 * idempotency key reused with another body) and 429 `QuotaExceededError` (background responses over the quota).
 * Source: spec "POST {api_url}/responses", "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type ResponsesCreateError = CommonError | ApiError.ConflictError | ApiError.QuotaExceededError | ClientError

/**
 * What finding (and minting) an app, creating a secret or saving an egress policy can fail with: {@link CallError}
 * and 429 `QuotaExceededError` (code `apps`, `secrets` or `egress_policies`: the organization holds its quota of
 * them). Source: spec "Errors"; docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 * @category Errors
 */
export type CountQuotaError = CommonError | ApiError.QuotaExceededError | ClientError

/**
 * The errors of every operation, by group and endpoint name, spelled with the exported unions above. Each entry is
 * exactly what its endpoint lists in the contract plus {@link ClientError} (checked by
 * test/client/OperationErrorUnions.test.ts).
 *
 * @since 0.1.0
 * @category Errors
 */
export interface OperationErrors {
  readonly apps: { readonly find: CountQuotaError }
  readonly boxes: {
    readonly create: BoxesCreateError
    readonly retrieve: CallError
    readonly upgrade: BoxesUpgradeError
    readonly pause: BoxesTransitionError
    readonly resume: BoxesTransitionError
    readonly sleep: BoxesTransitionError
    readonly terminate: CallError
  }
  readonly exec: { readonly resize: CallError }
  readonly listeners: {
    readonly publish: ListenersError
    readonly unpublish: ListenersError
    readonly addDomain: ListenersError
  }
  readonly clipboard: { readonly write: ClipboardWriteError }
  readonly secrets: { readonly retrieve: CallError; readonly create: CountQuotaError }
  readonly egressPolicies: { readonly retrieve: CallError; readonly create: CountQuotaError; readonly rename: CallError }
  readonly responses: { readonly create: ResponsesCreateError; readonly retrieve: CallError }
}

/**
 * What an operation can fail with: the typed errors its endpoint lists in the contract, and the client's own
 * ({@link ClientError}), as the named union of {@link OperationErrors} (so declarations and editors show
 * `BoxesCreateError`, `CallError`, ... rather than this alias).
 *
 * @since 0.1.0
 * @category Errors
 */
export type OperationError<G extends GroupName, N extends EndpointName<G>> = G extends keyof OperationErrors
  ? N extends keyof OperationErrors[G] ? OperationErrors[G][N] : never
  : never

/**
 * What an operation can fail with, read from the contract's endpoint: the check of {@link OperationErrors}.
 *
 * @since 0.1.0
 * @category Errors
 */
export type ContractOperationError<G extends GroupName, N extends EndpointName<G>> =
  | HttpApiEndpoint.HttpApiEndpoint.Error<EndpointOf<G, N>>
  | ClientError

const listedErrors = new Map<string, ReadonlyArray<ApiErrorClass>>()

/**
 * The typed error classes endpoint `name` of `group` lists in the contract (`Contract/Api.ts`), read once per
 * endpoint: what `Transport.operation` keeps in its error channel. Throws for an endpoint the contract lacks.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const errorsListedBy = (group: string, name: string): ReadonlyArray<ApiErrorClass> => {
  const id = `${group}.${name}`
  let classes = listedErrors.get(id)
  if (classes === undefined) {
    const endpoint = BoxServiceApi.groups[group as GroupName]?.endpoints[name]
    if (endpoint === undefined) throw new Error(`Transport: no endpoint ${id} in the contract`)
    classes = ApiError.classesOf(endpoint.errorSchema)
    listedErrors.set(id, classes)
  }
  return classes
}

/**
 * A class of the ten typed API errors.
 *
 * @since 0.1.0
 * @category Models
 */
export type ApiErrorClass = (typeof ApiError.apiErrorClasses)[number]

/**
 * Keeps in the error channel exactly the typed errors of `classes` (what one operation lists), plus the client-side
 * errors; any other envelope becomes `UnexpectedResponseError` carrying it as `cause` (and its call's `context`).
 *
 * @since 0.1.0
 * @category Combinators
 */
export const keepListed = <A, E, R>(
  classes: ReadonlyArray<ApiErrorClass>,
  effect: Effect.Effect<A, ClientFailure, R>
): Effect.Effect<A, E, R> =>
  Effect.mapError(effect, (error): E => {
    if (
      (ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError) &&
      !classes.some((errorClass) => error instanceof errorClass)
    ) {
      return new ApiError.UnexpectedResponseError({
        message: `${ApiError.typeOf(error)} (HTTP ${error.status}) is not an answer this operation lists: ${error.message}`,
        status: error.status,
        cause: error,
        context: error.context
      }) as E
    }
    // Not an API error, or one of `classes`: what the signature promises.
    return error as E
  })
