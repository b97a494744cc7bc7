/**
 * Every request has a `Scope` of its own on both serving paths, as `HttpServer.serve` gives it: without one, a
 * handler using `Effect.addFinalizer` answers 500 (docs/decisions/0002-what-the-fast-paths-save.md). A one-endpoint
 * contract whose handler adds a finalizer is served by the fast path (NodeHandler.ts over ContractRoutes.ts, the groups built with HandlerGroups.ts) and by
 * the stock path (PlatformServer.ts), behind the real request pipeline: both answer 200 and run the finalizer once
 * per request.
 */
import { describe, expect, it } from "@effect/vitest"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Ref, Schema } from "effect"
import { createServer } from "node:http"
import { Authorization } from "../../src/Contract/Api.js"
import { NodeHttpClient } from "@effect/platform-node"
import * as HandlerGroups from "../../src/Server/http/HandlerGroups.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as NodeHandler from "../../src/Server/http/fast/NodeHandler.js"
import * as NodeListen from "../../src/Server/http/NodeListen.js"
import * as PlatformServer from "../../src/Server/http/platform/PlatformServer.js"
import * as Harness from "../support/Harness.js"

class ProbeGroup extends HttpApiGroup.make("probe").add(
  HttpApiEndpoint.get("probe")`/probe`.addSuccess(Schema.Struct({ finalizersBefore: Schema.Number }))
) {}
class ProbeApi extends HttpApi.make("probe").add(ProbeGroup).middleware(Authorization).prefix("/v1") {}

/** Finalizers run so far. */
class Finalized extends Effect.Service<Finalized>()("test/Finalized", { effect: Ref.make(0) }) {}

const probeGroup = HandlerGroups.group(ProbeApi, "probe", (handlers) =>
  Effect.gen(function*() {
    const finalized = yield* Finalized
    return handlers.handle("probe", () =>
      Effect.gen(function*() {
        yield* Effect.addFinalizer(() => Ref.update(finalized, (count) => count + 1))
        return { finalizersBefore: yield* Ref.get(finalized) }
      }))
  }))

const probeApi = HttpApiBuilder.api(ProbeApi).pipe(Layer.provide([probeGroup, LocalService.authorizationLayer]))
const services = LocalService.layerServices(Harness.seed).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** The fast path over the probe contract, on a Node server of its own. */
const fast = Layer.scoped(HttpServer.HttpServer, Effect.gen(function*() {
  const server = createServer()
  const listener = yield* NodeHandler.make({ fixed: new Map(), pages: new Map(), prefix: "/_local/", app: () => Effect.dieMessage("unused") })
  server.on("request", listener)
  return yield* NodeListen.make(() => server, { host: "127.0.0.1", port: 0 })
})).pipe(Layer.provide(probeApi), Layer.provide([HttpApiBuilder.Router.Live, HandlerGroups.Registry.layer]))

const platform = PlatformServer.layerHttp({ openApi: new Uint8Array(), pages: new Map(), local: Effect.succeed(() => Effect.dieMessage("unused")) })
  .pipe(
    Layer.provide(probeApi),
    Layer.provide([HttpApiBuilder.Router.Live, HandlerGroups.Registry.layer]),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
  )

const probeTwice = Effect.gen(function*() {
  const address = yield* HttpServer.addressFormattedWith((origin) => Effect.succeed(origin))
  const get = () =>
    Effect.promise(async () => {
      const response = await fetch(`${address}/v1/probe`, { headers: { authorization: "Bearer sk_acme_org" } })
      return { status: response.status, body: await response.json() }
    })
  const first = yield* get()
  const second = yield* get()
  return { first, second, finalized: yield* Ref.get(yield* Finalized) }
})

describe("a Scope per request", () => {
  for (const [path, served] of [["fast", fast], ["stock", platform]] as const) {
    it.live(`the ${path} path runs a handler's finalizer at the end of each request`, () =>
      Effect.gen(function*() {
        const result = yield* probeTwice
        expect(result.first).toEqual({ status: 200, body: { finalizersBefore: 0 } })
        expect(result.second).toEqual({ status: 200, body: { finalizersBefore: 1 } })
        expect(result.finalized).toBe(2)
      }).pipe(Effect.provide(served.pipe(Layer.provideMerge(services), Layer.provideMerge(Finalized.Default)))))
  }
})
