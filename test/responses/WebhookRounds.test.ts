/**
 * Completion-webhook delivery rounds, on the TestClock: the one Schedule (`deliveryRounds`) and the delivery service
 * over a scripted HttpClient. Proves 3 attempts per round back to back within 30 s, the round delays, 20 rounds, at
 * most 60 requests, a 2xx stops, network errors and timeouts count as failures, the request shape (POST JSON,
 * Bearer token), the retention clock starting at the first 2xx, and bounded concurrency.
 */
import { HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Redacted, TestClock } from "effect"
import * as Repositories from "../../src/Server/state/Repositories.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as DurableWork from "../../src/Server/state/DurableWork.js"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import * as WebhookDelivery from "../../src/Server/responses/WebhookDelivery.js"

const seconds = (millis: number) => millis / 1000

/** Times (ms) of the attempts of `effect` retried by deliveryRounds, with `outcome(n)` deciding attempt n (1-based). */
const runRounds = (outcome: (attempt: number, startedAtMillis: number) => Effect.Effect<void, unknown>, advance: Duration.Duration) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    const fiber = yield* Effect.suspend(() =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        times.push(now)
        return outcome(times.length, now)
      })
    ).pipe(Effect.retry(WebhookDelivery.deliveryRounds), Effect.fork)
    yield* TestClock.adjust(advance)
    const exit = yield* Fiber.await(fiber).pipe(Effect.timeoutOption(Duration.zero))
    return { times, exit }
  })

/** The delays between rounds (s), from attempt times grouped by three-in-a-row at one instant. */
const roundStarts = (times: ReadonlyArray<number>) => [...new Set(times)]

describe("deliveryRounds (the one Schedule)", () => {
  it.effect("always failing: 3 attempts per round back to back, delays 5 s doubling to 5 min, 20 rounds, 60 requests", () =>
    Effect.gen(function*() {
      const { exit, times } = yield* runRounds(() => Effect.fail("HTTP 500"), Duration.hours(3))
      expect(Option.map(exit, Exit.isFailure)).toEqual(Option.some(true))
      expect(times).toHaveLength(WebhookDelivery.maxRequests)
      expect(times).toHaveLength(60)
      const starts = roundStarts(times)
      expect(starts).toHaveLength(20)
      for (const start of starts) expect(times.filter((time) => time === start)).toHaveLength(3)
      const delays = starts.slice(1).map((start, index) => seconds(start - starts[index]))
      expect(delays).toEqual([5, 10, 20, 40, 80, 160, ...Array(13).fill(300)])
      expect(seconds(times.at(-1)!)).toBe(315 + 13 * 300)
      yield* TestClock.adjust(Duration.hours(24))
      expect(times).toHaveLength(60)
    }))

  it.effect("a 2xx stops: success on the 5th attempt (round 2, attempt 2) makes exactly 5 requests", () =>
    Effect.gen(function*() {
      const { exit, times } = yield* runRounds(
        (attempt) => attempt < 5 ? Effect.fail("HTTP 503") : Effect.void,
        Duration.hours(3)
      )
      expect(Option.map(exit, Exit.isSuccess)).toEqual(Option.some(true))
      expect(times.map(seconds)).toEqual([0, 0, 0, 5, 5])
    }))

  it.effect("the 30-second round budget: slow attempts end a round early", () =>
    Effect.gen(function*() {
      // Each attempt takes 20 s and fails: the second starts at 20 s (within 30 s of the round's start), the third
      // would start at 40 s (past the budget), so round 2 starts 5 s later, at 45 s.
      const { times } = yield* runRounds(
        (_, startedAtMillis) =>
          Effect.zipRight(
            Effect.sleep(Duration.seconds(20)),
            Effect.fail(new WebhookDelivery.DeliveryFailed({ status: null, reason: "slow", startedAtMillis }))
          ),
        Duration.seconds(120)
      )
      expect(times.slice(0, 4).map(seconds)).toEqual([0, 20, 45, 65])
    }))
})

