/**
 * Fault injection of the local service: SPEC parsing, the seeded sequence, faults that never run the request, and
 * resets after the request committed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Either, Fiber, Option, TestClock } from "effect"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { type LocalServiceSettings, noFaults } from "../../src/Server/LocalServiceConfig.js"
import * as Harness from "../support/Harness.js"

const appId = "app_00000000-0000-4000-8000-000000000001"
const createBody = JSON.stringify({ name: "faulty", app_id: appId, image: { base: "debian" } })

/** Runs `effect` against a fresh local service with `faults`. */
const withService = <A, E>(variant: Harness.Variant, 
  faults: Partial<Parameters<typeof FaultInjection.settings>[0]>,
  effect: Effect.Effect<A, E, any>,
  settings: Partial<LocalServiceSettings> = {}
) => Effect.provide(effect, Harness.serviceOn(variant, { ...settings, faults: FaultInjection.settings(faults) })) as Effect.Effect<A, E>

/** A raw request that reports a closed connection as `{ closed: true }` instead of dying. */
const raw = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    Effect.promise(async () => {
      try {
        const response = await fetch(baseUrl.replace(/\/v1$/, "") + path, init)
        const text = await response.text()
        return { closed: false as const, status: response.status, headers: response.headers, json: text === "" ? undefined : JSON.parse(text) }
      } catch (error) {
        return { closed: true as const, error: String((error as Error).cause ?? error) }
      }
    }))

const state = Effect.map(Harness.fetchRaw("/_local/state"), (response) => response.json)

/**
 * Waits until `condition` holds, checking every 5 ms of real time (the service answers over real sockets, whatever the
 * test's clock); dies after 2,000 checks, a bound on a hang, not a timing.
 */
