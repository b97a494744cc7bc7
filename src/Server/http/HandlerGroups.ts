/**
 * How the contract's handler groups are built: {@link group} is `HttpApiBuilder.group` (same signature, same layer,
 * the routes registered with `HttpApiBuilder.Router` as usual) that also records the group's handlers and services
 * in a {@link Registry} when one is in context, so that a serving path can compile its own routes from them
 * (src/Server/http/fast/ContractRoutes.ts does).
 * {@link encodeOnce} marks an answer a handler returns again and again unchanged, so that a serving path may encode
 * it once ({@link isEncodedOnce}). The handlers `HttpApiBuilder` serves (the stock path) answer a value of a JSON
 * success schema as the response `HttpApiBuilder` would encode from it, with the schema's status and content type
 * read once instead of per answer, and the answer of a value marked with {@link encodeOnce} kept.
 *
 * Neutral to the serving path: the handlers (src/Server/handlers) depend on this module and on `HttpApiBuilder`
 * only, so either serving path can be removed without touching them.
 *
 * Source: docs/decisions/0001-two-serving-paths.md (two serving paths, one behaviour).
 *
 * @since 0.1.0
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { HttpApiBuilder, HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Chunk, Context, Effect, Either, Layer, Option, ParseResult, type Schema, type Scope } from "effect"
import type { StoreError } from "../state/StoreError.js"

/**
 * One group built with {@link group}: the group, its handlers, and the services it was built with.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Registration {
  readonly group: HttpApiGroup.HttpApiGroup.AnyWithProps
  readonly items: ReadonlyArray<HttpApiBuilder.Handlers.Item<any, any>>
  readonly context: Context.Context<never>
}

/**
 * The groups built with {@link group} in one service instance (`add` records one, `all` lists them in the order
 * they were built). Provided by a serving path that compiles its own routes; absent otherwise.
 *
 * @since 0.1.0
 * @category Services
 */
export class Registry extends Context.Tag("boxkit/server/HandlerGroups/Registry")<Registry, {
  readonly add: (registration: Registration) => void
  readonly all: () => ReadonlyArray<Registration>
}>() {
  /** An empty registry. */
  static readonly layer = Layer.sync(Registry, () => {
    const registrations: Array<Registration> = []
    return {
      add: (registration) => {
        registrations.push(registration)
      },
      all: () => registrations
    }
  })
}

/**
 * `HttpApiBuilder.group`, recording the group's handlers and services in the {@link Registry} when one is in
 * context, with each handler's value answered as `HttpApiBuilder` would answer it (module header). Same parameters,
 * layer and errors as `HttpApiBuilder.group`, but a
 * handler may also fail with the state store's `StoreError` (state/StoreError.ts), which is not part of the contract:
 * both serving paths answer it with the error envelope (ErrorResponse.fromCause: 503 or 500 `server_error`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const group = <
  ApiId extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  ApiError,
  ApiR,
  const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  Return
>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  groupName: Name,
  build: (
    handlers: HttpApiBuilder.Handlers.FromGroup<
      ApiError | StoreError,
      ApiR,
      HttpApiGroup.HttpApiGroup.WithName<Groups, Name>
    >
  ) => HttpApiBuilder.Handlers.ValidateReturn<Return>
): Layer.Layer<
  HttpApiGroup.ApiGroup<ApiId, Name>,
  HttpApiBuilder.Handlers.Error<Return>,
  Exclude<HttpApiBuilder.Handlers.Context<Return> | HttpApiGroup.HttpApiGroup.MiddlewareWithName<Groups, Name>, Scope.Scope>
> =>
  HttpApiBuilder.group(api, groupName, (handlers) => {
    const result: unknown = build(handlers)
    const built = (Effect.isEffect(result) ? result : Effect.succeed(result)) as Effect.Effect<
      HttpApiBuilder.Handlers<unknown, unknown, HttpApiEndpoint.HttpApiEndpoint.Any>
    >
    const recorded = Effect.tap(built, (handled) =>
      Effect.flatMap(Effect.serviceOption(Registry), (registry) =>
        Option.isNone(registry) ? Effect.void : Effect.map(Effect.context<never>(), (context) =>
          registry.value.add({ group: handled.group, items: Chunk.toReadonlyArray(handled.handlers), context }))))
    // The handlers `build` returned, answering as `HttpApiBuilder` would (answeringHandlers), with the same
    // requirements (the registry is optional): only the types of `HttpApiBuilder.group`'s callback cannot say so for a
    // generic `Return`.
    const answering = Effect.map(recorded, (handled) => answeringHandlers(handlers, handled))
    return answering as unknown as HttpApiBuilder.Handlers.ValidateReturn<Return>
  })

/** The handlers of a group, untyped: what {@link answeringHandlers} rebuilds. */
type AnyHandlers = HttpApiBuilder.Handlers<unknown, unknown, unknown, HttpApiEndpoint.HttpApiEndpoint.Any>

