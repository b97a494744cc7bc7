/**
 * Completion webhooks end to end over real HTTP: the local service delivers to the client toolkit's WebhookReceiver.
 * A receiver that fails twice then answers 200 hands exactly one completion to its handler; 1,000 background
 * responses with webhooks are all delivered and handed over exactly once; the payload is the object GET returns.
 */
import { describe, expect } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Layer, Redacted, Schema } from "effect"
import { Responses } from "../../src/Client/Responses.js"
import * as WebhookReceiver from "../../src/Client/WebhookReceiver.js"
import { ModelResponse } from "../../src/Domain/ModelResponse.js"
import * as Harness from "../support/Harness.js"
import { fakeServer, getResponse, localState, postResponse } from "./support.js"
import { layer } from "../support/SuiteLayer.js"

const model = "boxkit-local"

/** Polls `check` every 20 ms until it holds, at most `timeout`. */
const eventually = (check: () => boolean, timeout = Duration.seconds(20)) =>
  Effect.gen(function*() {
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(timeout)
    while (!check()) {
      if ((yield* Clock.currentTimeMillis) > deadline) return yield* Effect.die(new Error("condition not met in time"))
      yield* Effect.sleep(Duration.millis(20))
    }
  })

const deliveriesOf = (id: string) =>
  Effect.map(localState, (state) => state.webhook_deliveries.filter((entry: any) => entry.response_id === id))

/** A receiver layer built in the current scope; returns its URL. */
const startReceiver = <E>(options: WebhookReceiver.ReceiverOptions<E, never>) =>
  Effect.map(Layer.build(WebhookReceiver.layer(options)), (context) => Context.get(context, WebhookReceiver.WebhookReceiverUrl))

