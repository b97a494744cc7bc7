/**
 * The shared transport of every client service: the client derived from the contract (ContractClient.ts, the shape of
 * `HttpApiClient` at a lower cost per call: docs/decisions/0006-client-own-code-or-stock.md), with the bearer key
 * added (from `Redacted`; `authorization` is redacted by name wherever `@effect/platform` shows headers), a caller's
 * non-ASCII `Idempotency-Key` sent as its UTF-8 bytes, error answers decoded into the typed errors by `type`
 * (ErrorDecoding.ts), `call`, which runs one logical call with per-attempt timeouts, the retry Schedule and the
 * overall deadline (Call.ts), and `operation` (with `operationWithResponse` and `operationRaw`), through which every
 * service method runs one operation of the contract: the endpoint, `safeToRepeat`, retry overrides and the
 * owner-override header, with the errors the endpoint lists in the contract.
 * Per-call retry settings: {@link withRetry} or a service method's `retry` option (RetryOverrides.ts). The answer's
 * status and headers beside its value: {@link withResponse} (ResponseMetadata.ts). Every request carries
 * `User-Agent: boxkit/<version>` and the configured default headers (`BoxkitOptions.headers`), and goes through
 * `BoxkitOptions.transformClient` when one is set; the error a call ends with carries its context (operation,
 * method, path, attempts: `ApiError.CallContext`, CallSites.ts).
 *
 * Source: spec "Authentication" 1, 6; "Errors"; "Limits" (Idempotency-Key); docs/ASSUMPTIONS.md (client behaviour).
 *
 * @since 0.1.0
 */
import {
  Headers,
  type HttpApiEndpoint,
  HttpClient,
  HttpClientRequest,
  type HttpClientResponse
} from "@effect/platform"
import { Effect, Redacted } from "effect"
import { identity } from "effect/Function"
import { apiUrlGroups, BoxServiceApi, IdempotencyKeyHeader, OwnerOverrideHeader } from "../Contract/Api.js"
import * as UndiciHttpClient from "../Http/UndiciHttpClient.js"
import { BoxkitConfig, type BoxkitSettings, type RetrySettings } from "./BoxkitConfig.js"
import { type CallOptions, makeCall } from "./Call.js"
import { OperationSite, origin, RawSite } from "./CallSites.js"
import * as ContractClient from "./ContractClient.js"
import { decodeErrorResponse } from "./ErrorDecoding.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import {
  type ClientFailure,
  type EndpointName,
  type EndpointOf,
  errorsListedBy,
  type GroupName,
  keepListed,
  type OperationError,
  type RequestOf
} from "./Operation.js"
import { currentResponseSlot } from "./ResponseMetadata.js"
import { userAgent } from "./Version.js"

export type { CallOptions, CallSite } from "./Call.js"
export { decodeErrorResponse, normalizeError } from "./ErrorDecoding.js"
/**
 * Types of the contract's operations (Operation.ts), for services built on the transport: groups, endpoints, requests
 * and `OperationError`, what an operation fails with (listed with the errors; the others keep their own category).
 *
 * @since 0.1.0
 * @category Errors
 */
export type {
  ApiErrorClass,
  ClientFailure,
  EndpointName,
  EndpointOf,
  GroupName,
  OperationError,
  RequestOf
} from "./Operation.js"
export { errorsListedBy } from "./Operation.js"
export { currentResponseSlot, type ResponseMetadata, ResponseSlot, type WithResponse, withResponse } from "./ResponseMetadata.js"
export { currentRetryOverrides, resolveRetry, withRetry } from "./RetryOverrides.js"
export { validate } from "./Validation.js"

/**
 * The headers of a call's owner override (spec "Boxes": an admin acting on another user's private box names the
 * reason in `x-box-owner-override-reason`): the header when `reason` is set, else none.
 *
 * @since 0.1.0
 * @category Utils
 */