const awaitCondition = (condition: Effect.Effect<boolean>, what: string) =>
  Effect.gen(function*() {
    for (let check = 0; check < 2_000; check++) {
      if (yield* condition) return
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
    return yield* Effect.dieMessage(`${what} never came`)
  })

describe("FaultInjection.parse", () => {
  it("reads fractions, percentages, latency and retry-after", () => {
    const parsed = FaultInjection.parse(
      "429=0.1, 503=10%,503-no-retry-after=0.05,reset-after-commit=.05,latency=20ms,retry-after=0",
      { ...noFaults, seed: 9 }
    )
    expect(Either.isRight(parsed)).toBe(true)
    if (Either.isRight(parsed)) {
      expect(parsed.right.rates).toEqual({ "429": 0.1, "503": 0.1, "503-no-retry-after": 0.05, "reset-after-commit": 0.05 })
      expect(Duration.toMillis(parsed.right.latency)).toBe(20)
      expect(Duration.toMillis(parsed.right.retryAfter)).toBe(0)
      expect(parsed.right.seed).toBe(9)
    }
    const seconds = FaultInjection.parse("retry-after=2,latency=1.5s")
    expect(Either.map(seconds, (s) => [Duration.toMillis(s.retryAfter), Duration.toMillis(s.latency)])).toEqual(
      Either.right([2000, 1500])
    )
    expect(FaultInjection.parse("")).toEqual(Either.right(noFaults))
  })

  it("refuses unknown keys, malformed values and fractions over 1", () => {
    for (const spec of ["500=0.1", "429", "429=abc", "429=1.5", "429=0.6,503=0.6", "latency=20", "latency=fast", "retry-after=-1"]) {
      const parsed = FaultInjection.parse(spec)
      expect(Either.isLeft(parsed), spec).toBe(true)
      if (Either.isLeft(parsed)) expect(parsed.left.message).toContain(`--faults ${spec}`)
    }
  })

  it("pick gives each kind a consecutive range of its fraction", () => {
    const rates = { "429": 0.1, "503": 0.2, "503-no-retry-after": 0, "reset-after-commit": 0.3 }
    expect(FaultInjection.pick(0, rates)).toBe("429")
    expect(FaultInjection.pick(0.0999, rates)).toBe("429")
    expect(FaultInjection.pick(0.1, rates)).toBe("503")
    expect(FaultInjection.pick(0.31, rates)).toBe("reset-after-commit")
    expect(FaultInjection.pick(0.5999, rates)).toBe("reset-after-commit")
    expect(FaultInjection.pick(0.61, rates)).toBe(undefined)
    expect(FaultInjection.describe(FaultInjection.settings({ rates: { "429": 0.1 }, latency: "20 millis", seed: 3 })))
      .toBe("429=10%, latency 20ms; Retry-After 1s (seed 3)")
  })
})

describe.each(Harness.variants())("the local service with faults ($name)", (variant) => {
  it.live("the same seed draws the same sequence of faults; another seed another", () =>
    Effect.gen(function*() {
      const statuses = (seed: number) =>
        withService(variant, 
          { rates: { "429": 0.3, "503": 0.2 }, seed },
          Effect.forEach(Array.from({ length: 40 }, (_, i) => i), () =>
            Effect.map(raw("/v1/secrets/GITHUB_TOKEN", { headers: Harness.auth() }), (r) => r.closed ? 0 : r.status))
        )
      const first = yield* statuses(7)
      const again = yield* statuses(7)
      const other = yield* statuses(8)
      expect(again).toEqual(first)
      expect(other).not.toEqual(first)
      expect(new Set(first)).toEqual(new Set([200, 429, 503]))
    }))

  it.live("429 and 503 faults answer the envelope with or without Retry-After and never run the request", () =>
    Effect.gen(function*() {
      for (
        const [kind, status, type, retryAfter] of [
          ["429", 429, "rate_limit_error", "3"],
          ["503", 503, "server_error", "3"],
          ["503-no-retry-after", 503, "server_error", null]
        ] as const
      ) {
        yield* withService(variant, 
          { rates: { [kind]: 1 }, retryAfter: Duration.seconds(3) },
          Effect.gen(function*() {
            const response = yield* raw("/v1/boxes", {
              method: "POST",
              headers: Harness.auth("sk_acme_org", { "idempotency-key": `k-${kind}` }),
              body: createBody
            })
            expect(response.closed).toBe(false)
            if (response.closed) return
            expect(response.status).toBe(status)
            expect(response.json.error.type).toBe(type)
            expect(response.headers.get("retry-after")).toBe(retryAfter)
            const after = yield* state
            expect(after.boxes).toEqual([])
            expect(after.idempotency_keys).toBe(0)
            expect(after.faults.requests).toBe(1)
            expect(after.faults.injected[kind]).toBe(1)
          })
        )
      }
    }))

  it.live("reset-after-commit runs the request, then closes the connection without an answer", () =>
    withService(variant, 
      { rates: { "reset-after-commit": 1 } },
      Effect.gen(function*() {
        const send = raw("/v1/boxes", {
          method: "POST",
          headers: Harness.auth("sk_acme_org", { "idempotency-key": "reset-me" }),
          body: createBody
        })
        const first = yield* send
        expect(first.closed).toBe(true)
        const second = yield* send
        expect(second.closed).toBe(true)
        const after = yield* state
        expect(after.boxes).toHaveLength(1)
        expect(after.idempotency_keys).toBe(1)
        expect(after.faults.injected["reset-after-commit"]).toBe(2)
        expect(after.faults.client_aborts).toBe(0)
        expect(after.in_flight).toBe(0)
      })
    ))

  it.effect("latency delays every /v1 request until the service's clock has passed it, and is counted (TestClock)", () =>
    withService(variant,
      { latency: Duration.millis(60) },
      Effect.gen(function*() {
        const deadline = (yield* TestClock.currentTimeMillis) + 60
        const request = yield* Effect.fork(raw("/v1/secrets/GITHUB_TOKEN", { headers: Harness.auth() }))
        // The request waits out its latency on the service's clock: a sleep until 60 ms from now.
        yield* awaitCondition(Effect.map(TestClock.sleeps(), Chunk.contains(deadline)), "the latency's sleep")
        expect((yield* state).faults.delayed).toBe(1)
        // A millisecond short of the latency, the sleep is still pending and the request unanswered.
        yield* TestClock.adjust(Duration.millis(59))
        expect(Chunk.contains(yield* TestClock.sleeps(), deadline)).toBe(true)
        expect(Option.isNone(yield* Fiber.poll(request))).toBe(true)
        // At the latency, it runs and is answered.
        yield* TestClock.adjust(Duration.millis(1))
        const response = yield* Fiber.join(request)
        expect(response.closed ? 0 : response.status).toBe(200)
        const after = yield* state
        expect(after.faults.delayed).toBe(1)
        expect(after.faults.settings.latency_ms).toBe(60)
      }).pipe(
        // On a failure, a request still sleeping on the TestClock is let go, so that the service can close.
        Effect.onError(() => TestClock.adjust(Duration.minutes(1)))
      )
    ))
})