describe.each(Harness.variants())("$name", (variant) =>
layer(Harness.serviceWithClientOn(variant), { excludeTestServices: true })("completion webhooks to the receiver", (it) => {
  describe("delivery", () => {
    it.scoped("a receiver that fails twice then answers 200 gets exactly one completion handed to its handler", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        let calls = 0
        const accepted: Array<ModelResponse> = []
        const token = Redacted.make("whk_fail_twice")
        const url = yield* startReceiver({
          token,
          handler: (response) =>
            Effect.suspend(() => {
              calls++
              if (calls <= 2) return Effect.fail("not ready yet")
              accepted.push(response)
              return Effect.void
            })
        })
        const submitted = yield* responses.submit({
          model,
          input: "deliver to a flaky receiver",
          metadata: { completion_webhook: url, webhook_token: Redacted.value(token) }
        })
        yield* eventually(() => accepted.length === 1)
        expect(calls).toBe(3)
        expect(accepted[0].id).toBe(submitted.value.id)
        expect(accepted[0].status).toBe("completed")
        const entries = yield* deliveriesOf(submitted.value.id)
        expect(entries.map((entry: any) => [entry.round, entry.attempt, entry.status])).toEqual([
          [1, 1, 500],
          [1, 2, 500],
          [1, 3, 200]
        ])
        // A duplicate delivery of the same completion is answered 2xx and not handed over again.
        const read = yield* getResponse(submitted.value.id)
        const again = yield* Effect.promise(() =>
          fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: "Bearer whk_fail_twice" },
            body: read.text
          })
        )
        expect(again.status).toBe(200)
        expect(calls).toBe(3)
        expect(accepted).toHaveLength(1)
      }))

    it.scoped("1,000 background responses with webhooks: all delivered and handed over exactly once", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        const handed = new Map<string, number>()
        const token = Redacted.make("whk_bulk")
        const url = yield* startReceiver({
          token,
          handler: (response) => Effect.sync(() => void handed.set(response.id, (handed.get(response.id) ?? 0) + 1))
        })
        const startedAt = Date.now()
        const submitted = yield* Effect.forEach(
          Array.from({ length: 1000 }, (_, index) => index),
          (index) =>
            responses.submit({
              model,
              input: `bulk ${index}`,
              metadata: { completion_webhook: url, webhook_token: Redacted.value(token) }
            }),
          { concurrency: 32 }
        )
        const acceptedAt = Date.now()
        yield* eventually(() => handed.size === 1000, Duration.seconds(60))
        const deliveredAt = Date.now()
        const ids = new Set(submitted.map((answer) => answer.value.id))
        expect(ids.size).toBe(1000)
        for (const id of ids) expect(handed.get(id)).toBe(1)
        // Exactly one successful delivery per response. On a starved machine an attempt can time out (10 s) after the
        // receiver took it; the retry is then answered as a duplicate: still one hand-over (spec: receivers dedupe).
        // That retry's success is logged after the hand-over, so the log is read until it has every response's.
        const deliveries = Effect.map(localState, (state) => state.webhook_deliveries.filter((entry: any) => ids.has(entry.response_id)))
        let bulk = yield* deliveries
        const logDeadline = (yield* Clock.currentTimeMillis) + 60_000
        while (bulk.filter((entry: any) => entry.ok).length < 1000 && (yield* Clock.currentTimeMillis) < logDeadline) {
          yield* Effect.sleep(Duration.millis(200))
          bulk = yield* deliveries
        }
        const ok = bulk.filter((entry: any) => entry.ok)
        expect(ok).toHaveLength(1000)
        expect(new Set(ok.map((entry: any) => entry.response_id)).size).toBe(1000)
        const failed = bulk.filter((entry: any) => !entry.ok)
        console.log(
          `[measure] 1000 background responses with webhooks: submitted in ${acceptedAt - startedAt} ms, all ` +
            `delivered and handed over once after ${deliveredAt - startedAt} ms; ${bulk.length} webhook requests ` +
            `(${failed.length} attempts timed out or failed and were retried)`
        )
      }), 180_000)

    it.scoped("the payload is the object GET returns; foreground and incomplete responses are delivered too", () =>
      Effect.gen(function*() {
        const server = yield* fakeServer((_, response) => {
          response.writeHead(204).end()
        })
        const foreground = yield* postResponse({
          model,
          input: "foreground with a webhook",
          max_output_tokens: 4,
          metadata: { completion_webhook: `${server.url}/hook`, webhook_token: "whk_plain" }
        })
        expect(foreground.json.status).toBe("incomplete")
        yield* eventually(() => server.received.length === 1)
        const [received] = server.received
        expect(received.method).toBe("POST")
        expect(received.url).toBe("/hook")
        expect(received.headers["content-type"]).toBe("application/json")
        expect(received.headers.authorization).toBe("Bearer whk_plain")
        const read = yield* getResponse(foreground.json.id)
        expect(JSON.parse(received.body)).toEqual(read.json)
        expect(read.json.status).toBe("incomplete")
        expect(read.json.incomplete_details).toEqual({ reason: "max_output_tokens" })
        expect(Schema.decodeUnknownSync(ModelResponse)(JSON.parse(received.body)).id).toBe(foreground.json.id)
        expect(received.body).not.toContain("whk_plain")
      }))
  })

  describe("failures never change the response", () => {
    it.scoped("a receiver answering 401 (wrong token) gets a round of 3 attempts; the response stays readable", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        let calls = 0
        const url = yield* startReceiver({
          token: Redacted.make("whk_expected"),
          handler: () => Effect.sync(() => void calls++)
        })
        const submitted = yield* responses.submit({
          model,
          input: "wrong token",
          metadata: { completion_webhook: url, webhook_token: "whk_wrong" }
        })
        let entries: Array<any> = []
        while (entries.length < 3) {
          yield* Effect.sleep(Duration.millis(20))
          entries = yield* deliveriesOf(submitted.value.id)
        }
        expect(entries.map((entry: any) => [entry.round, entry.attempt, entry.status])).toEqual([
          [1, 1, 401],
          [1, 2, 401],
          [1, 3, 401]
        ])
        expect(calls).toBe(0)
        const read = yield* responses.retrieve(submitted.value.id)
        expect(read.status).toBe("completed")
      }))
  })
}))