export const ownerOverrideHeaders = (reason: string | undefined): { readonly [OwnerOverrideHeader]?: string } =>
  reason !== undefined ? { [OwnerOverrideHeader]: reason } : {}

/**
 * The options every operation of the client takes: `retry`, overrides of `BoxkitConfig.retry` for this call only
 * (they win over `Transport.withRetry` and the configuration), and `safeToRepeat`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface OperationOptions {
  readonly retry?: Partial<RetrySettings> | undefined
  /**
   * Whether sending this call's request again is harmless, for this call only. `true`: failures after which the
   * service may have carried the request out (a connection lost after sending, an attempt timeout, a 500) are
   * retried, as they are for reads and requests carrying an idempotency key; say so for an operation without an
   * `Idempotency-Key` when a second run does no harm (each method's documentation says what a repeat does).
   * `false`: they are not retried, even for reads. Omitted: the operation's own default (true for reads,
   * replacements and requests carrying an idempotency key; false for creations without one). Failures after which
   * the request certainly did not run (429, 503, a connection refused) are retried either way.
   * Source: docs/ASSUMPTIONS.md ("Client").
   */
  readonly safeToRepeat?: boolean | undefined
}

/** Options of one operation of the contract (see `Transport.operation`). @since 0.1.0 @category Models */
export interface OperationCallOptions extends CallOptions {
  /** The reason of an admin's owner override, sent as `x-box-owner-override-reason` (box operations only). */
  readonly ownerOverrideReason?: string | undefined
}

/**
 * The headers the toolkit sends on every request, under each request's own: `User-Agent: boxkit/<version>`, then
 * `BoxkitConfig.headers` (names in lower case; a `Redacted` value unwrapped here, for the wire only), so that a
 * configured `User-Agent` wins over the toolkit's.
 */
const defaultHeadersOf = (config: BoxkitSettings): Record<string, string> => {
  const headers: Record<string, string> = { "user-agent": userAgent }
  const configured = config.headers ?? {}
  for (const name in configured) {
    const value = configured[name]
    headers[name.toLowerCase()] = Redacted.isRedacted(value) ? Redacted.value(value) : value
  }
  return headers
}

/** A service's client of the contract: `client[group][endpoint](request)`. */
type ContractEndpoints = Record<string, Record<string, (request: object) => Effect.Effect<any, unknown>>>

/**
 * The HTTP clients of the transport over `provided`: `http` for requests built by hand, the contract's clients on
 * `{base_url}` (`box`) and `{api_url}` (`api`), and whether attempts can be bounded by the client's own deadline
 * (`lean`: the toolkit's `UndiciHttpClient`, not wrapped by `transformClient`).
 */
const clientsOf = (config: BoxkitSettings, provided: HttpClient.HttpClient) => {
  // `transformClient` wraps the client every request goes through, outside the headers the toolkit sets (so it
  // sees them). A transformed client may run requests on fibers of its own: attempts are then bounded by a racing
  // timer instead of the toolkit's own client's deadline (`lean` is false).
  const transform = config.transformClient ?? identity
  const base = transform(provided)
  const lean = UndiciHttpClient.honoursDeadline(base)
  /** Every request's headers under its own: `User-Agent`, the configured ones, the bearer key (which wins). */
  const defaultHeaders = {
    ...defaultHeadersOf(config),
    authorization: `Bearer ${Redacted.value(config.apiKey)}`
  }
  /**
   * Raw requests (streams, raw bodies): the default headers, the bearer key and the key encoding added, then
   * `transformClient`; error answers decoded.
   */
  const defaultHeaderSet = Headers.fromInput(defaultHeaders)
  const http = transform(provided.pipe(
    HttpClient.mapRequest((request) => {
      const key = request.headers[IdempotencyKeyHeader]
      const encoded = key === undefined ? undefined : IdempotencyKey.toHeaderValue(key)
      const own = encoded === key ? request.headers : Headers.set(request.headers, IdempotencyKeyHeader, encoded!)
      // The request's own headers over the defaults; the bearer key over both.
      const headers = Headers.set(Headers.merge(defaultHeaderSet, own), "authorization", defaultHeaders.authorization)
      return HttpClientRequest.setHeaders(request, headers)
    })
  )).pipe(
    HttpClient.transformResponse(Effect.flatMap((response) =>
      response.status >= 400 ? decodeErrorResponse(response) : Effect.succeed(response)
    ))
  )
  const contract = (baseUrl: string) =>
    ContractClient.make(BoxServiceApi, {
      httpClient: base,
      baseUrl: origin(baseUrl),
      headers: defaultHeaders,
      mapHeaders: (headers) => {
        const key = headers[IdempotencyKeyHeader]
        return key === undefined || IdempotencyKey.toHeaderValue(key) === key
          ? headers
          : { ...headers, [IdempotencyKeyHeader]: IdempotencyKey.toHeaderValue(key) }
      },
      onErrorStatus: decodeErrorResponse
    })
  return { lean, http, box: contract(config.baseUrl), api: contract(config.apiUrl) }
}

