/**
 * What a serving path of the local service is (docs/decisions/0001-two-serving-paths.md): given Node's
 * `http.Server`, it listens (`listen`, the `HttpServer` of the service) and answers every request (`serve`): the
 * contract's `/v1` routes behind the fault injector and the request pipeline, `/openapi.json`, the pages beside `/v1`
 * and `/_local/*`, all from the {@link Routes} it is given. The stock path (src/Server/http/platform/) and the fast
 * path (src/Server/http/fast/) are the two; src/Server/ServingPaths.ts, the one module that names them, is the
 * {@link Registry} `LocalService.layerNode` and `boxkit serve --server` choose from.
 *
 * Neutral to every serving path: nothing here depends on one.
 *
 * @since 0.1.0
 */
import type {
  HttpApi,
  HttpApiBuilder,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import type { Effect, Layer } from "effect"
import type { Server } from "node:http"
import type { LocalServiceConfig } from "../LocalServiceConfig.js"
import type { FaultInjection } from "../pipeline/FaultInjection.js"
import type * as RequestPipeline from "../pipeline/RequestPipeline.js"

/**
 * Where to listen: `host` (an address or a name) and `port` (0: a free port).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ListenAt {
  readonly host: string
  readonly port: number
}

/**
 * The app of `/_local/*`: the request and its path without the query (LocalRoutes.ts).
 *
 * @since 0.1.0
 * @category Models
 */
export type LocalRoutes = (
  request: HttpServerRequest.HttpServerRequest,
  path: string
) => Effect.Effect<HttpServerResponse.HttpServerResponse>

/**
 * What a serving path serves. `api` is the contract with every group's handlers (built with `HandlerGroups.group`),
 * needing `HttpApiBuilder.Router` (which the serving path provides) and `R`; `openApi` the bytes of
 * `GET /openapi.json`; `pages` the pages answered without a key, by exact path (`/docs`); `local` the app of
 * `/_local/*` (a body read for it is at most 1 MiB).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Routes<R> {
  readonly api: Layer.Layer<HttpApi.Api, never, HttpApiBuilder.Router | R>
  readonly openApi: Uint8Array
  readonly pages: ReadonlyMap<string, Effect.Effect<HttpServerResponse.HttpServerResponse>>
  readonly local: Effect.Effect<LocalRoutes, never, R>
}

/**
 * The services of the local service a serving path may use besides those of its {@link Routes}: the settings, the
 * fault injector and what the request pipeline needs (`LocalService.layerServices` provides them all).
 *
 * @since 0.1.0
 * @category Models
 */
export type Services =
  | LocalServiceConfig
  | FaultInjection
  | Effect.Effect.Context<typeof RequestPipeline.make>

/**
 * One serving path. `listen(server, at)` is the service's `HttpServer`: it listens on `server` at `at` when built
 * and closes the server with its scope, failing with `HttpServerError.ServeError` when it cannot listen (e.g. the
 * port is taken). `serve(server, routes)` answers every request of `server` for as long as its scope is open.
 * `description` is one line for `boxkit serve --help`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ServingPath {
  readonly description: string
  readonly listen: (server: Server, at: ListenAt) => Layer.Layer<HttpServer.HttpServer, HttpServerError.ServeError>
  readonly serve: <R>(
    server: Server,
    routes: Routes<R>
  ) => Layer.Layer<never, never, R | Services | HttpServer.HttpServer>
}

/**
 * The serving paths to choose from, by name, and the one used when none is named (`defaultPath`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Registry<Name extends string> {
  readonly paths: { readonly [K in Name]: ServingPath }
  readonly defaultPath: Name
}
