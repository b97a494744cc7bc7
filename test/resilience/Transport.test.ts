/**
 * `Transport.call` and the idempotent service methods over a scripted HttpClient, on the TestClock: the same request
 * (and Idempotency-Key) on every attempt, Retry-After as delta-seconds and HTTP date, per-attempt timeouts that abort
 * the request, the deadline, per-call overrides, and key checks before any I/O.
 */
import { HttpClient, HttpClientError, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Exit, Fiber, Layer, Option, TestClock } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { BoxkitConfig, type RetrySettings } from "../../src/Client/BoxkitConfig.js"
import * as Transport from "../../src/Client/Transport.js"
import { appId, boxId, boxRecord } from "../support/Fixtures.js"
import { SecretName } from "../../src/Domain/Secret.js"

const createRequest = { name: "b", app_id: appId, image: { base: "debian" } } as const

/** One answer of the scripted server. */
type Step =
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }
  | "reset"
  | "hang"

interface Seen {
  readonly at: number
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly signal: AbortSignal
}

const envelope = (type: string, code: string | null = null) => ({ error: { message: type, type, param: null, code } })

/** A client whose HttpClient answers `steps` in order (the last one forever) and records every request. */
const scripted = (steps: ReadonlyArray<Step>, retry: Partial<RetrySettings> = {}) => {
  const seen: Array<Seen> = []
  const http = HttpClient.make((request, url, signal) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      seen.push({
        at,
        method: request.method,
        url: url.toString(),
        headers: { ...request.headers },
        body: request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : "",
        signal
      })
      const step = steps[Math.min(seen.length - 1, steps.length - 1)]
      if (step === "hang") return Effect.never
      if (step === "reset") {
        return Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", description: "other side closed" }))
      }
      return Effect.succeed(HttpClientResponse.fromWeb(
        request,
        new Response(step.body === undefined ? null : JSON.stringify(step.body), {
          status: step.status,
          headers: { "content-type": "application/json", ...step.headers }
        })
      ))
    })
  )
  const layer = Layer.mergeAll(Boxes.Default, Transport.Transport.Default).pipe(
    Layer.provide(BoxkitConfig.layer({ apiKey: "sk_transport_test", baseUrl: "http://box.test/v1", retry })),
    Layer.provide(Layer.succeed(HttpClient.HttpClient, http))
  )
  return { seen, layer }
}

/** Runs `effect` with the scripted client, advancing the TestClock by `horizon`; returns the exit. */
const run = <A, E>(
  effect: Effect.Effect<A, E, Boxes | Transport.Transport>,
  layer: Layer.Layer<Boxes | Transport.Transport>,
  horizon: Duration.DurationInput = "10 minutes"
) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.provide(effect, layer))
    yield* TestClock.adjust(horizon)
    return yield* Fiber.await(fiber)
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

const created = { status: 201, body: { box_id: boxId, status: "creating" } }