/** The clients of {@link clientsOf}. */
type Clients = ReturnType<typeof clientsOf>

/** A call runner of Call.ts ({@link makeCall}). */
type CallRunner = ReturnType<typeof makeCall>

/** `operation` and `operationWithResponse` of the transport, over the contract's clients. */
const contractOperationsOf = ({ api, box }: Clients, call: CallRunner) => {
  const clientOf = (group: string) => (apiUrlGroups.has(group) ? api : box) as unknown as ContractEndpoints
  // The headers schema of an endpoint that has one wants an object, even when every header is optional; an
  // endpoint without one ignores `headers`.
  const noHeaders = {}
  const withOverride = (request: object, reason: string | undefined): object => {
    const headers = (request as { readonly headers?: object }).headers
    if (reason !== undefined) return { ...request, headers: { ...headers, ...ownerOverrideHeaders(reason) } }
    return headers === undefined ? { ...request, headers: noHeaders } : request
  }

  /**
   * Endpoint `name` of `group` sent with `request` by `call`, with its `OperationSite`: its value, or
   * `[value, response]` when `answerResponse`; the answer is handed to an enclosing `withResponse`.
   */
  const sendOperation = (
    group: string,
    name: string,
    request: object,
    options: OperationCallOptions,
    answerResponse: boolean
  ): Effect.Effect<any, ClientFailure> =>
    Effect.withFiberRuntime((fiber) => {
      const slot = fiber.getFiberRef(currentResponseSlot)
      const sent = withOverride(request, options.ownerOverrideReason)
      const endpoint = clientOf(group)[group][name]
      const site = new OperationSite(group, name, request)
      if (slot === undefined && !answerResponse) return call(endpoint(sent), options, site)
      const withResponse = endpoint({ ...sent, withResponse: true }) as Effect.Effect<
        readonly [unknown, HttpClientResponse.HttpClientResponse],
        unknown
      >
      const answered = Effect.map(withResponse, (answer) => {
        slot?.record(answer[1])
        return answerResponse ? answer : answer[0]
      })
      return call(answered, options, site)
    })

  /**
   * One operation of the contract, the way every service method runs it: endpoint `name` of `group` called with
   * `request` on the group's address (`{api_url}` or `{base_url}`), the owner-override header added when
   * `options.ownerOverrideReason` is set, run by `call` (`safeToRepeat`, `retry`), and failing with exactly
   * the errors the endpoint lists in the contract (`OperationError`); any other envelope is an
   * `UnexpectedResponseError`.
   */
  const operation = <G extends GroupName, N extends EndpointName<G>>(
    group: G,
    name: N,
    request: RequestOf<G, N>,
    options: OperationCallOptions
  ): Effect.Effect<HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<G, N>>, OperationError<G, N>> =>
    keepListed(errorsListedBy(group, name), sendOperation(group, name, request, options, false))

  /** `operation`, answering the value with the HTTP response (for its headers, e.g. `Idempotent-Replayed`). */
  const operationWithResponse = <G extends GroupName, N extends EndpointName<G>>(
    group: G,
    name: N,
    request: RequestOf<G, N>,
    options: OperationCallOptions
  ): Effect.Effect<
    readonly [HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<G, N>>, HttpClientResponse.HttpClientResponse],
    OperationError<G, N>
  > =>
    keepListed(errorsListedBy(group, name), sendOperation(group, name, request, options, true))

  return { operation, operationWithResponse }
}

