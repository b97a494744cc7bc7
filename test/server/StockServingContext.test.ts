/**
 * What the stock serving path (PlatformServer.ts) runs per `/v1` request beyond the contract, kept small because the
 * stock path pays for every effect and every copy of the request's context (docs/decisions/0001-two-serving-paths.md;
 * BENCHMARKS.md, the stock path's budget):
 * - the app answers in a context of the serving services only (the server, its scope, the platform's services and the
 *   request), not the local service's forty-odd, which every request would copy several times;
 * - with no fault configured the fault injector's `wrap` is not run (FaultInjection.enabled), as on the fast path;
 *   with one configured it is;
 * - the effects one request runs stay few: the caller's context is set in one step and set back in the pipeline's
 *   own finalizer, not in an `Effect.locally` of its own, and the contract's bearer reads the caller in one step
 *   (counted with a supervisor of every effect the service's fibers run);
 * A small contract behind the real request pipeline; `/_local/*` answers with the keys of its context.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer, RuntimeFlags, Schema, Supervisor } from "effect"
import { createServer } from "node:http"
import { Authorization } from "../../src/Contract/Api.js"
import * as HandlerGroups from "../../src/Server/http/HandlerGroups.js"
import * as PlatformServer from "../../src/Server/http/platform/PlatformServer.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import { FaultInjection } from "../../src/Server/pipeline/FaultInjection.js"
import * as Harness from "../support/Harness.js"

class ProbeGroup extends HttpApiGroup.make("probe").add(
  HttpApiEndpoint.get("probe")`/probe`.addSuccess(Schema.Struct({ ok: Schema.Boolean }))
) {}
class ProbeApi extends HttpApi.make("probe").add(ProbeGroup).middleware(Authorization).prefix("/v1") {}

const probeGroup = HandlerGroups.group(ProbeApi, "probe", (handlers) =>
  handlers.handle("probe", () => Effect.succeed({ ok: true })))
const probeApi = HttpApiBuilder.api(ProbeApi).pipe(Layer.provide([probeGroup, LocalService.authorizationLayer]))
const services = LocalService.layerServices(Harness.seed).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** A fault injector that injects nothing and counts the apps it was asked to wrap. */
const countingFaults = (enabled: boolean) => {
  const wrapped = { count: 0 }
  const layer = Layer.effect(
    FaultInjection,
    Effect.map(FaultInjection, (faults) => ({
      ...faults,
      enabled,
      wrap: <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) => {
        wrapped.count++
        return app
      }
    }))
  ).pipe(Layer.provide(services))
  return { wrapped, layer }
}

/** `/_local/*` here: the keys of the context the stock path runs the request in. */
const contextKeys = Effect.succeed(() =>
  Effect.map(Effect.context<never>(), (context) => HttpServerResponse.unsafeJson([...context.unsafeMap.keys()]))
)

/** The stock path over the probe contract, with the fault injector `faults`. */
const stock = <E>(faults: Layer.Layer<FaultInjection, E>) =>
  PlatformServer.layerHttp({ openApi: new Uint8Array(), pages: new Map(), local: contextKeys }).pipe(
    Layer.provide(probeApi),
    Layer.provide([HttpApiBuilder.Router.Live, HandlerGroups.Registry.layer, faults]),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(services)
  )

/** The effects run by the fibers of the service while it is installed (RuntimeFlags.OpSupervision). */
const effectsRun = { count: 0 }
class CountingSupervisor extends Supervisor.AbstractSupervisor<void> {
  get value() {
    return Effect.void
  }
  override onEffect() {
    effectsRun.count++
  }
}
const countingEffects = Layer.mergeAll(Supervisor.addSupervisor(new CountingSupervisor()), RuntimeFlags.enableOpSupervision)

const get = (path: string) =>
  Effect.flatMap(HttpServer.addressFormattedWith((origin) => Effect.succeed(origin)), (origin) =>
    Effect.promise(async () => {
      const response = await fetch(`${origin}${path}`, { headers: { authorization: "Bearer sk_acme_org" } })
      return { status: response.status, body: await response.json() as unknown }
    }))

describe("the stock path per request", () => {
  it.live("answers in a context of the serving services only, not every service of the local service", () => {
    const { layer } = countingFaults(false)
    return Effect.gen(function*() {
      const answer = yield* get("/_local/context")
      expect(answer.status).toBe(200)
      const keys = answer.body as ReadonlyArray<string>
      expect(keys).toContain(HttpServerRequest.HttpServerRequest.key)
      expect(keys).not.toContain(LocalServiceConfig.key)
      expect(keys).not.toContain(FaultInjection.key)
      // The service's own context holds them: the request's is smaller.
      const serviceContext = yield* Effect.context<LocalServiceConfig>()
      expect(Context.getOption(serviceContext, LocalServiceConfig)._tag).toBe("Some")
      expect(keys.length).toBeLessThan(serviceContext.unsafeMap.size)
      // The contract still reads what it needs (its groups hold their own services; the caller from the pipeline).
      expect(yield* get("/v1/probe")).toEqual({ status: 200, body: { ok: true } })
    }).pipe(Effect.provide(stock(layer)))
  })

  it.live("runs the fault injector's wrap only when a fault is configured", () =>
    Effect.gen(function*() {
      for (const enabled of [false, true]) {
        const { layer, wrapped } = countingFaults(enabled)
        const answers = yield* Effect.all([get("/v1/probe"), get("/v1/probe")]).pipe(Effect.provide(stock(layer)))
        expect(answers).toEqual([{ status: 200, body: { ok: true } }, { status: 200, body: { ok: true } }])
        expect(wrapped.count).toBe(enabled ? 1 : 0)
      }
    }))

  it.live("runs few effects per request: the caller's context set and set back without an acquire-use-release", () => {
    const { layer } = countingFaults(false)
    return Effect.gen(function*() {
      const answers = 20
      yield* get("/v1/probe")
      const before = effectsRun.count
      for (let index = 0; index < answers; index++) yield* get("/v1/probe")
      // Each request's fiber and this test's fetch: about 245 a request with an Effect.locally for the caller, a
      // finalizer of the pipeline and one of the app's and a bearer of several steps; about 210 without.
      expect((effectsRun.count - before) / answers).toBeLessThan(215)
    }).pipe(Effect.provide(stock(layer).pipe(Layer.provide(countingEffects))))
  })
})
