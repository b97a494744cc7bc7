/**
 * The client toolkit's completion-webhook receiver on its own: Bearer check (401), Model response decoding (400),
 * de-duplication by response id with a pluggable store, 2xx only after the handler accepted, 409 while the same id is
 * being handled, the Stream variant, the in-memory store's expiry (TestClock), and no request span unless asked for.
 */
import { describe, expect, it } from "@effect/vitest"
import { HttpIncomingMessage, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Chunk, Context, Deferred, Duration, Effect, Fiber, Layer, Option, Redacted, Stream, TestClock, Tracer } from "effect"
import { createServer } from "node:http"
import * as WebhookReceiver from "../../src/Client/WebhookReceiver.js"

const completion = (id: string, status = "completed") =>
  JSON.stringify({ id, object: "response", created_at: 1, status, model: "m", output: [], metadata: {} })

const post = (url: string, body: string, authorization?: string) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization !== undefined ? { authorization } : {}) },
      body
    })
    return { status: response.status, json: await response.json().catch(() => undefined) }
  })

const receiver = <E>(options: WebhookReceiver.ReceiverOptions<E, never> & WebhookReceiver.ServeOptions) =>
  Effect.map(Layer.build(WebhookReceiver.layer(options)), (context) => Context.get(context, WebhookReceiver.WebhookReceiverUrl))