/** A scripted HttpClient: `answer(request, n)` for the n-th request (1-based); every request is recorded. */
const scriptedClient = (
  answer: (request: HttpClientRequest.HttpClientRequest, n: number) => Effect.Effect<number, "network">
) => {
  const requests: Array<{ at: number; request: HttpClientRequest.HttpClientRequest; body: string }> = []
  const client = HttpClient.make((request) =>
    Effect.gen(function*() {
      const body = request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : ""
      requests.push({ at: yield* Clock.currentTimeMillis, request, body })
      const status = yield* answer(request, requests.length).pipe(
        Effect.mapError(() =>
          new HttpClientError.RequestError({ request, reason: "Transport", description: "connection refused" })
        )
      )
      return HttpClientResponse.fromWeb(request, new Response(status === 204 ? null : "ok", { status }))
    })
  )
  return { requests, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

const record = (id: string): Repositories.ResponseRecord => ({
  id,
  orgId: "org_acme",
  keyId: "key_1",
  object: { id } as any,
  webhookUrl: "http://receiver.test/hook",
  webhookToken: null,
  firstDeliveredAtMillis: null
})

/** The delivery service over `client`, with in-memory logs and responses; runs `body` with them. */
const withDelivery = <A, E>(
  client: Layer.Layer<HttpClient.HttpClient>,
  body: Effect.Effect<A, E, WebhookDelivery.WebhookDelivery | Repositories.Logs | Repositories.Responses>,
  options: WebhookDelivery.DeliveryOptions = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(
      WebhookDelivery.layer(options).pipe(
        Layer.provideMerge(Layer.mergeAll(MemoryRepositories.logsMemory, MemoryRepositories.responsesMemory, DurableWork.layerMemory, LocalServiceConfig.layer())),
        Layer.provide(client)
      )
    )
    return yield* Effect.provide(body, context)
  }))

/** The delivery service and the repositories it writes to. */
const services = Effect.all({
  delivery: WebhookDelivery.WebhookDelivery,
  responses: Repositories.Responses,
  logs: Repositories.Logs
})

