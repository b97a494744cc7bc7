/**
 * The fast serving path as a `ServingPath` (src/Server/http/ServingPath.ts): NodeListen.ts listens, NodeHandler.ts
 * answers every request (the contract's routes compiled by ContractRoutes.ts from the groups `HandlerGroups.group`
 * records, behind the request pipeline), with `/openapi.json` written from bytes encoded once.
 *
 * The only module outside this folder that imports it is src/Server/ServingPaths.ts: deleting the folder and
 * that module's `fast` entry (src/Server/ServingPathsStock.ts is that variant) leaves the stock path working
 * (test/server/FastPathRemovable.test.ts).
 *
 * Source: docs/decisions/0001-two-serving-paths.md; docs/decisions/0002-what-the-fast-paths-save.md.
 *
 * @since 0.1.0
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import type { Server } from "node:http"
import * as HandlerGroups from "../HandlerGroups.js"
import type * as ServingPath from "../ServingPath.js"
import * as NodeHandler from "./NodeHandler.js"
import * as NodeListen from "../NodeListen.js"

/**
 * Answers every request of `server` through NodeHandler.ts for as long as the layer's scope is open: the contract
 * (`routes.api`, built with its own `HttpApiBuilder.Router` and `HandlerGroups.Registry`) and beside it
 * `/openapi.json` (fixed bytes), the pages and `/_local/*`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = <R>(server: Server, routes: ServingPath.Routes<R>) =>
  Layer.scopedDiscard(
    Effect.gen(function*() {
      const listener = yield* NodeHandler.make({
        fixed: new Map([["/openapi.json", { body: routes.openApi, contentType: "application/json" }]]),
        pages: routes.pages,
        prefix: "/_local/",
        app: yield* routes.local
      })
      server.on("request", listener)
      yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", listener)))
    })
  ).pipe(
    Layer.provide(routes.api),
    Layer.provide([HttpApiBuilder.Router.Live, HandlerGroups.Registry.layer])
  )

/**
 * The fast serving path (`boxkit serve --server fast`).
 *
 * @since 0.1.0
 * @category Serving paths
 */
export const servingPath: ServingPath.ServingPath = {
  description: "the service's own Node handler",
  listen: (server, at) => NodeListen.layer(() => server, at),
  serve: layer
}