describe("WebhookReceiver", () => {
  it.live("makes no http.server span per request by default; requestSpans: true makes one", () =>
    Effect.gen(function*() {
      const names: Array<string> = []
      const base = yield* Effect.tracer
      const tracer = Tracer.make({
        span: (...args) => {
          names.push(args[0])
          return base.span(...args)
        },
        context: base.context
      })
      const spansOf = (requestSpans: boolean | undefined) =>
        Effect.scoped(Effect.gen(function*() {
          names.length = 0
          const url = yield* receiver({ handler: () => Effect.void, ...(requestSpans === undefined ? {} : { requestSpans }) })
          expect((yield* post(url, completion(`resp_span_${requestSpans}`))).status).toBe(200)
          return names.filter((name) => name.startsWith("http.server")).length
        })).pipe(Effect.withTracer(tracer))
      expect(yield* spansOf(undefined)).toBe(0)
      expect(yield* spansOf(false)).toBe(0)
      expect(yield* spansOf(true)).toBe(1)
    }))

  it.live("401 without the right Bearer token (missing, wrong, other scheme); 200 with it", () =>
    Effect.scoped(Effect.gen(function*() {
      const handed: Array<string> = []
      const url = yield* receiver({
        token: Redacted.make("whk_right"),
        handler: (response) => Effect.sync(() => void handed.push(response.id))
      })
      expect((yield* post(url, completion("resp_1"))).status).toBe(401)
      expect((yield* post(url, completion("resp_1"), "Bearer whk_wrong")).status).toBe(401)
      expect((yield* post(url, completion("resp_1"), "Bearer whk_righ")).status).toBe(401)
      expect((yield* post(url, completion("resp_1"), "Basic whk_right")).status).toBe(401)
      expect(handed).toEqual([])
      const ok = yield* post(url, completion("resp_1"), "Bearer whk_right")
      expect(ok).toEqual({ status: 200, json: { received: true, duplicate: false } })
      expect(handed).toEqual(["resp_1"])
    })))

  it("tokenMatches compares in constant time and needs the exact token", () => {
    const token = Redacted.make("abc123")
    expect(WebhookReceiver.tokenMatches("Bearer abc123", token)).toBe(true)
    expect(WebhookReceiver.tokenMatches("bearer  abc123", token)).toBe(true)
    expect(WebhookReceiver.tokenMatches("Bearer abc1234", token)).toBe(false)
    expect(WebhookReceiver.tokenMatches("Bearer abc12", token)).toBe(false)
    expect(WebhookReceiver.tokenMatches(undefined, token)).toBe(false)
    expect(WebhookReceiver.tokenMatches("abc123", token)).toBe(false)
  })

  it.live("400 for a body that is not a Model response; 405 for other methods", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* receiver({ handler: () => Effect.void })
      expect((yield* post(url, "{\"hello\": 1}")).status).toBe(400)
      expect((yield* post(url, "not json")).status).toBe(400)
      expect((yield* post(url, completion("resp_x", "exploded"))).status).toBe(400)
      const get = yield* Effect.promise(() => fetch(url))
      expect(get.status).toBe(405)
      // An empty body is JSON null: not a Model response either.
      expect((yield* post(url, "")).status).toBe(400)
    })))

  it.live("a body past the server's MaxBodySize is never handed over (refused or cut off); one within it is", () =>
    Effect.scoped(Effect.gen(function*() {
      const handed: Array<string> = []
      const app = yield* WebhookReceiver.makeHttpApp({ handler: (response) => Effect.sync(() => void handed.push(response.id)) })
      const body = completion("resp_big")
      const serveWithLimit = (bytes: number) =>
        Effect.gen(function*() {
          const context = yield* Layer.build(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
          yield* WebhookReceiver.serve(HttpIncomingMessage.withMaxBodySize(app, Option.some(bytes))).pipe(Effect.provide(context))
          return yield* HttpServer.addressFormattedWith((address) => Effect.succeed(`${address}/webhooks`)).pipe(
            Effect.provide(context)
          )
        })
      const small = yield* serveWithLimit(body.length - 1)
      // The answer's status, or 0 when the connection was cut off before one.
      const refused = yield* Effect.promise(() =>
        fetch(small, { method: "POST", headers: { "content-type": "application/json" }, body }).then(
          (response) => response.status,
          () => 0
        )
      )
      expect(refused === 0 || refused >= 400).toBe(true)
      expect(handed).toEqual([])
      const large = yield* serveWithLimit(body.length)
      expect((yield* post(large, body)).status).toBe(200)
      expect(handed).toEqual(["resp_big"])
    })))

  it.live("each completion is handed over once; a failing handler answers 500 so the sender redelivers", () =>
    Effect.scoped(Effect.gen(function*() {
      let calls = 0
      const handed: Array<string> = []
      const url = yield* receiver({
        handler: (response) =>
          Effect.suspend(() => {
            calls++
            if (calls === 1) return Effect.fail("database down")
            handed.push(`${response.id}:${response.status}`)
            return Effect.void
          })
      })
      expect((yield* post(url, completion("resp_2", "incomplete"))).status).toBe(500)
      expect(handed).toEqual([])
      expect((yield* post(url, completion("resp_2", "incomplete"))).json).toEqual({ received: true, duplicate: false })
      expect((yield* post(url, completion("resp_2", "incomplete"))).json).toEqual({ received: true, duplicate: true })
      expect(handed).toEqual(["resp_2:incomplete"])
      expect(calls).toBe(2)
    })))

  it.live("a second delivery of an id being handled gets 409 (retry later), never a second hand-over", () =>
    Effect.scoped(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const started = yield* Deferred.make<void>()
      let calls = 0
      const url = yield* receiver({
        handler: () =>
          Effect.suspend(() => {
            calls++
            return Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
          })
      })
      const first = yield* Effect.fork(post(url, completion("resp_3")))
      yield* Deferred.await(started)
      expect((yield* post(url, completion("resp_3"))).status).toBe(409)
      yield* Deferred.succeed(gate, undefined)
      expect((yield* Fiber.join(first)).status).toBe(200)
      expect(calls).toBe(1)
    })))

  it.live("a pluggable store decides what was seen", () =>
    Effect.scoped(Effect.gen(function*() {
      const seen = new Set<string>(["resp_known"])
      const store: WebhookReceiver.DeduplicationStore = {
        seen: (id) => Effect.sync(() => seen.has(id)),
        remember: (id) => Effect.sync(() => void seen.add(id))
      }
      const handed: Array<string> = []
      const url = yield* receiver({ store, handler: (response) => Effect.sync(() => void handed.push(response.id)) })
      expect((yield* post(url, completion("resp_known"))).json.duplicate).toBe(true)
      expect((yield* post(url, completion("resp_new"))).json.duplicate).toBe(false)
      expect(handed).toEqual(["resp_new"])
      expect(seen.has("resp_new")).toBe(true)
    })))

  it.live("the Stream variant offers each completion once", () =>
    Effect.scoped(Effect.gen(function*() {
      const { completions, url } = yield* WebhookReceiver.stream({ token: Redacted.make("t") })
      for (const id of ["resp_a", "resp_b", "resp_a", "resp_c", "resp_b"]) {
        expect((yield* post(url, completion(id), "Bearer t")).status).toBe(200)
      }
      const got = yield* Stream.runCollect(Stream.take(completions, 3))
      expect(Chunk.toArray(got).map((response) => response.id)).toEqual(["resp_a", "resp_b", "resp_c"])
    })))

  it.effect("the in-memory store forgets ids after its ttl (default 2 hours)", () =>
    Effect.gen(function*() {
      const store = yield* WebhookReceiver.memoryStore()
      yield* store.remember("resp_t")
      yield* TestClock.adjust(Duration.minutes(119))
      expect(yield* store.seen("resp_t")).toBe(true)
      yield* TestClock.adjust(Duration.minutes(1))
      expect(yield* store.seen("resp_t")).toBe(false)
    }))
})
