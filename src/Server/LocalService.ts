/**
 * The local box service: the contract's handlers, the request pipeline, the simulated runtime, the Responses engine,
 * webhooks and the inspection routes, composed into layers, and served over HTTP by one of the serving paths of
 * ServingPaths.ts (`fast`, the default, or `platform`; docs/decisions/0001-two-serving-paths.md), which listens on
 * the Node server made here and answers every request (a server span per request only with
 * `LocalServiceConfig.requestTracing`). This module names no serving path itself.
 *
 * Routes outside `/v1` (docs/ASSUMPTIONS.md): `GET /openapi.json` (the contract's OpenAPI document), `GET /docs`
 * (the API reference over it, DocsPage.ts),
 * `GET /_local/state` (the whole state as JSON, without secret values; `faults` counts injected faults and client
 * aborts, FaultInjection.ts) and `POST /_local/runtime`
 * (`{"guest_schema_version": N}` raises the current runtime version); the `/_local` routes answer only on the
 * loopback interface unless `exposeLocalRoutes` is set, and never to another site's page (LocalRouteGuard.ts).
 *
 * @since 0.1.0
 */
import { HttpApiBuilder, type HttpClient, HttpServer, type HttpServerError, type HttpServerResponse } from "@effect/platform"
import * as UndiciHttpClient from "../Http/UndiciHttpClient.js"
import { Clock, Context, Duration, Effect, FiberRef, Layer, Option, Redacted, Schema } from "effect"
import { createServer, type Server } from "node:http"
import * as ApiError from "../ApiError.js"
import { Authorization, BoxServiceApi, openApiDocument } from "../Contract/Api.js"
import { Principal } from "../Contract/Principal.js"
import { normalize, PolicyDocument } from "../Domain/EgressPolicy.js"
import * as BoxRuntime from "./boxes/BoxRuntime.js"
import * as ServiceClock from "./clock/ServiceClock.js"
import * as DocsPage from "./http/DocsPage.js"
import * as ErrorResponse from "./http/ErrorResponse.js"
import * as RecentRequests from "./http/RecentRequests.js"
import * as FaultInjection from "./pipeline/FaultInjection.js"
import * as AppsHandlers from "./handlers/Apps.js"
import * as BoxesHandlers from "./handlers/Boxes.js"
import * as ClipboardHandlers from "./handlers/Clipboard.js"
import * as EgressPoliciesHandlers from "./handlers/EgressPolicies.js"
import * as ExecHandlers from "./handlers/Exec.js"
import * as ListenersHandlers from "./handlers/Listeners.js"
import * as ResponsesHandlers from "./handlers/Responses.js"
import * as SecretsHandlers from "./handlers/Secrets.js"
import * as LanguageModel from "./responses/LanguageModel.js"
import { defaults, LocalServiceConfig, type LocalServiceSettings } from "./LocalServiceConfig.js"
import * as StartingAnswer from "./http/StartingAnswer.js"
import type * as ServingPath from "./http/ServingPath.js"
import * as ServingPaths from "./ServingPaths.js"
import * as Repositories from "./state/Repositories.js"
import * as Admission from "./pipeline/Admission.js"
import * as ResponseEngine from "./responses/ResponseEngine.js"
import type * as Seed from "./state/Seed.js"
import type * as Snapshot from "./state/Snapshot.js"
import * as StateSnapshots from "./state/StateSnapshots.js"
import type { StoreError } from "./state/StoreError.js"
import type * as Transactions from "./state/Transactions.js"
import * as StateStore from "./state/StateStore.js"
import * as WebhookDelivery from "./responses/WebhookDelivery.js"

/**
 * The contract's bearer middleware: hands the caller to the handlers of the routes `HttpApiBuilder` runs. The caller
 * reaches the contract one way, as `Principal` in the request's context, put there by the request pipeline
 * (`RequestPipeline.withCaller` on the stock path, the Node handler's request context on the fast path) after it
 * authenticated the request; a route run without one fails with the 401 envelope.
 *
 * @since 0.1.0
 * @category Layers
 */
export const authorizationLayer = Layer.succeed(Authorization, {
  bearer: () => callerInContext
})

/** The caller in the request's context, or the 401; read in one step (the middleware runs it for every route). */
const callerInContext = Effect.withFiberRuntime<Context.Tag.Service<Principal>, ApiError.AuthenticationError>(
  (fiber) => {
    const provided = Context.getOption(fiber.currentContext, Principal)
    return Option.isSome(provided) ? Effect.succeed(provided.value) : Effect.fail(ApiError.make.authentication())
  }
)

