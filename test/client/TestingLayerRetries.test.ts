/**
 * `boxkit/testing` under @effect/vitest's TestClock with a slower, faulty service: a background response that starts
 * only after 300 ms is awaited (`awaitCompletion` polls on the real clock), and injected 503s without `Retry-After`
 * are retried after backoff on the real clock, all without the test moving its clock.
 */
import { expect, layer } from "@effect/vitest"
import { Clock, Duration, Effect } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import { Responses } from "../../src/Client/Responses.js"
import * as BoxkitTesting from "../../src/testing.js"
import * as LocalServiceConfig from "../../src/Server/LocalServiceConfig.js"

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
})
