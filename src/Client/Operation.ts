/**
 * The operations of the contract as the client names them (`group` and endpoint `name`), and what each one may fail
 * with: exactly the typed errors its endpoint lists in the contract (read from the endpoint's error schema), plus the
 * client's own. `Transport.operation` runs every service method through these.
 *
 * Source: spec "Errors" (the errors of each endpoint); issue 15 (one home for each operation's errors).
 *
 * @since 0.1.0
 */
import type { HttpApi, HttpApiClient, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"
import { BoxServiceApi } from "../Contract/Api.js"

/** Everything one attempt can fail with, after the transport normalized it. */
export type ClientFailure =
  | ApiError.AnyApiError
  | ApiError.TransportError
  | ApiError.TimeoutError
  | ApiError.UnexpectedResponseError

/** The groups of the contract. */
type ContractGroups = typeof BoxServiceApi extends HttpApi.HttpApi<infer _Id, infer Groups, infer _E, infer _R> ? Groups
  : never

/** The name of a group of the contract (`"boxes"`, `"apps"`, ...). */
export type GroupName = HttpApiGroup.HttpApiGroup.Name<ContractGroups>

/** The name of an endpoint of group `G` (`"create"`, `"retrieve"`, ...). */
export type EndpointName<G extends GroupName> = HttpApiEndpoint.HttpApiEndpoint.Name<
  HttpApiGroup.HttpApiGroup.EndpointsWithName<ContractGroups, G>
>

/** The endpoint `N` of group `G`. */
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
 */
export type RequestOf<G extends GroupName, N extends EndpointName<G>> =
  & Omit<ClientRequestOf<G, N>, "withResponse" | "headers">
  & (ClientRequestOf<G, N> extends { readonly headers: infer H } ? { readonly headers?: Partial<H> } : {})

/**
 * What an operation can fail with: the typed errors its endpoint lists in the contract, and the client's own
 * (`TransportError`, `TimeoutError`, `UnexpectedResponseError`).
 */
export type OperationError<G extends GroupName, N extends EndpointName<G>> =
  | HttpApiEndpoint.HttpApiEndpoint.Error<EndpointOf<G, N>>
  | ApiError.TransportError
  | ApiError.TimeoutError
  | ApiError.UnexpectedResponseError

const listedErrors = new Map<string, ReadonlyArray<ApiErrorClass>>()

/**
 * The typed error classes endpoint `name` of `group` lists in the contract (`Contract/Api.ts`), read once per
 * endpoint: what `Transport.operation` keeps in its error channel. Throws for an endpoint the contract lacks.
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

/** A class of the ten typed API errors. */
export type ApiErrorClass = (typeof ApiError.apiErrorClasses)[number]

/**
 * Keeps in the error channel exactly the typed errors of `classes` (what one operation lists), plus the client-side
 * errors; any other envelope becomes `UnexpectedResponseError` carrying it as `cause` (and its call's `context`).
 */
export const keepListed = <A, E extends ApiError.UnexpectedResponseError, R>(
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
