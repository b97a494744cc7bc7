/**
 * How the local service serves requests (docs/ASSUMPTIONS.md "Serving (local service)"): boots wait in one queue
 * and happen after the boot delay on the service's clock; a request whose client leaves while its body arrives is
 * counted out and as a client abort; no fault injector runs without faults; every operation of the contract but the
 * Responses group runs compiled; the service's own `HttpServer` listens, serves an app and closes. (The tokenizer's
 * loading: TokenizerLoading.test.ts.)
 */
import { HttpApiBuilder, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, TestClock } from "effect"
import * as http from "node:http"
import * as ContractRoutes from "../../src/Server/http/fast/ContractRoutes.js"
import * as HandlerGroups from "../../src/Server/http/HandlerGroups.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as NodeListen from "../../src/Server/http/NodeListen.js"
import { noFaults } from "../../src/Server/LocalServiceConfig.js"
import * as Routes from "../../src/Server/http/Routes.js"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"

describe.each(Harness.variants())("boots ($name)", (variant) => {
  it.effect("boxes boot in order, each after the boot delay from its creation, on the service's clock", () =>
    C.withServiceOn(variant, { bootDelay: Duration.millis(150) })(Effect.gen(function*() {
      const first = yield* C.createBox({ name: "first" })
      yield* TestClock.adjust("100 millis")
      const second = yield* C.createBox({ name: "second" })
      const failing = yield* C.createBox({ name: "failing", image: { base: "boxkit/fail-to-start" } })
      const statuses = Effect.map(C.state, (state) =>
        [first, second, failing].map((id) => state.boxes.find((box: any) => box.id === id).status))
      expect(yield* statuses).toEqual(["creating", "creating", "creating"])
      yield* TestClock.adjust("60 millis")
      expect(yield* statuses).toEqual(["running", "creating", "creating"])
      yield* TestClock.adjust("100 millis")
      expect(yield* statuses).toEqual(["running", "running", "failed"])
      const later = yield* C.createBox({ name: "later" })
      yield* TestClock.adjust("150 millis")
      expect((yield* C.boxState(later)).status).toBe("running")
    })))
})

/** `GET /_local/state` (with the fault counts), polled on real time until `done` holds (at most 5 s). */
const localStateWhen = (done: (state: any) => boolean) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const state = (yield* Harness.fetchRaw("/_local/state")).json
      if (done(state)) return state
      if (Date.now() - started > 5000) return yield* Effect.dieMessage(`state not reached: ${JSON.stringify(state.faults)}`)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
  })

describe.each(Harness.variants())("a client that leaves while its body arrives ($name)", (variant) => {
  it.effect("is counted out of the requests in flight and counted as a client abort", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const base = new URL((yield* LocalService.baseUrl).replace(/\/v1$/, ""))
      const request = http.request({
        host: base.hostname,
        port: base.port,
        path: "/v1/boxes",
        method: "POST",
        headers: { ...C.auth(), "content-length": 100 }
      })
      request.on("error", () => {})
      request.flushHeaders()
      request.write("{\"name\":")
      yield* Effect.gen(function*() {
        const held = yield* localStateWhen((state) => state.in_flight === 1)
        expect(held.faults.client_aborts).toBe(0)
        request.destroy()
        const after = yield* localStateWhen((state) => state.in_flight === 0 && state.faults.client_aborts === 1)
        expect(after.boxes).toEqual([])
        expect(after.faults.requests).toBe(1)
      }).pipe(Effect.ensuring(Effect.sync(() => request.destroy())))
    })))
})

describe("fault injection", () => {
  it("is enabled only when some fault can be drawn or a latency is set", () => {
    expect(FaultInjection.isEnabled(noFaults)).toBe(false)
    expect(FaultInjection.isEnabled(FaultInjection.settings({ rates: { "503": 0.1 } }))).toBe(true)
    expect(FaultInjection.isEnabled(FaultInjection.settings({ latency: "1 millis" }))).toBe(true)
  })
})

describe("the contract's routes", () => {
  it.effect("every operation runs compiled, the Responses group's too (several success schemas)", () =>
    Effect.gen(function*() {
      const contract = yield* ContractRoutes.routes
      const compiled = contract.routes.map((route) => `${route.method} ${route.name}`).sort()
      expect(compiled).toEqual(Routes.routes.map((route) => `${route.method} ${route.name}`).sort())
    }).pipe(
      Effect.provide(
        Layer.provideMerge(LocalService.apiLayer, Layer.merge(HttpApiBuilder.Router.Live, HandlerGroups.Registry.layer)).pipe(
          Layer.provideMerge(LocalService.layerServices(Harness.seed)),
          Layer.provide(NodeHttpClient.layerUndici)
        )
      ),
      Effect.scoped
    ))
})

describe("NodeListen", () => {
  it.live("listens on a free port, serves an app through the platform's handler, and closes with its scope", () =>
    Effect.gen(function*() {
      const server = http.createServer()
      const origin = yield* Effect.scoped(Effect.gen(function*() {
        const httpServer = yield* NodeListen.make(() => server, { host: "127.0.0.1", port: 0 })
        expect(httpServer.address._tag).toBe("TcpAddress")
        yield* httpServer.serve(HttpServerResponse.text("served"))
        const origin = HttpServer.formatAddress(httpServer.address)
        const answer = yield* Effect.promise(() => fetch(origin).then(async (response) => [response.status, await response.text()]))
        expect(answer).toEqual([200, "served"])
        return origin
      }))
      expect(server.listening).toBe(false)
      expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    }))

  it.live("fails with ServeError when the port is taken", () =>
    Effect.gen(function*() {
      const taken = yield* Effect.acquireRelease(
        Effect.async<http.Server>((resume) => {
          const server = http.createServer().listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.sync(() => server.close())
      )
      const port = (taken.address() as { port: number }).port
      const error = yield* Effect.flip(Effect.scoped(NodeListen.make(() => http.createServer(), { host: "127.0.0.1", port })))
      expect(error._tag).toBe("ServeError")
    }).pipe(Effect.scoped))
})