describe("Transport.call (scripted HttpClient, TestClock)", () => {
  it.effect("429 twice: waits Retry-After, then sends the identical request with the same Idempotency-Key", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([
        { status: 429, body: envelope("rate_limit_error", "rate_limited"), headers: { "retry-after": "2" } },
        { status: 429, body: envelope("rate_limit_error", "rate_limited"), headers: { "retry-after": "1" } },
        created
      ])
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)), layer)
      expect(Exit.isSuccess(exit)).toBe(true)
      if (!Exit.isSuccess(exit)) return
      expect(seen.map((request) => request.at)).toEqual([0, 2000, 3000])
      const key = exit.value.idempotencyKey
      expect(key).toMatch(/^[0-9a-f-]{36}$/)
      for (const request of seen) {
        expect(request.method).toBe("POST")
        expect(request.url).toBe("http://box.test/v1/boxes")
        expect(request.headers["idempotency-key"]).toBe(key)
        expect(request.body).toBe(seen[0].body)
      }
      expect(exit.value.replayed).toBe(false)
    }))

  it.effect("a lost answer (connection reset) is retried with the same key and the replayed answer is reported", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([
        "reset",
        { ...created, headers: { "idempotent-replayed": "true" } }
      ], { backoffBase: Duration.millis(10) })
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest, { idempotencyKey: "mine-1" })), layer)
      expect(exit).toEqual(Exit.succeed({ value: { box_id: boxId, status: "creating" }, idempotencyKey: "mine-1", replayed: true }))
      expect(seen.map((request) => request.headers["idempotency-key"])).toEqual(["mine-1", "mine-1"])
    }))

  it.effect("a new logical call gets a new key; attempts of one call share theirs", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([created])
      const exit = yield* run(
        Effect.flatMap(Boxes, (boxes) => Effect.all([boxes.create(createRequest), boxes.create(createRequest)])),
        layer
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(new Set(seen.map((request) => request.headers["idempotency-key"])).size).toBe(2)
    }))

  it.effect("Retry-After as an HTTP date is honoured against the Clock", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-22T10:00:00Z"))
      const { layer, seen } = scripted([
        { status: 503, body: envelope("server_error"), headers: { "retry-after": "Sun, 22 Nov 2026 10:00:05 GMT" } },
        created
      ])
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)), layer)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(seen.map((request) => request.at - seen[0].at)).toEqual([0, 5000])
    }))

  it.effect("a Retry-After over the cap fails at once with the RateLimitError carrying it", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([
        { status: 429, body: envelope("rate_limit_error", "rate_limited"), headers: { "retry-after": "120" } }
      ])
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)), layer)
      const failure = failureOf(exit)
      expect(failure).toBeInstanceOf(ApiError.RateLimitError)
      expect(Duration.toSeconds((failure as ApiError.RateLimitError).retryAfter!)).toBe(120)
      expect(seen).toHaveLength(1)
    }))

  it.effect("each attempt has its own timeout, and a timed-out attempt's request is aborted", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted(["hang", created], {
        attemptTimeout: Duration.seconds(1),
        backoffBase: Duration.millis(100)
      })
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)), layer)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(seen).toHaveLength(2)
      expect(seen[0].signal.aborted).toBe(true)
      expect(seen[1].at).toBeGreaterThanOrEqual(1050)
      expect(seen[1].at).toBeLessThan(1100)
      expect(seen[1].headers["idempotency-key"]).toBe(seen[0].headers["idempotency-key"])
    }))

  it.effect("the deadline bounds the whole call (TimeoutError) and aborts the attempt in flight", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted(["hang"], { deadline: Duration.seconds(3), attemptTimeout: Duration.seconds(10) })
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId)), layer)
      const failure = failureOf(exit)
      expect(failure).toBeInstanceOf(ApiError.TimeoutError)
      expect(Duration.toSeconds((failure as ApiError.TimeoutError).timeout)).toBe(3)
      expect(seen).toHaveLength(1)
      expect(seen[0].signal.aborted).toBe(true)
    }))

  it.effect("interrupting the caller aborts the request in flight", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted(["hang"])
      const fiber = yield* Effect.fork(Effect.provide(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)), layer))
      yield* TestClock.adjust("1 second")
      expect(seen).toHaveLength(1)
      expect(seen[0].signal.aborted).toBe(false)
      yield* Fiber.interrupt(fiber)
      expect(seen[0].signal.aborted).toBe(true)
    }))

  it.effect("a request without idempotency key is not repeated after 500 or a reset; a read is", () =>
    Effect.gen(function*() {
      for (const step of [{ status: 500, body: envelope("server_error") }, "reset"] as const) {
        const unsafe = scripted([step, { status: 200, body: {} }])
        const exit = yield* run(
          Effect.flatMap(Transport.Transport, (transport) =>
            transport.call(transport.box.secrets.retrieve({ path: { name: SecretName.make("X") } }), { safeToRepeat: false })),
          unsafe.layer
        )
        expect(Exit.isFailure(exit)).toBe(true)
        expect(unsafe.seen).toHaveLength(1)
        const read = scripted([step, { status: 200, body: boxRecord }], { backoffBase: Duration.millis(1) })
        const box = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId)), read.layer)
        expect(Exit.isSuccess(box)).toBe(true)
        expect(read.seen).toHaveLength(2)
      }
    }))

  it.effect("400, 401, 402, 403, 404, 409, 501 answers are never repeated", () =>
    Effect.gen(function*() {
      const answers = [
        [400, "invalid_request_error"],
        [401, "authentication_error"],
        [402, "billing_error"],
        [403, "permission_error"],
        [404, "not_found_error"],
        [409, "conflict_error"],
        [501, "not_implemented_error"]
      ] as const
      for (const [status, type] of answers) {
        const { layer, seen } = scripted([{ status, body: envelope(type) }, created])
        const exit = yield* run(
          Effect.flatMap(Transport.Transport, (transport) =>
            transport.call(transport.box.boxes.retrieve({ path: { box_id: boxId }, headers: {} }), { safeToRepeat: true })),
          layer
        )
        expect(failureOf(exit), String(status)).toMatchObject({ status, message: type })
        expect(seen, String(status)).toHaveLength(1)
      }
    }))

  it.effect("per-call settings: the retry option and Transport.withRetry override BoxkitConfig.retry", () =>
    Effect.gen(function*() {
      const down = { status: 503, body: envelope("server_error"), headers: { "retry-after": "1" } }
      const configured = scripted([down], { maxAttempts: 4 })
      yield* run(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId)), configured.layer)
      expect(configured.seen).toHaveLength(4)

      const option = scripted([down], { maxAttempts: 4 })
      yield* run(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId, { retry: { maxAttempts: 1 } })), option.layer)
      expect(option.seen).toHaveLength(1)

      const combinator = scripted([down], { maxAttempts: 4 })
      yield* run(
        Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)).pipe(Transport.withRetry({ maxAttempts: 2 })),
        combinator.layer
      )
      expect(combinator.seen).toHaveLength(2)

      const both = scripted([down], { maxAttempts: 4 })
      yield* run(
        Transport.withRetry(
          Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId, { retry: { maxAttempts: 3 } })),
          { maxAttempts: 1, deadline: Duration.minutes(5) }
        ),
        both.layer
      )
      expect(both.seen).toHaveLength(3)
    }))

  it.effect("a caller's key is checked before any I/O: blank, over 255 UTF-8 bytes, control characters", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([created])
      for (const key of ["", "   ", "é".repeat(128), "a".repeat(256), "line\nbreak", " padded"]) {
        const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest, { idempotencyKey: key })), layer)
        const failure = failureOf(exit)
        expect(failure, JSON.stringify(key)).toBeInstanceOf(ApiError.InvalidRequestError)
        expect((failure as ApiError.InvalidRequestError).param).toBe("Idempotency-Key")
      }
      const upgrade = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.upgrade(boxId, { idempotencyKey: "" })), layer)
      expect(failureOf(upgrade)).toBeInstanceOf(ApiError.InvalidRequestError)
      expect(seen).toHaveLength(0)
    }))

  it.effect("a 255-byte non-ASCII key is sent as its UTF-8 bytes and returned as given", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([created])
      const key = "é".repeat(127) + "k"
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest, { idempotencyKey: key })), layer)
      expect(Exit.isSuccess(exit) && exit.value.idempotencyKey).toBe(key)
      const sent = seen[0].headers["idempotency-key"]
      expect(Buffer.from(sent, "latin1")).toEqual(Buffer.from(key, "utf8"))
      expect(Buffer.from(sent, "latin1").byteLength).toBe(255)
    }))

  it.effect("a 502 without an envelope is retried for reads and surfaces as UnexpectedResponseError", () =>
    Effect.gen(function*() {
      const { layer, seen } = scripted([{ status: 502 }], { maxAttempts: 3, backoffBase: Duration.millis(1) })
      const exit = yield* run(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId)), layer)
      expect(failureOf(exit)).toBeInstanceOf(ApiError.UnexpectedResponseError)
      expect(seen).toHaveLength(3)
    }))
})
