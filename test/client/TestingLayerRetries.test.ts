/**
 * `boxkit/testing` under @effect/vitest's TestClock with a slower, faulty service: a background response that starts
 * only after 300 ms is awaited (`awaitCompletion` polls on the real clock), and injected 503s without `Retry-After`
 * are retried after backoff on the real clock, for calls and for streamed responses, all without the test moving its
 * clock.
 */
import { expect } from "@effect/vitest"
import { Chunk, Clock, Duration, Effect, Stream } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import { Responses } from "../../src/Client/Responses.js"
import * as BoxkitTesting from "../../src/testing.js"
import * as LocalServiceConfig from "../../src/Server/LocalServiceConfig.js"
import { layer } from "../support/SuiteLayer.js"

const faultyService = BoxkitTesting.layer({
  settings: {
    backgroundDelay: Duration.millis(300),
    faults: {
      ...LocalServiceConfig.noFaults,
      rates: { ...LocalServiceConfig.noFaults.rates, "503-no-retry-after": 0.5 },
      seed: 7
    }
  },
  retry: { maxAttempts: 30, backoffBase: Duration.millis(5), backoffCap: Duration.millis(20) }
})

layer(faultyService)("boxkit/testing under TestClock, with a slow and faulty service", (it) => {
  it.effect("awaitCompletion polls a queued response until it completes; backoffs pass on the real clock", () =>
    Effect.gen(function*() {
      const responses = yield* Responses
      const submitted = yield* responses.submit({ model: "boxkit-local", input: "Hello" })
      const finished = yield* responses.awaitCompletion(submitted.value.id)
      expect(finished.status).toBe("completed")
      for (let index = 0; index < 10; index++) yield* (yield* Apps).find(`retried-${index}`, { mintIfMissing: true })
      const state = yield* (yield* BoxkitTesting.TestService).state
      // The service answered 503 to some of these calls: each was retried after a backoff, on the real clock.
      expect(state.faults.injected["503-no-retry-after"]).toBeGreaterThan(0)
      expect(state.responses.find((response) => response.id === submitted.value.id)?.status).toBe("completed")
      expect(yield* Clock.currentTimeMillis).toBe(0)
    }))

  it.effect("streamed responses: a 503 before the stream's head is retried after backoff on the real clock", () =>
    Effect.gen(function*() {
      const responses = yield* Responses
      const before = (yield* (yield* BoxkitTesting.TestService).state).faults.injected["503-no-retry-after"]
      for (let index = 0; index < 6; index++) {
        const events = yield* Stream.runCollect(responses.stream({ model: "boxkit-local", input: `Hello ${index}` }))
        expect(Chunk.last(events).pipe((last) => last._tag === "Some" ? last.value.type : undefined)).toBe(
          "response.completed"
        )
      }
      const after = (yield* (yield* BoxkitTesting.TestService).state).faults.injected["503-no-retry-after"]
      expect(after).toBeGreaterThan(before)
      expect(yield* Clock.currentTimeMillis).toBe(0)
    }))
})
