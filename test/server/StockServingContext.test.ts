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
 * - an answer a handler registered with `HandlerGroups.encodeOnce` is encoded once, and a value that does not encode
 *   gets the answer `HttpApiBuilder` gives it.
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

/** How many times the success schema of `/v1/once` and `/v1/invalid` encoded a value. */
const encoded = { count: 0 }
/** A positive count, encoded as a string; counts its encodes. */
const Counted = Schema.transform(Schema.String, Schema.Number.pipe(Schema.positive()), {
  strict: true,
  decode: Number,
  encode: (value) => {
    encoded.count++
    return String(value)
  }
})

class ProbeGroup extends HttpApiGroup.make("probe").add(
  HttpApiEndpoint.get("probe")`/probe`.addSuccess(Schema.Struct({ ok: Schema.Boolean }))
).add(
  HttpApiEndpoint.get("once")`/once`.addSuccess(Schema.Struct({ count: Counted }))
).add(
  HttpApiEndpoint.get("invalid")`/invalid`.addSuccess(Schema.Struct({ count: Counted }))
) {}
class ProbeApi extends HttpApi.make("probe").add(ProbeGroup).middleware(Authorization).prefix("/v1") {}

/** The answer of `/v1/once`: the same object every time, registered with `HandlerGroups.encodeOnce`. */
const onceAnswer = HandlerGroups.encodeOnce({ count: 7 })

const probeGroup = HandlerGroups.group(ProbeApi, "probe", (handlers) =>
  handlers
    .handle("probe", () => Effect.succeed({ ok: true }))
    .handle("once", () => Effect.succeed(onceAnswer))
    .handle("invalid", () => Effect.succeed({ count: -1 })))
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
      // finalizer of the pipeline and one of the app's, a bearer of several steps and HttpApiBuilder's encoding of the
      // answer; about 200 without.
      expect((effectsRun.count - before) / answers).toBeLessThan(215)
    }).pipe(Effect.provide(stock(layer).pipe(Layer.provide(countingEffects))))
  })

  it.live("encodes an answer registered with encodeOnce once; a value that does not encode is answered as HttpApiBuilder does", () => {
    const { layer } = countingFaults(false)
    return Effect.gen(function*() {
      encoded.count = 0
      const answers = yield* Effect.all([get("/v1/once"), get("/v1/once"), get("/v1/once")])
      expect(answers).toEqual(Array.from({ length: 3 }, () => ({ status: 200, body: { count: "7" } })))
      expect(encoded.count).toBe(1)
      // HttpApiBuilder fails to encode it (a decode error of the answer): the envelope's 400, as without the answer kept.
      const invalid = yield* get("/v1/invalid")
      expect(invalid.status).toBe(400)
      expect((invalid.body as { error: { type: string } }).error.type).toBe("invalid_request_error")
    }).pipe(Effect.provide(stock(layer)))
  })
})