describe("WebhookDelivery over a scripted receiver", () => {
  it.effect("POSTs the JSON body with Authorization: Bearer <webhook_token>; 60 requests when it always fails", () => {
    const script = scriptedClient(() => Effect.succeed(500))
    return withDelivery(
      script.layer,
      Effect.gen(function*() {
        const { delivery, logs, responses } = yield* services
        yield* responses.insert(record("resp_a"))
        const body = { id: "resp_a", object: "response", status: "completed" }
        yield* delivery.deliver({
          responseId: "resp_a",
          orgId: "org_acme",
          url: "http://receiver.test/hook",
          token: Redacted.make("whk_secret"),
          body
        })
        yield* TestClock.adjust(Duration.hours(3))
        expect(script.requests).toHaveLength(60)
        const first = script.requests[0]
        expect(first.request.method).toBe("POST")
        expect(first.request.url).toBe("http://receiver.test/hook")
        expect(first.request.headers.authorization).toBe("Bearer whk_secret")
        expect(first.request.body._tag === "Uint8Array" && first.request.body.contentType).toBe("application/json")
        expect(JSON.parse(first.body)).toEqual(body)
        const entries = yield* logs.deliveries
        expect(entries).toHaveLength(60)
        expect(entries.map((entry) => [entry.round, entry.attempt]).slice(0, 4)).toEqual([[1, 1], [1, 2], [1, 3], [2, 1]])
        expect(entries.at(-1)).toMatchObject({ round: 20, attempt: 3, status: 500, ok: false })
        expect(JSON.stringify(entries)).not.toContain("whk_secret")
        const stored = yield* responses.get("resp_a")
        expect(Option.map(stored, (r) => r.firstDeliveredAtMillis)).toEqual(Option.some(null))
        yield* TestClock.adjust(Duration.hours(24))
        expect(script.requests).toHaveLength(60)
      })
    )
  })

  it.effect("network errors and non-2xx fail; the first 2xx stops and starts the retention clock", () => {
    const script = scriptedClient((_, n) => n <= 2 ? Effect.fail("network" as const) : n <= 4 ? Effect.succeed(302) : Effect.succeed(204))
    return withDelivery(
      script.layer,
      Effect.gen(function*() {
        const { delivery, logs, responses } = yield* services
        yield* responses.insert(record("resp_b"))
        yield* delivery.deliver({ responseId: "resp_b", orgId: "org_acme", url: "http://receiver.test/hook", token: null, body: {} })
        yield* TestClock.adjust(Duration.hours(3))
        expect(script.requests.map((entry) => seconds(entry.at))).toEqual([0, 0, 0, 5, 5])
        expect(script.requests[0].request.headers.authorization).toBeUndefined()
        const entries = yield* logs.deliveries
        expect(entries.map((entry) => entry.status)).toEqual([null, null, 302, 302, 204])
        expect(entries[0].error).toContain("connection refused")
        const stored = yield* responses.get("resp_b")
        expect(Option.map(stored, (r) => r.firstDeliveredAtMillis)).toEqual(Option.some(5000))
      })
    )
  })

  it.effect("a slow receiver: each attempt times out after 10 s, so a round of 3 fits 30 s; later rounds still go", () => {
    const script = scriptedClient((_, n) => n <= 3 ? Effect.never : Effect.succeed(200))
    return withDelivery(
      script.layer,
      Effect.gen(function*() {
        const delivery = yield* WebhookDelivery.WebhookDelivery
        const logs = yield* Repositories.Logs
        yield* delivery.deliver({ responseId: "resp_c", orgId: "org_acme", url: "http://receiver.test/hook", token: null, body: {} })
        yield* TestClock.adjust(Duration.minutes(5))
        expect(script.requests.map((entry) => seconds(entry.at))).toEqual([0, 10, 20, 35])
        const entries = yield* logs.deliveries
        expect(entries.slice(0, 3).map((entry) => entry.error)).toEqual([
          "timed out after 10000 ms",
          "timed out after 10000 ms",
          "timed out after 10000 ms"
        ])
        expect(entries[3]).toMatchObject({ round: 2, attempt: 1, status: 200, ok: true })
      })
    )
  })

  it.effect("bounded concurrency: 200 deliveries to a stalled receiver hold at most `concurrency` requests at once", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      let inFlight = 0
      let peak = 0
      const script = scriptedClient(() =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            inFlight++
            peak = Math.max(peak, inFlight)
          }),
          () => Deferred.await(release),
          () => Effect.sync(() => inFlight--)
        ).pipe(Effect.as(200))
      )
      yield* withDelivery(
        script.layer,
        Effect.gen(function*() {
          const delivery = yield* WebhookDelivery.WebhookDelivery
          for (let i = 0; i < 200; i++) {
            yield* delivery.deliver({ responseId: `resp_${i}`, orgId: `org_${i % 4}`, url: "http://receiver.test/hook", token: null, body: { i } })
          }
          yield* TestClock.adjust(Duration.millis(1))
          expect(peak).toBe(8)
          expect(script.requests).toHaveLength(8)
          yield* Deferred.succeed(release, undefined)
          yield* TestClock.adjust(Duration.millis(1))
          yield* Effect.yieldNow()
          expect(script.requests).toHaveLength(200)
          expect(peak).toBe(8)
        }),
        { concurrency: 8 }
      )
    }))
})

