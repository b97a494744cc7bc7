/**
 * The error a client call ends with, once its retries are over, carries the call's context (`ApiError.CallContext`):
 * the operation, the HTTP method, the path without the base URL, and the attempts made of those allowed; its `name`
 * (what `Cause.pretty` and a log line print before the message) ends with it, and `message` stays the service's.
 * For the typed API errors, `TransportError`, `TimeoutError` and `UnexpectedResponseError`, on the contract's
 * requests and raw ones; against scripted `HttpClient`s on the TestClock, and the local service injecting 429s.
 */
import { HttpClient, HttpClientError, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Fiber, Layer, TestClock } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { BoxkitConfig } from "../../src/Client/BoxkitConfig.js"
import { Clipboard } from "../../src/Client/Clipboard.js"
import { Secrets } from "../../src/Client/Secrets.js"
import { AppId } from "../../src/Domain/Ids.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as BoxkitTesting from "../../src/testing.js"
import { boxId } from "../support/Fixtures.js"

const apiKey = "sk_context_secret_key"
const createRequest = { name: "b", app_id: AppId.make("app_00000000-0000-4000-8000-000000000001"), image: { base: "debian" } }

/** The client services over an `HttpClient` answering every request with `answer`; counts the requests. */
const scripted = (
  answer: (request: Parameters<Parameters<typeof HttpClient.make>[0]>[0]) => Effect.Effect<
    HttpClientResponse.HttpClientResponse,
    HttpClientError.HttpClientError
  >,
  maxAttempts: number,
  baseUrl = "http://box.test/v1"
) => {
  const sent = { count: 0 }
  const layer = Layer.mergeAll(Boxes.Default, Secrets.Default, Clipboard.Default).pipe(
    Layer.provide(BoxkitConfig.layer({ apiKey, baseUrl, retry: { maxAttempts } })),
    Layer.provide(Layer.succeed(
      HttpClient.HttpClient,
      HttpClient.make((request) => Effect.suspend(() => {
        sent.count++
        return answer(request)
      }))
    ))
  )
  return { sent, layer }
}

/** An answer of `status` with `body` as JSON and `headers`. */
const json = (
  request: Parameters<typeof HttpClientResponse.fromWeb>[0],
  status: number,
  body: unknown,
  headers: Record<string, string> = {}
) =>
  Effect.succeed(HttpClientResponse.fromWeb(
    request,
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })
  ))

const envelope = (type: string, message: string, code: string | null = null) => ({
  error: { type, message, param: null, code }
})

/** The failure of `effect`, which is run forked while the TestClock moves a minute on. */
const failureAfterRetries = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(Effect.flip(effect))
    yield* TestClock.adjust("1 minute")
    return yield* Fiber.join(fiber)
  })

/** The first line of `Cause.pretty` for `error`: `name: message`. */
const prettyFirstLine = (error: unknown) => Cause.pretty(Cause.fail(error)).split("\n")[0]

