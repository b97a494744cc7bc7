/**
 * The `HttpServer` of a Node `http.Server`, how both serving paths listen: listens on `host`:`port` when the layer
 * is built (port 0 picks a free port; `address` is the bound one) and closes the server with its scope, as
 * `NodeHttpServer.layerServer` does, without importing that module at start (it loads the platform's undici client
 * and `ws`, which `boxkit serve` does not need for its first answer). `serve(app)` attaches
 * `NodeHttpServer.makeHandler` (imported on first use) until its scope closes; WebSocket upgrades are not served.
 * Fails with `HttpServerError.ServeError` when the server cannot listen (e.g. the port is taken).
 *
 * Source: docs/decisions/0002-what-the-fast-paths-save.md (cold start); `@effect/platform-node` 0.108 `NodeHttpServer.make`.
 *
 * @since 0.1.0
 */
import { HttpServer, HttpServerError } from "@effect/platform"
import { Effect, Layer } from "effect"
import type { Server } from "node:http"
import type { ListenAt } from "./ServingPath.js"

/** Listens on `server` (made by `evaluate` when the layer is built) and closes it with the scope. */
export const make = (evaluate: () => Server, at: ListenAt) =>
  Effect.gen(function*() {
    const server = yield* Effect.acquireRelease(
      Effect.sync(evaluate),
      (server) =>
        Effect.async<void>((resume) => {
          if (!server.listening) return resume(Effect.void)
          server.close((error) => resume(error ? Effect.die(error) : Effect.void))
        })
    )
    yield* Effect.async<void, HttpServerError.ServeError>((resume) => {
      const onError = (cause: unknown) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
      server.on("error", onError)
      server.listen(at.port, at.host, () => {
        server.off("error", onError)
        resume(Effect.void)
      })
    })
    const address = server.address()
    return HttpServer.make({
      address: typeof address === "string" || address === null
        ? { _tag: "UnixAddress", path: address ?? "" }
        : { _tag: "TcpAddress", hostname: address.address === "::" ? "0.0.0.0" : address.address, port: address.port },
      serve: (httpApp, middleware) =>
        Effect.gen(function*() {
          const NodeHttpServer = yield* Effect.promise(() => import("@effect/platform-node/NodeHttpServer"))
          const handler = yield* NodeHttpServer.makeHandler(httpApp, middleware!)
          server.on("request", handler)
          yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", handler)))
        })
    })
  })

/** The `HttpServer` of {@link make} as a layer. */
export const layer = (evaluate: () => Server, at: ListenAt): Layer.Layer<HttpServer.HttpServer, HttpServerError.ServeError> =>
  Layer.scoped(HttpServer.HttpServer, make(evaluate, at))
