/**
 * The webhook delivery log is kept as long as results are (docs/ASSUMPTIONS.md "Webhooks"): the retention sweep
 * forgets entries older than the 10-minute result retention, so deliveries to a dead receiver do not grow it without
 * end.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Retention from "../../src/Server/responses/Retention.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"

const entry = (atMillis: number, attempt: number): Repositories.WebhookDeliveryEntry => ({
  response_id: "resp_00000000000000000000000000000001",
  url: "http://127.0.0.1:9/hook",
  round: 1,
  attempt,
  status: null,
  error: "connection refused",
  ok: false,
  at: new Date(atMillis).toISOString()
})

describe("the webhook delivery log", () => {
  it.effect("forgets entries older than the result retention at each sweep", () =>
    Effect.gen(function*() {
      const logs = yield* Repositories.Logs
      const responses = yield* Repositories.Responses
      const retention = Duration.toMillis(Duration.minutes(10))
      yield* TestClock.setTime(Date.parse("2026-11-24T00:00:00Z"))
      const start = Date.parse("2026-11-24T00:00:00Z")
      for (let attempt = 1; attempt <= 3; attempt++) yield* logs.delivery(entry(start + attempt, attempt))
      yield* TestClock.adjust(Duration.minutes(9))
      yield* logs.delivery(entry(start + 9 * 60_000, 4))
      const sweep = Retention.make(responses, logs, retention).sweep
      yield* sweep
      expect(yield* logs.deliveries).toHaveLength(4)
      yield* TestClock.adjust(Duration.minutes(2))
      yield* sweep
      expect((yield* logs.deliveries).map((kept) => kept.attempt)).toEqual([4])
      yield* TestClock.adjust(Duration.minutes(10))
      yield* sweep
      expect(yield* logs.deliveries).toHaveLength(0)
    }).pipe(Effect.provide(MemoryRepositories.layerMemory)))
})
