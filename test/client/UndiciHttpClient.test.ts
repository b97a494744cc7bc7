/**
 * The toolkit's own undici `HttpClient` (UndiciHttpClient.ts) against a node:http server in the test: a request read
 * whole (`readWhole`) is sent as the platform's `NodeHttpClient.layerUndici` sends it (same request line for any path,
 * headers, body; the same again when a URL is sent a second time), its answer read the same way; it is aborted on
 * interruption and at a deadline (failing with the deadline's error as `cause`), propagates the trace context and
 * reuses connections. Any other request is the platform client's, which the deadline does not bound.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, FastCheck as fc, Fiber, Layer, Stream } from "effect"
import * as UndiciHttpClient from "../../src/Http/UndiciHttpClient.js"
import { fakeServer } from "../responses/support.js"

/** The lean client and the platform's, each with its own agent. */
const clients = Effect.gen(function*() {
  const lean = yield* Layer.build(UndiciHttpClient.layer)
  const platform = yield* Layer.build(NodeHttpClient.layerUndici)
  return { lean: HttpClient.HttpClient.of(lean.unsafeMap.get(HttpClient.HttpClient.key)), platform: HttpClient.HttpClient.of(platform.unsafeMap.get(HttpClient.HttpClient.key)) }
})

/** An echo server: answers 200 with the request line, headers and body it received, as JSON. */
const echo = fakeServer((request, response) => {
  response.writeHead(200, { "content-type": "application/json", "x-echo": "1" })
  response.end(JSON.stringify({ method: request.method, url: request.url, headers: request.headers, body: request.body }))
})

/** The parts of what a server received that any client sends the same way. */
const comparable = (echoed: any) => ({
  method: echoed.method,
  url: echoed.url,
  body: echoed.body,
  headers: Object.fromEntries(
    Object.entries(echoed.headers as Record<string, string>).filter(([name]) =>
      !["connection", "host", "traceparent", "b3", "user-agent", "accept-encoding", "accept", "accept-language",
        "sec-fetch-mode"].includes(name)
    )
  )
})

