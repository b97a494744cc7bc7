/**
 * The stock serving path of the local service (`boxkit serve --server platform`): the contract served by
 * `HttpApiBuilder.httpApp` behind `HttpServer.serve`, with nothing of the fast path's own HTTP machinery
 * (NodeHandler.ts, ContractRoutes.ts). The same rules apply, from the same modules: the request pipeline
 * (RequestPipeline.middleware: draining, declared length, authentication, credits, the new-organization cap, the body,
 * idempotency), the fault injector (FaultInjection.wrap), the error envelope of every failure (ErrorResponse.ts, as
 * the contract's API-level middleware, so that idempotency remembers 4xx answers), `/openapi.json` and `/_local/*`.
 *
 * It is the reference the fast path is tested against (the conformance, resilience and responses suites run against
 * both) and the way back to Effect's own stack if the fast path is ever in doubt. What it adds per request is kept
 * small: the app runs in a context of the serving services only ({@link layerHttp}); the request with its body and the
 * caller become the fiber's context in one step, set back in the pipeline's own finalizer (no `Effect.locally` of its
 * own); the fault injector runs only when a fault is configured; and the handlers answer `HttpApiBuilder` with the
 * response it would encode (HandlerGroups.ts).
 *
 * Source: docs/decisions/0001-two-serving-paths.md (two serving paths, one behaviour).
 *
 * @since 0.1.0
 */
import {
  Etag,
  FileSystem,
  HttpApiBuilder,
  type HttpApp,
  HttpMiddleware,
  HttpPlatform,
  HttpRouter,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse,
  Path
} from "@effect/platform"
import { Cause, Context, Effect, Exit, FiberRef, HashSet, Layer, Scope } from "effect"
import { IncomingMessage } from "node:http"
import type { Principal } from "../../../Contract/Principal.js"
import * as ErrorResponse from "../ErrorResponse.js"
import * as NodeListen from "../NodeListen.js"
import { FaultInjection } from "../../pipeline/FaultInjection.js"
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import * as RequestPipeline from "../../pipeline/RequestPipeline.js"
import * as SelfDelivery from "../SelfDelivery.js"
import type * as ServingPath from "../ServingPath.js"


/**
 * The contract's API-level middleware on this path: every failure of the contract (a typed API error, a schema
 * failure, an unknown route, malformed JSON, a defect) answered with the error envelope (ErrorResponse.fromCause),
 * before `HttpApiBuilder`'s own error encoding, which would drop `Retry-After` and answer decode errors in its own shape.
 */
export const envelopeMiddleware = Layer.succeed(HttpApiBuilder.Middleware, {
  add: () => Effect.void,
  retrieve: Effect.succeed(<E, R>(app: HttpApp.Default<E, R>) => Effect.catchAllCause(app, envelope))
})

/** True when the Node request behind `request` was cut off before its body was complete. */
const leftMidBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const source = request.source
  return source instanceof IncomingMessage && source.destroyed && !source.complete
}

/**
 * The contract run for an admitted caller on this path: the fiber's context becomes the request whose body is in
 * memory and the caller (RequestPipeline.withCaller, one copy of the context, one step), then the contract runs. The
 * context is not set back here: {@link layerHttp}'s app sets back the one it started with when the request's effect
 * ends, whatever its end, once for everything the request did. `Effect.locally` (or `mapInputContext`) would wrap the
 * contract in an acquire-use-release of its own, several times the effects of the contract's own middleware.
 */
const runInRequestContext = <E, R>(
  contract: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): RequestPipeline.Run<E, Exclude<R, Principal | HttpServerRequest.HttpServerRequest>> =>
(principal, requestWithBody) =>
  Effect.zipRight(
    FiberRef.update(
      FiberRef.currentContext,
      (context) => RequestPipeline.withCaller(context, requestWithBody, principal) as Context.Context<never>
    ),
    contract as Effect.Effect<HttpServerResponse.HttpServerResponse, E, Exclude<R, Principal | HttpServerRequest.HttpServerRequest>>
  )

/** The `/v1` app through the fault injector (`wrapped`), ended by `ended` whether the pipeline ran or not. */
const withFaults = <E, R>(
  wrapped: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  ended: (
    request: HttpServerRequest.HttpServerRequest,
    context: Context.Context<never>
  ) => (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, E>) => Effect.Effect<void>
) =>
(request: HttpServerRequest.HttpServerRequest, context: Context.Context<never>) =>
  Effect.onExit(wrapped, ended(request, context))

/** The envelope answer of a failed request. */
const envelope = (cause: Cause.Cause<unknown>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => ErrorResponse.fromCause(cause, request))

/**
 * Serves the local service on the `HttpServer` in context: `/openapi.json` (`openApi`, bytes encoded once),
 * the `pages` answered without a key (`/docs`), `/_local/*` (`local`), and everything else through the fault injector and the request pipeline into
 * `HttpApiBuilder.httpApp` (unknown paths: the pipeline's rules, then 404). Needs the contract (`HttpApi.Api`, with
 * its groups' handlers) and `HttpApiBuilder.Router`. `HttpServer.serveEffect` runs the app in the serving context only
 * (`servingContext`): every request copies its context several times.
 */
