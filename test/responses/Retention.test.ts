/**
 * Result retention on the TestClock (the service is built inside each test, so its Clock is the TestClock): a result
 * can expire 10 minutes after its first successful delivery, by the API (the foreground answer, or the first GET of
 * the finished result) or by a webhook; repeated reads do not extend it; expired results answer 404.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Harness from "../support/Harness.js"
import { fakeServer, getResponse, localState, postResponse } from "./support.js"

const model = "boxkit-local"

/**
 * The service for these tests: box lifetimes are checked hourly instead of every second, so that moving the TestClock
 * by minutes does not run thousands of lifetime checks.
 */
const service = (variant: Harness.Variant) => Harness.serviceOn(variant, { expiryCheckInterval: Duration.hours(1) })

/** Waits in real time (the TestClock does not move while the service does real I/O). */
const realWait = (millis: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, millis)))

/** Polls in real time until `check` holds (at most 5 s). */
const eventually = <A>(read: Effect.Effect<A, never, any>, check: (value: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 250; i++) {
      const value = yield* read
      if (check(value)) return value
      yield* realWait(20)
    }
    return yield* Effect.die(new Error("condition not met in time"))
  })

const statusOf = (id: string) => Effect.map(getResponse(id), (answer) => answer.status)

/** Submits a background response and lets it finish (the background delay runs on the TestClock). */
const submitAndFinish = (metadata: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const accepted = yield* postResponse({ model, input: "retained", background: true, metadata })
    expect(accepted.status).toBe(202)
    yield* TestClock.adjust(Duration.millis(50))
    yield* eventually(
      Effect.map(localState, (state) => state.responses.find((entry: any) => entry.id === accepted.json.id)?.status),
      (status) => status === "completed"
    )
    return accepted.json.id as string
  })

describe.each(Harness.variants())("result retention ($name)", (variant) => {
  it.scoped("a finished result not yet delivered stays; the first GET starts 10 minutes; reads do not extend them", () =>
    Effect.gen(function*() {
      const id = yield* submitAndFinish()
      yield* TestClock.adjust(Duration.minutes(30))
      const state = yield* localState
      expect(state.responses.find((entry: any) => entry.id === id).first_delivered_at).toBeNull()
      expect(yield* statusOf(id)).toBe(200) // first successful delivery by the API, at 30 min
      yield* TestClock.adjust(Duration.minutes(5))
      expect(yield* statusOf(id)).toBe(200)
      yield* TestClock.adjust(Duration.minutes(4))
      expect(yield* statusOf(id)).toBe(200)
      yield* TestClock.adjust(Duration.seconds(59))
      expect(yield* statusOf(id)).toBe(200) // 9 min 59 s after the first read
      yield* TestClock.adjust(Duration.seconds(1))
      const expired = yield* getResponse(id)
      expect(expired.status).toBe(404)
      expect(expired.json.error.type).toBe("not_found_error")
      yield* TestClock.adjust(Duration.minutes(1))
      expect(yield* statusOf(id)).toBe(404)
    }).pipe(Effect.provide(service(variant))))

  it.scoped("a foreground answer is the first delivery: 404 ten minutes after it", () =>
    Effect.gen(function*() {
      const created = yield* postResponse({ model, input: "foreground retained" })
      expect(created.json.status).toBe("completed")
      yield* TestClock.adjust(Duration.minutes(9))
      expect(yield* statusOf(created.json.id)).toBe(200)
      yield* TestClock.adjust(Duration.minutes(1))
      expect(yield* statusOf(created.json.id)).toBe(404)
    }).pipe(Effect.provide(service(variant))))

  it.scoped("a successful webhook is the first delivery: 404 ten minutes after it, reads in between", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((_, response) => {
        response.writeHead(200).end("ok")
      })
      const id = yield* submitAndFinish({ completion_webhook: `${server.url}/hook` })
      yield* eventually(
        Effect.map(localState, (state) => state.responses.find((entry: any) => entry.id === id).first_delivered_at),
        (at) => at !== null
      )
      expect(server.received).toHaveLength(1)
      yield* TestClock.adjust(Duration.minutes(3))
      expect(yield* statusOf(id)).toBe(200)
      yield* TestClock.adjust(Duration.minutes(6))
      expect(yield* statusOf(id)).toBe(200)
      yield* TestClock.adjust(Duration.minutes(1))
      expect(yield* statusOf(id)).toBe(404)
    }).pipe(Effect.provide(service(variant))))

  it.scoped("a failed webhook is no delivery: the result stays until read", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((_, response) => {
        response.writeHead(500).end("down")
      })
      const id = yield* submitAndFinish({ completion_webhook: `${server.url}/hook` })
      yield* eventually(Effect.sync(() => server.received.length), (count) => count === 3)
      yield* TestClock.adjust(Duration.minutes(11))
      expect(yield* statusOf(id)).toBe(200)
      const state = yield* localState
      expect(state.responses.find((entry: any) => entry.id === id).first_delivered_at).not.toBeNull()
      yield* TestClock.adjust(Duration.minutes(10))
      expect(yield* statusOf(id)).toBe(404)
    }).pipe(Effect.provide(service(variant))))
})
