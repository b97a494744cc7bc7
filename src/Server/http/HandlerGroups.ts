/**
 * How the contract's handler groups are built: {@link group} is `HttpApiBuilder.group` (same signature, same layer,
 * the routes registered with `HttpApiBuilder.Router` as usual) that also records the group's handlers and services
 * in a {@link Registry} when one is in context, so that a serving path can compile its own routes from them
 * (src/Server/http/fast/ContractRoutes.ts does); without a registry it is exactly `HttpApiBuilder.group`.
 * {@link encodeOnce} marks an answer a handler returns again and again unchanged, so that a serving path may encode
 * it once ({@link isEncodedOnce}); the stock path ignores the mark.
 *
 * Neutral to the serving path: the handlers (src/Server/handlers) depend on this module and on `HttpApiBuilder`
 * only, so either serving path can be removed without touching them.
 *
 * Source: docs/decisions/0001-two-serving-paths.md (two serving paths, one behaviour).
 *
 * @since 0.1.0
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { HttpApiBuilder } from "@effect/platform"
import { Chunk, Context, Effect, Layer, Option, type Scope } from "effect"
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
 * context (else exactly `HttpApiBuilder.group`). Same parameters, layer and errors as `HttpApiBuilder.group`, but a
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
    // The same handlers `build` returned, with the same requirements (the registry is optional): only the types of
    // `HttpApiBuilder.group`'s callback cannot say so for a generic `Return`.
    return recorded as unknown as HttpApiBuilder.Handlers.ValidateReturn<Return>
  })

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