describe("WebhookDelivery: organizations share the workers fairly", () => {
  it.effect("one organization's stalled receiver holds at most `concurrencyPerOrganization` workers; another's delivery goes at once", () =>
    Effect.gen(function*() {
      const inFlight = new Map<string, number>()
      const peak = new Map<string, number>()
      const script = scriptedClient((request) => {
        const org = request.url.includes("stalled") ? "org_stalled" : "org_other"
        return Effect.acquireUseRelease(
          Effect.sync(() => {
            inFlight.set(org, (inFlight.get(org) ?? 0) + 1)
            peak.set(org, Math.max(peak.get(org) ?? 0, inFlight.get(org)!))
          }),
          () => org === "org_stalled" ? Effect.never : Effect.void,
          () => Effect.sync(() => inFlight.set(org, inFlight.get(org)! - 1))
        ).pipe(Effect.as(200))
      })
      yield* withDelivery(
        script.layer,
        Effect.gen(function*() {
          const { delivery, logs } = yield* services
          for (let i = 0; i < 50; i++) {
            yield* delivery.deliver({ responseId: `resp_s${i}`, orgId: "org_stalled", url: "http://receiver.test/stalled", token: null, body: {} })
          }
          yield* delivery.deliver({ responseId: "resp_other", orgId: "org_other", url: "http://receiver.test/other", token: null, body: {} })
          yield* TestClock.adjust(Duration.millis(1))
          // Default: `concurrency` (8) but an eighth per organization; the other organization's delivery did not wait.
          expect(peak.get("org_stalled")).toBe(7)
          expect(script.requests.map((entry) => entry.request.url).filter((url) => url.endsWith("/other"))).toHaveLength(1)
          const entries = yield* logs.deliveries
          expect(entries.filter((entry) => entry.response_id === "resp_other")).toEqual([
            expect.objectContaining({ round: 1, attempt: 1, status: 200, ok: true })
          ])
          // The stalled organization's attempts run to their timeout, seven at a time, the next ones in turn.
          yield* TestClock.adjust(Duration.seconds(10))
          expect(peak.get("org_stalled")).toBe(7)
          expect(script.requests.filter((entry) => entry.request.url.endsWith("/stalled"))).toHaveLength(14)
        }),
        { concurrency: 8 }
      )
    }))
})

describe("WebhookDelivery: the receiver's answer body", () => {
  /**
   * A client answering every request `status`, declaring 2 GiB, with a body of `chunk`s up to 16 MiB; `pulled` counts
   * the bytes read, `cancelled` the bodies given up.
   */
  const endlessBody = (status: number, chunk: Uint8Array) => {
    const counter = { pulled: 0, cancelled: 0, requests: 0 }
    const client = HttpClient.make((request) =>
      Effect.sync(() => {
        counter.requests++
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            // Ends at 16 MiB, so that a client reading the whole body finishes (and the test fails instead of hanging).
            if (counter.pulled >= 16 * 1024 * 1024) return controller.close()
            counter.pulled += chunk.byteLength
            controller.enqueue(chunk)
          },
          cancel() {
            counter.cancelled++
          }
        }, { highWaterMark: 0 })
        return HttpClientResponse.fromWeb(request, new Response(body, { status, headers: { "content-length": String(2 ** 31) } }))
      })
    )
    return { counter, layer: Layer.succeed(HttpClient.HttpClient, client) }
  }

  it.live("a 200 with an endless body: at most `maxReplyBytes` and a chunk are read, the body is cancelled, the 200 counts", () => {
    const chunk = new Uint8Array(16 * 1024)
    const script = endlessBody(200, chunk)
    return withDelivery(
      script.layer,
      Effect.gen(function*() {
        const { delivery, logs, responses } = yield* services
        yield* responses.insert(record("resp_big"))
        yield* delivery.deliver({ responseId: "resp_big", orgId: "org_acme", url: "http://receiver.test/hook", token: null, body: {} })
        const entries = yield* logs.deliveries.pipe(
          Effect.tap(() => Effect.sleep("10 millis")),
          Effect.repeat({ until: (log) => log.length >= 1 }),
          Effect.timeout("20 seconds")
        )
        expect(entries).toEqual([expect.objectContaining({ round: 1, attempt: 1, status: 200, ok: true })])
        expect(script.counter.requests).toBe(1)
        expect(script.counter.pulled).toBeGreaterThan(WebhookDelivery.maxReplyBytes)
        expect(script.counter.pulled).toBeLessThanOrEqual(WebhookDelivery.maxReplyBytes + 2 * chunk.byteLength)
        expect(script.counter.cancelled).toBe(1)
        const stored = yield* responses.get("resp_big")
        expect(Option.map(stored, (r) => r.firstDeliveredAtMillis !== null)).toEqual(Option.some(true))
      })
    )
  })
})