/**
 * The contract with every group's handlers (`HttpApi.Api`, the groups built with `HandlerGroups.group`); the groups
 * register their routes in `HttpApiBuilder.Router`, which the serving path provides.
 *
 * @since 0.1.0
 * @category Layers
 */
export const apiLayer = HttpApiBuilder.api(BoxServiceApi).pipe(
  Layer.provide(
    Layer.mergeAll(
      AppsHandlers.layer,
      SecretsHandlers.layer,
      EgressPoliciesHandlers.layer,
      BoxesHandlers.layer,
      ExecHandlers.layer,
      ListenersHandlers.layer,
      ClipboardHandlers.layer,
      ResponsesHandlers.layer
    ).pipe(Layer.provide(authorizationLayer))
  )
)

/**
 * Loads a seed into the repositories. Organizations without `created_at` are created now. Fails with the state
 * store's `StoreError` (state/StoreError.ts) when a durable store fails.
 *
 * @since 0.1.0
 * @category Utils
 */
export const applySeed = (seed: Seed.Seed) =>
  Effect.gen(function*() {
    const identity = yield* Repositories.Identity
    const secrets = yield* Repositories.Secrets
    const policies = yield* Repositories.EgressPolicies
    const apps = yield* Repositories.Apps
    const now = yield* Clock.currentTimeMillis
    const iso = new Date(now).toISOString()
    for (const organization of seed.organizations) {
      yield* identity.addOrganization({
        id: organization.id,
        credits: organization.credits,
        createdAtMillis: organization.created_at !== undefined ? Date.parse(organization.created_at) : now
      })
    }
    for (const user of seed.users) yield* identity.addUser({ id: user.id, orgId: user.org_id, admin: user.admin })
    for (const key of seed.api_keys) {
      yield* identity.addKey(Redacted.make(key.key), { orgId: key.org_id ?? null, userId: key.user_id ?? null })
    }
    for (const secret of seed.secrets) yield* secrets.put(secret.org_id, secret.name, Redacted.make(secret.value), iso)
    for (const policy of seed.egress_policies) {
      const document = yield* Schema.decodeUnknown(PolicyDocument)(policy.document).pipe(Effect.orDie)
      yield* policies.insert({
        id: policy.id,
        orgId: policy.org_id,
        name: policy.name,
        document: normalize(document),
        createdAt: iso,
        updatedAt: iso
      })
    }
    for (const app of seed.apps) {
      yield* apps.findOrCreate(app.org_id, app.name, () => ({
        id: app.id,
        orgId: app.org_id,
        name: app.name,
        createdAt: Math.floor(now / 1000)
      }))
    }
  })

/**
 * What a new store starts with: a seed ({@link applySeed}), or a snapshot (Snapshot.ts), whose records are restored
 * under their own ids (StateSnapshots.ts `restore`). Fails with the state store's `StoreError` when a durable store
 * fails.
 *
 * @since 0.1.0
 * @category Utils
 */
export const applyStartingState = (
  start: Seed.Seed | Snapshot.Snapshot
): Effect.Effect<
  void,
  StoreError,
  Repositories.Repositories | StateSnapshots.SnapshotStore | Transactions.Transactions
> =>
  "version" in start ? Effect.asVoid(StateSnapshots.restore(start)) : applySeed(start)

export { type AppOptions, inspectState, localRoutes, localState } from "./http/LocalRoutes.js"
import { type AppOptions, localRoutes } from "./http/LocalRoutes.js"

/** The contract's OpenAPI document as JSON bytes, encoded once (`GET /openapi.json`). @since 0.1.0 @category Utils */
export const openApiJson = (): Uint8Array => new TextEncoder().encode(JSON.stringify(openApiDocument()))

/**
 * The pages beside `/v1` answered without a key, on both serving paths: `/docs` (DocsPage.ts).
 *
 * @since 0.1.0
 * @category Constants
 */
export const pages: ReadonlyMap<string, Effect.Effect<HttpServerResponse.HttpServerResponse>> = new Map([
  [DocsPage.path, DocsPage.response]
])

