/**
 * The request pipeline hands the contract the caller and the body one way, whichever serving path runs it: the
 * caller as `Principal` in the request's context (read there by the contract's `Authorization` middleware), the body
 * read once from Node's request by RequestBody.ts and held by `BufferedRequest`. Driven here as the stock path runs
 * it: `RequestPipeline.middleware` behind `HttpServer.serve` on a Node server (docs/decisions/0001-two-serving-paths.md).
 */
import { HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Ref } from "effect"
import { createServer } from "node:http"
import { Principal } from "../../src/Contract/Principal.js"
import * as NodeListen from "../../src/Server/http/NodeListen.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import * as Admission from "../../src/Server/pipeline/Admission.js"
import * as Idempotency from "../../src/Server/pipeline/Idempotency.js"
import * as RequestBody from "../../src/Server/pipeline/RequestBody.js"
import * as RequestPipeline from "../../src/Server/pipeline/RequestPipeline.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Transactions from "../../src/Server/state/Transactions.js"
import * as Harness from "../support/Harness.js"

const services = Layer.mergeAll(
  Layer.effectDiscard(LocalService.applySeed(Harness.seed)).pipe(Layer.provideMerge(MemoryRepositories.layerMemory)),
  Admission.layer,
  Transactions.layerMemory,
  Idempotency.layerMemory
).pipe(Layer.provideMerge(LocalServiceConfig.layer()))

/** What the app behind the pipeline saw of one request. */
interface Seen {
  readonly buffered: boolean
  readonly keyId: string | undefined
  readonly body: unknown
}

describe("the request pipeline on the stock path", () => {
  it.live("hands the app the caller in its context and the body read once, in a BufferedRequest", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<Seen | undefined>(undefined)
      const pipeline = yield* RequestPipeline.middleware
      const app = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const principal = yield* Effect.serviceOption(Principal)
        const body = yield* request.json
        yield* Ref.set(seen, {
          buffered: request instanceof RequestBody.BufferedRequest,
          keyId: Option.getOrUndefined(principal)?.keyId,
          body
        })
        return HttpServerResponse.empty({ status: 204 })
      })
      const httpServer = yield* NodeListen.make(() => createServer(), { host: "127.0.0.1", port: 0 })
      yield* httpServer.serve(pipeline(app))
      const origin = HttpServer.formatAddress(httpServer.address)
      for (const chunked of [false, true]) {
        const text = JSON.stringify({ name: "one-way" })
        const body = chunked
          ? new ReadableStream({ start: (controller) => (controller.enqueue(new TextEncoder().encode(text)), controller.close()) })
          : text
        const status = yield* Effect.promise(() =>
          fetch(`${origin}/v1/apps/find`, {
            method: "POST",
            headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
            body,
            ...(chunked ? { duplex: "half" } : {})
          } as RequestInit).then((response) => response.status)
        )
        expect(status).toBe(204)
        const request = yield* Ref.getAndSet(seen, undefined)
        expect(request?.buffered).toBe(true)
        expect(request?.keyId).toEqual(expect.any(String))
        expect(request?.body).toEqual({ name: "one-way" })
      }
    }).pipe(Effect.provide(services), Effect.scoped))
})