export const layerHttp = <R>(options: {
  readonly openApi: Uint8Array
  readonly pages: ReadonlyMap<string, Effect.Effect<HttpServerResponse.HttpServerResponse>>
  readonly local: Effect.Effect<ServingPath.LocalRoutes, never, R>
}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const contract = yield* HttpRouter.withRouterConfig(HttpApiBuilder.httpApp, RequestPipeline.routerConfig)
    const pipeline = yield* RequestPipeline.make
    const faults = yield* FaultInjection
    const local = yield* options.local
    const run = runInRequestContext(contract)
    // What ends every `/v1` request: the context it started with set back (runInRequestContext changed it), and a
    // client abort counted: the client left before its answer, which interrupts the request's fiber (NodeHttpServer),
    // or while its body was still arriving (the body read fails; the request never completed).
    const ended = (request: HttpServerRequest.HttpServerRequest, context: Context.Context<never>) => {
      const restore = FiberRef.set(FiberRef.currentContext, context)
      return (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>) =>
        (Exit.isFailure(exit) && HashSet.has(Cause.interruptors(exit.cause), HttpServerError.clientAbortFiberId)) ||
          leftMidBody(request)
          ? Effect.zipRight(restore, Effect.sync(() => faults.countClientAbort(request)))
          : restore
    }
    // Without a fault configured the injector has nothing to draw (FaultInjection.enabled): no effect of its own, and
    // the pipeline ends the request in its own finalizer. The injector may answer, or be left, before the pipeline.
    const v1 = faults.enabled
      ? withFaults(faults.wrap(Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => pipeline.handle(request, run))), ended)
      : (request: HttpServerRequest.HttpServerRequest, context: Context.Context<never>) =>
        pipeline.handle(request, run, ended(request, context))
    const openApi = HttpServerResponse.uint8Array(options.openApi, { contentType: "application/json" })
    const app = Effect.withFiberRuntime<
      HttpServerResponse.HttpServerResponse,
      unknown,
      HttpServerRequest.HttpServerRequest | HttpRouter.HttpRouter.DefaultServices
    >((fiber) => {
      const context = fiber.currentContext
      const request = Context.get(context as Context.Context<HttpServerRequest.HttpServerRequest>, HttpServerRequest.HttpServerRequest)
      if (request.headers[SelfDelivery.deliveryHeader] !== undefined) return Effect.succeed(SelfDelivery.refusal())
      const queryAt = request.url.indexOf("?")
      const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt)
      if (path === "/openapi.json") return Effect.succeed(openApi)
      const page = options.pages.get(path)
      if (page !== undefined) return page
      if (path.startsWith("/_local/")) return local(request, path)
      faults.countRequest()
      return v1(request, context)
    }).pipe(
      // What escapes the contract's middleware (a failure of the pipeline or the fault injector) gets the envelope too.
      Effect.catchAllCause(envelope)
    )
    return Layer.scopedDiscard(Effect.flatMap(servingContext, (context) => {
      // Replaces the context (Effect.provide would merge it into the layer's whole context).
      const served = Effect.mapInputContext(HttpServer.serveEffect(app), (_: Context.Context<never>) => context)
      // A server span per request only when asked for, as on the fast path (LocalServiceConfig.requestTracing).
      return config.requestTracing ? served : HttpMiddleware.withTracerDisabledWhenEffect(served, () => true)
    }))
  })).pipe(Layer.provide(envelopeMiddleware))

/**
 * The context `HttpServer.serve` runs the app in: the server, the scope it serves for, and the platform's services
 * the router may read (HttpRouter.DefaultServices), nothing else. The app reads nothing else from it while it answers
 * (the pipeline and the fault injector hold their services from when they were built, the contract's groups theirs):
 * every request copies this context several times (the request, its scope, the caller, the route), so a context of
 * six services instead of the service's forty-odd makes each copy cheaper.
 */
const servingContext = Effect.map(
  Effect.context<HttpServer.HttpServer | Scope.Scope | HttpRouter.HttpRouter.DefaultServices>(),
  Context.pick(
    HttpServer.HttpServer,
    Scope.Scope,
    HttpPlatform.HttpPlatform,
    Etag.Generator,
    FileSystem.FileSystem,
    Path.Path
  )
)

/** `@effect/platform-node`'s `NodeHttpServer`, imported when the stock path is chosen. */
const nodeHttpServer = Effect.promise(() => import("@effect/platform-node/NodeHttpServer"))

/**
 * The stock serving path (`boxkit serve --server platform`): NodeListen.ts listens (what `NodeHttpServer.layerServer`
 * of `@effect/platform-node` does, shared with the fast path) and {@link layerHttp} answers through
 * `HttpServer.serve`, with the contract built on its own `HttpApiBuilder.Router` and
 * `NodeHttpServer.layerContext` (what `NodeHttpServer.layer` adds to the server). The module is imported when this
 * path is chosen: it loads the platform's undici client and `ws`, which the fast path does not need at start
 * (docs/decisions/0002-what-the-fast-paths-save.md).
 *
 * @since 0.1.0
 * @category Serving paths
 */
export const servingPath: ServingPath.ServingPath = {
  description: "Effect's HttpApiBuilder and HttpServer.serve",
  listen: (server, at) => NodeListen.layer(() => server, at),
  serve: (_server, routes) =>
    Layer.unwrapEffect(Effect.map(nodeHttpServer, (NodeHttpServer) =>
      layerHttp(routes).pipe(
        Layer.provide(routes.api),
        Layer.provide([HttpApiBuilder.Router.Live, NodeHttpServer.layerContext])
      )))
}