/**
 * What every serving path serves (`ServingPath.Routes`): the contract ({@link apiLayer}), `/openapi.json`
 * ({@link openApiJson}), the {@link pages} and `/_local/*` (see {@link localRoutes}).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const routes = (options: AppOptions = {}): ServingPath.Routes<
  | Exclude<Layer.Layer.Context<typeof apiLayer>, HttpApiBuilder.Router>
  | Effect.Effect.Context<ReturnType<typeof localRoutes>>
> => ({
  api: apiLayer,
  openApi: openApiJson(),
  pages,
  local: localRoutes(options)
})

/**
 * Options of the Responses area: the model behind it (default the deterministic local model; e.g.
 * `UpstreamModel.layerFromEnv(url)` for an OpenAI-compatible upstream) and webhook delivery options.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ResponsesOptions {
  readonly languageModel?: Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> | undefined
  readonly webhooks?: WebhookDelivery.DeliveryOptions | undefined
  /**
   * The repository services of the in-memory store (default: MemoryRepositories.ts `layerMemory`). Any
   * implementation of the same tags slots in; the seed is applied to it. Ignored when `state` is given.
   */
  readonly repositories?: Layer.Layer<Repositories.Repositories> | undefined
  /**
   * The whole state store (default in memory: `StateStore.layerMemory`); e.g. `SqlState.layerSqlite(directory)` or
   * `SqlState.layerPostgres(url)` for state that outlives the process. The seed is applied when the store is new.
   */
  readonly state?: Layer.Layer<StateStore.StateStore, StateStore.StateStoreError, LocalServiceConfig> | undefined
}

/**
 * Every service of the local box service, seeded, without the HTTP server. Needs an `HttpClient` for webhooks.
 * Background fibers (boots, lifetime checks, background responses, deliveries) live in the layer's scope, on the
 * service's clock (`settings.clock`; clock/ServiceClock.ts).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerServices = (
  seed: Seed.Seed | Snapshot.Snapshot,
  settings: Partial<LocalServiceSettings> = {},
  responses: ResponsesOptions = {}
) => {
  const clock = ServiceClock.makeClock(settings.clock ?? defaults.clock)
  return servicesOn(clock, seed, settings, responses).pipe(
    ServiceClock.onClock(clock),
    withoutSpansUnlessTraced(settings.requestTracing ?? defaults.requestTracing)
  )
}

/** A snapshot's clock offset resumed by the service's clock (ServiceClock.ts `resume`; nothing for a seed). */
const resumeClockOf = (start: Seed.Seed | Snapshot.Snapshot) =>
  "version" in start && start.clock !== undefined && start.clock.mode === "virtual"
    ? Effect.flatMap(ServiceClock.ServiceClock, (clock) => clock.resume(start.clock!.offset_seconds * 1000))
    : Effect.void

/** {@link layerServices} with the service's clock made by the caller (who runs the layer on it). */
const servicesOn = (
  clock: ServiceClock.VirtualClock | undefined,
  seed: Seed.Seed | Snapshot.Snapshot,
  settings: Partial<LocalServiceSettings>,
  responses: ResponsesOptions
) => {
  const config = LocalServiceConfig.layer(settings)
  const store = Layer.provide(responses.state ?? StateStore.layerMemory(responses.repositories), config)
  // The stored offset is read before anything else reads the clock (the seed's creation times included).
  const clocked = Layer.unwrapEffect(Effect.map(StateStore.StateLocation, (location) =>
    ServiceClock.layer(clock, { durable: location.durable }).pipe(
      Layer.mapError((error) => new StateStore.StateStoreError({ message: `Reading the clock: ${error.message}` }))
    ))).pipe(Layer.provideMerge(store))
  // The seed goes into a new store only: a store that has organizations keeps what it has (docs/ASSUMPTIONS.md).
  const repositories = Layer.effectDiscard(
    Effect.flatMap(StateStore.StateLocation, (location) =>
      location.fresh
        // A snapshot's virtual clock resumes its offset first, so that its records are read at its time.
        ? Effect.zipRight(resumeClockOf(seed), applyStartingState(seed))
        : Effect.void).pipe(
      // A store that fails while the seed goes in could not be prepared.
      Effect.catchTag("StoreError", (error) => new StateStore.StateStoreError({ message: `Seeding: ${error.message}` }))
    )
  ).pipe(Layer.provideMerge(clocked))
  const runtime = BoxRuntime.layer.pipe(Layer.provideMerge(repositories))
  const webhooks = WebhookDelivery.layer(responses.webhooks).pipe(Layer.provide(repositories))
  const engine = ResponseEngine.layer.pipe(
    Layer.provide([webhooks, responses.languageModel ?? LanguageModel.localLayer, repositories])
  )
  return Layer.mergeAll(
    runtime,
    engine,
    Admission.layer,
    FaultInjection.layer,
    RecentRequests.layer
  ).pipe(Layer.provideMerge(config))
}

/**
 * The Node HTTP server of the local service (created per build; `HttpServer` listens and closes it).
 *
 * @since 0.1.0
 * @category Services
 */