/** `operationRaw` and `urlOf` of the transport, for requests built by hand. */
const rawOperationsOf = (config: BoxkitSettings, { http }: Clients, call: CallRunner) => {
  /**
   * `operation` for a request built by hand (a raw body, a streamed answer): `request` is sent as is (its URL from
   * `urlOf`), with the bearer key; `use` reads the answer. Errors as `operation`.
   */
  const operationRaw = <G extends GroupName, N extends EndpointName<G>, A>(
    group: G,
    name: N,
    request: HttpClientRequest.HttpClientRequest,
    use: (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<A, unknown>,
    options: OperationCallOptions
  ): Effect.Effect<A, OperationError<G, N>> =>
    keepListed(
      errorsListedBy(group, name),
      Effect.withFiberRuntime((fiber) => {
        const slot = fiber.getFiberRef(currentResponseSlot)
        const sent = http.execute(
          HttpClientRequest.setHeaders(request, ownerOverrideHeaders(options.ownerOverrideReason))
        )
        return call(
          Effect.flatMap(sent, (response) => {
            slot?.record(response)
            return use(response)
          }),
          options,
          new RawSite(`${group}.${name}`, request, origin(apiUrlGroups.has(group) ? config.apiUrl : config.baseUrl))
        )
      })
    )

  /**
   * The URL of endpoint `name` of `group` for `params` (each path parameter URL-encoded), on the group's address:
   * for requests built by hand (`operationRaw`).
   */
  const urlOf = <G extends GroupName>(group: G, name: EndpointName<G>, params: Record<string, string> = {}) => {
    const path = ContractClient.pathOf(BoxServiceApi, group, name)
    const encoded: Record<string, string> = {}
    for (const key in params) encoded[key] = encodeURIComponent(params[key])
    return `${origin(apiUrlGroups.has(group) ? config.apiUrl : config.baseUrl)}${path(encoded)}`
  }

  return { operationRaw, urlOf }
}

/**
 * The shared transport every client service runs on (`yield* Transport`): `config` (the client's settings), the
 * `HttpClient`s, `call` (one logical call: attempts bounded by their timeout, retried on the retry Schedule within
 * the overall deadline), `operation` and `operationWithResponse` (one operation of the contract by group and name,
 * failing with exactly the errors its endpoint lists, `OperationError`), `operationRaw` and `urlOf` (for requests
 * built by hand). Provided by `Boxkit.layer` with the services; source: spec "Authentication" 1, 6, "Errors",
 * docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 * @category Services
 */
export class Transport extends Effect.Service<Transport>()("boxkit/Transport", {
  effect: Effect.gen(function*() {
    const config = yield* BoxkitConfig
    const clients = clientsOf(config, yield* HttpClient.HttpClient)
    /**
     * Runs one logical call (Call.ts `makeCall`): attempts bounded, retried, the error with its context. The
     * contract's calls are read whole, so the toolkit's client can bound them itself (`clients.lean`); any other
     * attempt (a request built by hand, whose answer may be a stream) is bounded by `Effect.timeoutFail`.
     */
    const call = makeCall(config.retry, false)
    return {
      config,
      http: clients.http,
      box: clients.box,
      api: clients.api,
      call,
      ...contractOperationsOf(clients, makeCall(config.retry, clients.lean)),
      ...rawOperationsOf(config, clients, call)
    }
  })
}) {}
