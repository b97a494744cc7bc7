/**
 * Webhook fan-out of the local service (WebhookDelivery.ts) over real HTTP: thousands of deliveries handed over at
 * once all arrive, once each, quickly (deliveries wait in a queue for the workers, rather than each as a fiber on a
 * semaphore, whose every release woke all waiters); attempts stay within `concurrency`; with the toolkit's client an
 * attempt's timeout is a plain timer and is logged as "timed out after N ms", with the platform's client it is a
 * racing fiber and logged the same.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { type Context, Duration, Effect, Layer, Redacted } from "effect"
import * as UndiciHttpClient from "../../src/Http/UndiciHttpClient.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as DurableWork from "../../src/Server/state/DurableWork.js"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import * as WebhookDelivery from "../../src/Server/responses/WebhookDelivery.js"
import { fakeServer } from "./support.js"

/** The delivery service and its repositories, over `client`. */
const deliveries = (client: Layer.Layer<any>, options: WebhookDelivery.DeliveryOptions = {}) =>
  WebhookDelivery.layer(options).pipe(Layer.provideMerge(Layer.mergeAll(MemoryRepositories.layerMemory, DurableWork.layerMemory, LocalServiceConfig.layer())), Layer.provide(client))

/** The delivery log of `context`, read every 10 ms until it has `count` entries (at most `timeout`). */
const deliveryLog = (context: Context.Context<Repositories.Logs>, count: number, timeout: Duration.DurationInput) =>
  Effect.provide(Effect.flatMap(Repositories.Logs, (logs) => logs.deliveries), context).pipe(
    Effect.tap(() => Effect.sleep("10 millis")),
    Effect.repeat({ until: (log) => log.length >= count }),
    Effect.timeout(timeout)
  )

/** Waits (every 10 ms, at most `seconds`) until `done` holds. */
const until = (done: () => boolean, seconds = 20) =>
  Effect.sleep("10 millis").pipe(Effect.repeat({ until: done }), Effect.timeout(Duration.seconds(seconds)))

describe("webhook fan-out", () => {
  it.scopedLive("3,000 deliveries handed over at once all arrive once each, with at most `concurrency` in flight", () =>
    Effect.gen(function*() {
      let inFlight = 0
      let most = 0
      const seen = new Map<string, number>()
      const receiver = yield* fakeServer((request, response) => {
        inFlight++
        most = Math.max(most, inFlight)
        const id = JSON.parse(request.body).id as string
        seen.set(id, (seen.get(id) ?? 0) + 1)
        setTimeout(() => {
          inFlight--
          response.writeHead(200).end("{}")
        }, 1)
      })
      // (fakeServer answers the request once its body has arrived; `inFlight` counts requests being answered.)
      receiver.server.keepAliveTimeout = 10_000
      const context = yield* Layer.build(deliveries(UndiciHttpClient.layer, { concurrency: 32 }))
      const delivery = Effect.provide(WebhookDelivery.WebhookDelivery, context)
      const service = yield* delivery
      for (let index = 0; index < 3000; index++) {
        yield* service.deliver({
          responseId: `resp_${index}`,
          orgId: "org_acme",
          url: `${receiver.url}/hook`,
          token: Redacted.make("token"),
          body: { id: `resp_${index}`, object: "response", status: "completed" }
        })
      }
      // (How fast they arrive is measured in the benchmarks, section 3: no timing assertion here.)
      yield* until(() => seen.size === 3000, 100)
      expect([...seen.values()].every((count) => count === 1)).toBe(true)
      expect(most).toBeLessThanOrEqual(32)
      // Each attempt is logged once its answer has arrived (just after the receiver saw the request).
      const log = yield* deliveryLog(context, 3000, "10 seconds")
      expect(log).toHaveLength(3000)
      expect(log.every((entry) => entry.ok && entry.round === 1 && entry.attempt === 1)).toBe(true)
      expect(receiver.received[0].headers.authorization).toBe("Bearer token")
    }), 150_000)

  for (const [name, client] of [["the toolkit's client", UndiciHttpClient.layer], ["the platform's client", NodeHttpClient.layerUndici]] as const) {
    it.scopedLive(`with ${name}, an attempt past its timeout fails "timed out after N ms" and the round goes on`, () =>
      Effect.gen(function*() {
        const receiver = yield* fakeServer(() => {
          // Never answers.
        })
        const context = yield* Layer.build(deliveries(client, { attemptTimeout: Duration.millis(500) }))
        const service = yield* Effect.provide(WebhookDelivery.WebhookDelivery, context)
        yield* service.deliver({ responseId: "resp_slow", orgId: "org_acme", url: receiver.url, token: null, body: { id: "resp_slow" } })
        const log = yield* deliveryLog(context, 3, "5 seconds")
        expect(log.slice(0, 3).map((entry) => [entry.round, entry.attempt, entry.ok, entry.error])).toEqual([
          [1, 1, false, "timed out after 500 ms"],
          [1, 2, false, "timed out after 500 ms"],
          [1, 3, false, "timed out after 500 ms"]
        ])
        // Each request reached the receiver (500 ms leaves a loaded machine time to send it before the timeout).
        yield* until(() => receiver.received.length === 3)
      }))
  }
})