describe("the context of a failed call", () => {
  it.effect("a typed API error after exhausted retries: 429 on boxes.create, attempt 4 of 4", () => {
    const { layer, sent } = scripted(
      (request) => json(request, 429, envelope("rate_limit_error", "Injected fault", "rate_limited"), { "retry-after": "1" }),
      4
    )
    return Effect.gen(function*() {
      const error = yield* failureAfterRetries(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)))
      expect(sent.count).toBe(4)
      expect(error).toBeInstanceOf(ApiError.RateLimitError)
      const rateLimited = error as ApiError.RateLimitError
      expect(rateLimited.context).toEqual({
        operation: "boxes.create",
        method: "POST",
        path: "/v1/boxes",
        attempts: 4,
        maxAttempts: 4
      })
      expect(rateLimited.message).toBe("Injected fault")
      expect(rateLimited.status).toBe(429)
      expect(prettyFirstLine(error)).toBe(
        "RateLimitError (429 rate_limit_error, code rate_limited) [boxes.create POST /v1/boxes, attempt 4 of 4]: Injected fault"
      )
      expect(String(error)).toContain("[boxes.create POST /v1/boxes, attempt 4 of 4]")
    }).pipe(Effect.provide(layer))
  })

  it.effect("TransportError: the path with its parameter, every attempt made", () => {
    const { layer, sent } = scripted(
      (request) =>
        Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause: new Error("socket hang up") })),
      3
    )
    return Effect.gen(function*() {
      const error = yield* failureAfterRetries(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")))
      expect(sent.count).toBe(3)
      expect(error).toBeInstanceOf(ApiError.TransportError)
      expect((error as ApiError.TransportError).context).toEqual({
        operation: "secrets.retrieve",
        method: "GET",
        path: "/v1/secrets/GITHUB_TOKEN",
        attempts: 3,
        maxAttempts: 3
      })
      expect(prettyFirstLine(error)).toMatch(/^TransportError \(GET .*\) \[secrets\.retrieve GET \/v1\/secrets\/GITHUB_TOKEN, attempt 3 of 3\]: /)
      // The API key is in no part of it.
      expect(`${prettyFirstLine(error)} ${JSON.stringify(error)}`).not.toContain(apiKey)
    }).pipe(Effect.provide(layer))
  })

  it.effect("TimeoutError: the first attempt timed out (30 s), the call's deadline (60 s) ended the second", () => {
    const { layer } = scripted(() => Effect.never, 2)
    return Effect.gen(function*() {
      const error = yield* failureAfterRetries(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(boxId)))
      expect(error).toBeInstanceOf(ApiError.TimeoutError)
      expect((error as ApiError.TimeoutError).context).toEqual({
        operation: "boxes.retrieve",
        method: "GET",
        path: `/v1/boxes/${boxId}`,
        attempts: 2,
        maxAttempts: 2
      })
      expect(prettyFirstLine(error)).toBe(
        `TimeoutError [boxes.retrieve GET /v1/boxes/${boxId}, attempt 2 of 2]: call did not finish within its deadline of 1m`
      )
    }).pipe(Effect.provide(layer))
  })

  it.effect("UnexpectedResponseError: an error status without envelope, not retried (attempt 1 of 3)", () => {
    const { layer, sent } = scripted((request) => json(request, 418, { teapot: true }), 3)
    return Effect.gen(function*() {
      const error = yield* failureAfterRetries(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")))
      expect(sent.count).toBe(1)
      expect(error).toBeInstanceOf(ApiError.UnexpectedResponseError)
      expect((error as ApiError.UnexpectedResponseError).context).toMatchObject({ operation: "secrets.retrieve", attempts: 1, maxAttempts: 3 })
      expect(prettyFirstLine(error)).toMatch(/^UnexpectedResponseError \(HTTP 418\) \[secrets\.retrieve GET \/v1\/secrets\/GITHUB_TOKEN, attempt 1 of 3\]: /)
    }).pipe(Effect.provide(layer))
  })

  it.effect("UnexpectedResponseError for an envelope the operation does not list: the context on it and on its cause", () => {
    const { layer } = scripted((request) => json(request, 409, envelope("conflict_error", "Busy.")), 3)
    return Effect.gen(function*() {
      const error = yield* failureAfterRetries(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")))
      expect(error).toBeInstanceOf(ApiError.UnexpectedResponseError)
      const unexpected = error as ApiError.UnexpectedResponseError
      expect(unexpected.context?.operation).toBe("secrets.retrieve")
      expect((unexpected.cause as ApiError.ConflictError).context).toEqual(unexpected.context)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a raw request (clipboard write): the path without the base URL, under a base URL with a path prefix", () => {
    const { layer } = scripted((request) => json(request, 404, envelope("not_found_error", "No such box.")), 3, "http://box.test/gateway/v1")
    return Effect.gen(function*() {
      const error = yield* failureAfterRetries(Effect.flatMap(Clipboard, (clipboard) => clipboard.writeText(boxId, "hi")))
      expect(error).toBeInstanceOf(ApiError.NotFoundError)
      expect((error as ApiError.NotFoundError).context).toEqual({
        operation: "clipboard.write",
        method: "PUT",
        path: `/v1/boxes/${boxId}/clipboard`,
        attempts: 1,
        maxAttempts: 3
      })
      expect((error as ApiError.NotFoundError).message).toBe("No such box.")
    }).pipe(Effect.provide(layer))
  })

  it.effect("ApiError.withContext gives a copy: the error it was given keeps no context and its name", () => {
    const shared = ApiError.make.notFound("Shared.")
    const { layer } = scripted((request) => json(request, 404, ApiError.toEnvelope(shared)), 1)
    return Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")))
      expect((error as ApiError.NotFoundError).context?.operation).toBe("secrets.retrieve")
      expect(shared.context).toBeUndefined()
      expect(ApiError.withContext(shared, { operation: "o", method: "GET", path: "/p", attempts: 1, maxAttempts: 1 }).name)
        .toBe("NotFoundError (404 not_found_error) [o GET /p, attempt 1 of 1]")
      expect(shared.name).toBe("NotFoundError (404 not_found_error)")
    }).pipe(Effect.provide(layer))
  })
})

describe("the context of a failed call, against the local service", () => {
  it.live("every answer a 429 (Retry-After 0): RateLimitError [boxes.create POST /v1/boxes, attempt 4 of 4]", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(Boxes, (boxes) => boxes.create(createRequest)))
      expect(error).toBeInstanceOf(ApiError.RateLimitError)
      expect((error as ApiError.RateLimitError).context).toEqual({
        operation: "boxes.create",
        method: "POST",
        path: "/v1/boxes",
        attempts: 4,
        maxAttempts: 4
      })
      expect(prettyFirstLine(error)).toMatch(
        /^RateLimitError \(429 rate_limit_error, code rate_limited\) \[boxes\.create POST \/v1\/boxes, attempt 4 of 4\]: Injected fault/
      )
    }).pipe(Effect.provide(BoxkitTesting.layer({
      settings: { faults: FaultInjection.settings({ rates: { "429": 1 }, retryAfter: 0 }) },
      retry: { maxAttempts: 4 }
    }))))
})