export class NodeServer extends Context.Tag("boxkit/server/NodeServer")<NodeServer, Server>() {}

/**
 * The name of a serving path (ServingPaths.ts; docs/decisions/0001-two-serving-paths.md): `fast` (the default)
 * answers through the service's own Node handler (src/Server/http/fast/); `platform` through
 * `HttpApiBuilder.httpApp` behind `HttpServer.serve` (src/Server/http/platform/PlatformServer.ts).
 *
 * @since 0.1.0
 * @category Models
 */
export type ServerKind = ServingPaths.Name

/**
 * Where to listen (port 0 picks a free port) and which serving path answers (default: ServingPaths.ts's
 * `defaultPath`, `fast`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ListenOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly server?: ServerKind | undefined
}

/**
 * The Node HTTP server of the local service, answering malformed HTTP with the envelope, and 503 with `Retry-After`
 * until a serving path attaches its handler (StartingAnswer.ts). A client has
 * `requestTimeout` to send a request's headers and body (its headers within 10 s at most), checked every second: a
 * slow client cannot hold an organization's in-flight cap or a drain.
 */
const makeNodeServer = (settings: Partial<LocalServiceSettings> = {}) => () => {
  const requestTimeout = Duration.toMillis(settings.requestTimeout ?? defaults.requestTimeout)
  return StartingAnswer.answerWhileStarting(ErrorResponse.withEnvelopeOnClientError(createServer({
    requestTimeout,
    headersTimeout: Math.min(10_000, requestTimeout),
    connectionsCheckingInterval: 1000
  })))
}

/**
 * The complete local service on Node: HTTP server on `host`:`port` (default 127.0.0.1, port 0), answered by the
 * `server` path (default `fast`; ServingPaths.ts), webhooks over undici, every service seeded from `seed` (a seed
 * or a snapshot: {@link applyStartingState}). Its `HttpServer` is in the output, so its address can be read. Fails
 * with `ServeError` when it cannot listen.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerNode = (
  seed: Seed.Seed | Snapshot.Snapshot,
  options: ListenOptions & AppOptions & ResponsesOptions & { readonly settings?: Partial<LocalServiceSettings> | undefined } = {}
): Layer.Layer<
  HttpServer.HttpServer | NodeServer | Layer.Layer.Success<ReturnType<typeof layerServices>>,
  HttpServerError.ServeError | StateStore.StateStoreError
> => {
  const at = { host: options.host ?? "127.0.0.1", port: options.port ?? 0 }
  const clock = ServiceClock.makeClock(options.settings?.clock ?? defaults.clock)
  const services = servicesOn(clock, seed, options.settings ?? {}, options)
  const nodeServer = Layer.sync(NodeServer, makeNodeServer(options.settings))
  // The inspection page's recent requests, from the Node server's own events: the same on both serving paths.
  const recording = Layer.scopedDiscard(Effect.flatMap(NodeServer, RecentRequests.recordFrom))
  const path: ServingPath.ServingPath = ServingPaths.registry.paths[options.server ?? ServingPaths.registry.defaultPath]
  const serving = Layer.unwrapEffect(Effect.map(NodeServer, (server) => path.serve(server, routes(options))))
  const listening = Layer.unwrapEffect(Effect.map(NodeServer, (server) => path.listen(server, at)))
  return Layer.merge(serving, recording).pipe(
    Layer.provideMerge(services),
    Layer.provideMerge(listening),
    Layer.provideMerge(nodeServer),
    // Webhooks and the upstream model over the toolkit's lean undici HttpClient (connections reused, no per-request span).
    Layer.provide(UndiciHttpClient.layer),
    // Every fiber of the service, its requests' included, on the service's clock.
    ServiceClock.onClock(clock),
    withoutSpansUnlessTraced(options.settings?.requestTracing ?? defaults.requestTracing)
  )
}

/**
 * With request tracing off (`LocalServiceConfig.requestTracing`, the default), every fiber of the service runs with
 * the tracer disabled: no span of a request's handlers, statements or webhook deliveries either (each costs CPU even
 * without an exporter), where a lone inner span without its request's span would say little. With it on, the tracer
 * in context records them all under each request's `http.server` span (docs/ASSUMPTIONS.md).
 */
const withoutSpansUnlessTraced = (traced: boolean) => <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  traced ? layer : Layer.locally(layer, FiberRef.currentTracerEnabled, false)

/** The base URL (`http://HOST:PORT/v1`) of the `HttpServer` in context. @since 0.1.0 @category Utils */
export const baseUrl = HttpServer.addressFormattedWith((address) => Effect.succeed(`${address}/v1`))