/**
 * `handled` rebuilt from `empty` (the handlers `HttpApiBuilder.group` gave the build) with each handler's value
 * answered by {@link successAnswer}: the same endpoints, the same raw or decoded requests, the same
 * interruptibility. The registry keeps the handlers as built: a serving path that compiles its routes encodes their
 * values itself.
 */
const answeringHandlers = (empty: unknown, handled: AnyHandlers): AnyHandlers => {
  let rebuilt = empty as AnyHandlers
  for (const item of handled.handlers) {
    const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
    const answer = successAnswer(endpoint)
    const handler: HttpApiEndpoint.HttpApiEndpoint.Handler<any, unknown, unknown> = answer === undefined
      ? item.handler
      : (request) => Effect.flatMap(item.handler(request), (value) => Effect.succeed(answer(value)))
    const options = { uninterruptible: item.uninterruptible }
    const add = item.withFullRequest ? rebuilt.handleRaw : rebuilt.handle
    rebuilt = (add as (name: string, handler: unknown, options: unknown) => AnyHandlers).call(
      rebuilt,
      endpoint.name,
      handler,
      options
    )
  }
  return rebuilt
}

/**
 * What a handler of `endpoint` answers for its value `value`, as `HttpApiBuilder` answers it: a response is answered
 * as it is; a value of the endpoint's success schema, when that is one JSON schema, is encoded with it and answered as
 * `HttpServerResponse.json` with its status and content type (read once here, where `HttpApiBuilder` reads the
 * schema's annotations again for every answer); the response of a value registered with {@link encodeOnce} is kept
 * and answered again (responses are immutable). Anything else (a value that does not encode, an answer `JSON` cannot
 * write) is handed back unchanged, for `HttpApiBuilder` to encode, or fail to, as it does. Undefined for an endpoint
 * with several success schemas, an empty one or a body other than JSON: `HttpApiBuilder` encodes those itself.
 */
const successAnswer = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): ((value: unknown) => unknown) | undefined => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, endpoint.successSchema)
  if (schemas.size !== 1) return undefined
  const schema = [...schemas][0] as Schema.Schema<unknown, unknown>
  if (HttpApiSchema.isVoid(schema.ast)) return undefined
  const encoding = HttpApiSchema.getEncoding(schema.ast)
  if (encoding.kind !== "Json") return undefined
  const options = { status: HttpApiSchema.getStatusSuccessAST(schema.ast), contentType: encoding.contentType }
  const encode = ParseResult.encodeUnknownEither(schema)
  const respond = (value: unknown): unknown => {
    if (HttpServerResponse.isServerResponse(value)) return value
    const encoded = encode(value)
    if (Either.isLeft(encoded)) return value
    try {
      return HttpServerResponse.unsafeJson(encoded.right, options)
    } catch {
      return value
    }
  }
  const kept = new WeakMap<object, unknown>()
  return (value) => {
    if (!isEncodedOnce(value)) return respond(value)
    let response = kept.get(value)
    if (response === undefined) {
      response = respond(value)
      if (HttpServerResponse.isServerResponse(response)) kept.set(value, response)
    }
    return response
  }
}

/** The values registered with {@link encodeOnce}. */
const encodedOnce = new WeakSet<object>()

/**
 * Registers `value`, an answer a handler will return again and again unchanged (e.g. the object of a stored record,
 * built once per record), so that a serving path that compiles its routes encodes it once and answers it from then
 * on with the same bytes, for as long as the value lives. The value must never change afterwards. Returns `value`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const encodeOnce = <A extends object>(value: A): A => {
  encodedOnce.add(value)
  return value
}

/**
 * True when `value` was registered with {@link encodeOnce}.
 *
 * @since 0.1.0
 * @category Utils
 */
export const isEncodedOnce = (value: unknown): value is object =>
  typeof value === "object" && value !== null && encodedOnce.has(value)