describe("UndiciHttpClient", () => {
  it.scoped("a request read whole is sent as NodeHttpClient.layerUndici sends it, for any path, query, headers and JSON body", () =>
    Effect.gen(function*() {
      const server = yield* echo
      const { lean, platform } = yield* clients
      const viaLeanWhole = (request: HttpClientRequest.HttpClientRequest) =>
        Effect.either(Effect.flatMap(lean.execute(UndiciHttpClient.readWhole(request)), (response) => response.json))
      const segment = fc.stringMatching(/^[A-Za-z0-9\-._~!$&'()*+,;=:@% /é^`{}|"<>\\?#]{0,12}$/)
      const samples = fc.sample(
        fc.record({
          path: fc.array(segment, { minLength: 1, maxLength: 4 }),
          query: fc.option(fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.string({ maxLength: 6 })), { nil: undefined }),
          header: fc.stringMatching(/^[\x20-\x7e]{0,20}$/),
          body: fc.jsonValue()
        }),
        { numRuns: 60, seed: 66 }
      )
      for (const sample of samples) {
        const request = HttpClientRequest.post(`${server.url}/${sample.path.join("/")}`).pipe(
          sample.query === undefined ? (r) => r : HttpClientRequest.setUrlParams(sample.query),
          HttpClientRequest.setHeader("x-sample", sample.header.trim()),
          HttpClientRequest.bodyUnsafeJson(sample.body)
        )
        const viaLean = yield* viaLeanWhole(request)
        const viaPlatform = yield* Effect.either(Effect.flatMap(platform.execute(request), (response) => response.json))
        expect(Either.isRight(viaLean), JSON.stringify(sample.path)).toBe(Either.isRight(viaPlatform))
        if (Either.isRight(viaLean) && Either.isRight(viaPlatform)) {
          expect(comparable(viaLean.right), JSON.stringify(sample)).toEqual(comparable(viaPlatform.right))
        }
        // Sent again: the URL's split is now remembered, and the request goes to the same place.
        const again = yield* viaLeanWhole(request)
        expect(Either.isRight(again)).toBe(Either.isRight(viaLean))
        if (Either.isRight(again) && Either.isRight(viaLean)) expect(comparable(again.right)).toEqual(comparable(viaLean.right))
      }
    }))

  it.scoped("reads answers read whole like the platform's client: status, headers, text, JSON, bytes, URL params, stream", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((request, response) => {
        response.writeHead(request.url === "/missing" ? 404 : 200, { "content-type": "text/plain", "set-cookie": "a=1" })
        response.end(request.url === "/params" ? "a=1&b=two" : "\uFEFFhello é")
      })
      const { lean } = yield* clients
      const get = (url: string) => lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(url)))
      const answer = yield* get(`${server.url}/text`)
      expect(answer.status).toBe(200)
      expect(answer.headers["content-type"]).toBe("text/plain")
      expect(answer.cookies.cookies.a?.value).toBe("1")
      expect(yield* answer.text).toBe("hello é")
      const bytes = yield* Effect.flatMap(get(`${server.url}/bytes`), (response) => response.arrayBuffer)
      expect(Buffer.from(bytes).toString("utf8")).toBe("\uFEFFhello é")
      const streamed = yield* Effect.flatMap(get(`${server.url}/stream`), (response) =>
        Stream.runCollect(response.stream))
      expect(Buffer.concat(Chunk.toArray(streamed)).toString("utf8")).toBe("\uFEFFhello é")
      const params = yield* Effect.flatMap(get(`${server.url}/params`), (response) => response.urlParamsBody)
      expect(params).toEqual([["a", "1"], ["b", "two"]])
      expect((yield* get(`${server.url}/missing`)).status).toBe(404)
      const invalid = yield* Effect.either(get("not a url"))
      expect(Either.isLeft(invalid) && invalid.left._tag === "RequestError" && invalid.left.reason).toBe("InvalidUrl")
    }))

  it.scoped("readWhole: the answer comes with its body read; every read then answers the same bytes", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((_, response) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end("{\"id\":\"x\",\"text\":\"é\"}")
      })
      const { lean } = yield* clients
      const answer = yield* lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(server.url)))
      expect(yield* answer.json).toEqual({ id: "x", text: "é" })
      expect(yield* answer.text).toBe("{\"id\":\"x\",\"text\":\"é\"}")
      expect(Buffer.from(yield* answer.arrayBuffer).toString("utf8")).toBe("{\"id\":\"x\",\"text\":\"é\"}")
      const chunks = yield* Stream.runCollect(answer.stream)
      expect(Buffer.concat(Chunk.toArray(chunks)).toString("utf8")).toBe("{\"id\":\"x\",\"text\":\"é\"}")
    }))

  it.scopedLive("readWhole: a deadline before the end fails the request with its error as cause; interruption closes the connection; a body cut off comes with its failure", () =>
    Effect.gen(function*() {
      let closed = 0
      const server = yield* fakeServer((request, response) => {
        response.on("close", () => closed++)
        if (request.url === "/slow-head" || request.url === "/hang") return
        if (request.url === "/ok") return void response.end("ok")
        if (request.url === "/cut") {
          response.writeHead(200, { "content-type": "application/json", "content-length": "100" })
          response.write("{\"partial\":")
          setTimeout(() => response.socket?.destroy(), 20)
          return
        }
        response.writeHead(200, { "content-type": "application/json" })
        response.write("{\"partial\":")
      })
      const { lean } = yield* clients
      const deadline = (millis: number) => ({ atMillis: Date.now() + millis, onExpire: () => `expired after ${millis} ms` })
      const whole = (path: string) => lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(`${server.url}${path}`)))
      // One exchange first, so that the deadlines below start with undici loaded and a connection open.
      yield* whole("/ok")
      yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => closed >= 1 }), Effect.timeout("20 seconds"))

      const head = yield* Effect.either(UndiciHttpClient.withDeadline(whole("/slow-head"), deadline(60)))
      expect(Either.isLeft(head) && head.left._tag === "RequestError" && head.left.cause).toBe("expired after 60 ms")
      const body = yield* Effect.either(UndiciHttpClient.withDeadline(whole("/slow-body"), deadline(60)))
      expect(Either.isLeft(body) && body.left._tag === "RequestError" && body.left.cause).toBe("expired after 60 ms")
      yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => closed >= 3 }), Effect.timeout("20 seconds"))
      expect(closed).toBe(3)

      const fiber = yield* Effect.fork(whole("/hang"))
      yield* Effect.sleep("20 millis").pipe(Effect.repeat({ until: () => server.received.some((r) => r.url === "/hang") }))
      yield* Fiber.interrupt(fiber)
      yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => closed >= 4 }), Effect.timeout("20 seconds"))
      expect(closed).toBe(4)

      const cut = yield* whole("/cut")
      expect(cut.status).toBe(200)
      const read = yield* Effect.either(cut.text)
      expect(Either.isLeft(read) && read.left._tag === "ResponseError" && read.left.reason).toBe("Decode")
    }))

  it.scopedLive("read whole: interrupting the caller while it waits closes the connection (the server sees it go)", () =>
    Effect.gen(function*() {
      let closed = 0
      const server = yield* fakeServer((_, response) => {
        response.on("close", () => closed++)
      })
      const { lean } = yield* clients
      const fiber = yield* Effect.fork(lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(server.url))))
      yield* Effect.sleep("50 millis").pipe(Effect.repeat({ until: () => server.received.length === 1 }))
      yield* Fiber.interrupt(fiber)
      yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => closed === 1 }), Effect.timeout("20 seconds"))
      expect(closed).toBe(1)
    }))

  it.scopedLive("a request not read whole is the platform client's, unbounded by the deadline; a deadline ends with withDeadline", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((_, response) => {
        response.writeHead(200, { "content-type": "text/plain" })
        response.write("partial")
        setTimeout(() => response.end(" rest"), 150)
      })
      const { lean } = yield* clients
      const deadline = (millis: number) => ({ atMillis: Date.now() + millis, onExpire: () => `expired after ${millis} ms` })
      const whole = lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(server.url)))

      const streamed = yield* UndiciHttpClient.withDeadline(
        Effect.flatMap(lean.get(server.url), (response) => Stream.runCollect(response.stream)),
        deadline(60)
      )
      expect(Buffer.concat(Chunk.toArray(streamed)).toString("utf8")).toBe("partial rest")

      const bounded = yield* Effect.either(UndiciHttpClient.withDeadline(whole, deadline(60)))
      expect(Either.isLeft(bounded) && bounded.left._tag === "RequestError" && bounded.left.cause).toBe("expired after 60 ms")

      // Outside withDeadline nothing is bounded: the previous deadline does not linger.
      expect(yield* Effect.flatMap(whole, (response) => response.text)).toBe("partial rest")
    }))

  it.scoped("read whole: inside a span, traceparent and b3 are sent; outside none", () =>
    Effect.gen(function*() {
      const server = yield* echo
      const { lean } = yield* clients
      const get = lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(server.url)))
      const plain = yield* Effect.flatMap(get, (response) => response.json) as Effect.Effect<any>
      expect(plain.headers.traceparent).toBeUndefined()
      const traced = yield* Effect.flatMap(get, (response) => response.json).pipe(
        Effect.withSpan("caller")
      ) as Effect.Effect<any>
      expect(traced.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      expect(traced.headers.b3).toMatch(/^[0-9a-f]{32}-[0-9a-f]{16}-1/)
    }))

  it.scopedLive("read whole: keeps connections alive, 200 sequential requests reuse their connection", () =>
    Effect.gen(function*() {
      const sockets = new Set<unknown>()
      const server = yield* fakeServer((_, response) => {
        response.end("ok")
      })
      // (undici does not reuse a connection whose server announces a keep-alive under 2 s; fakeServer's is 1 s.)
      server.server.keepAliveTimeout = 10_000
      server.server.on("connection", (socket) => sockets.add(socket))
      const { lean } = yield* clients
      const get = lean.execute(UndiciHttpClient.readWhole(HttpClientRequest.get(server.url)))
      for (let i = 0; i < 200; i++) expect(yield* Effect.flatMap(get, (r) => r.text)).toBe("ok")
      expect(sockets.size).toBeLessThanOrEqual(2)
    }))
})
