/**
 * `Transport.withResponse`: any client operation's value with the status and headers of the answer it came from
 * (`{ value, response: { status, headers } }`), on the contract's requests and raw ones; after retries, the answer
 * that succeeded; failures unchanged; nested uses both see the answer; an effect without an HTTP answer dies.
 */
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Redacted, TestClock } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { BoxkitConfig } from "../../src/Client/BoxkitConfig.js"
import { Clipboard } from "../../src/Client/Clipboard.js"
import { Secrets } from "../../src/Client/Secrets.js"
import * as Transport from "../../src/Client/Transport.js"
import { AppId } from "../../src/Domain/Ids.js"
import * as BoxkitTesting from "../../src/testing.js"
import { boxId } from "../support/Fixtures.js"

const secret = (name: string) => ({
  org_id: "org_1",
  name,
  created_at: "2026-11-22T10:00:00.000Z",
  updated_at: "2026-11-22T10:00:00.000Z"
})

/**
 * Secrets and Clipboard over an `HttpClient` whose first answer is a 503 without `Retry-After` and whose next ones
 * succeed, each with `x-answer: <its number>`.
 */
const firstUnavailable = () => {
  let answers = 0
  return Layer.mergeAll(Secrets.Default, Clipboard.Default).pipe(
    Layer.provide(BoxkitConfig.layer({ apiKey: "sk_test", baseUrl: "http://box.test/v1" })),
    Layer.provide(Layer.succeed(
      HttpClient.HttpClient,
      HttpClient.make((request) =>
        Effect.sync(() => {
          answers++
          const [status, body] = answers === 1
            ? [503, { error: { type: "server_error", message: "Busy.", param: null, code: null } }]
            : [200, request.url.endsWith("/clipboard") ? {} : secret("GITHUB_TOKEN")]
          return HttpClientResponse.fromWeb(
            request,
            new Response(JSON.stringify(body), {
              status,
              headers: { "content-type": "application/json", "x-answer": String(answers) }
            })
          )
        })
      )
    ))
  )
}

/** `effect` run forked while the TestClock moves a minute on (for the retry's backoff). */
const afterRetries = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    yield* TestClock.adjust("1 minute")
    return yield* Fiber.join(fiber)
  })

describe("Transport.withResponse over a scripted HttpClient", () => {
  it.effect("after a retry: the value and the answer that succeeded (status, headers)", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets
      const { response, value } = yield* afterRetries(secrets.retrieve("GITHUB_TOKEN").pipe(Transport.withResponse))
      expect(value.name).toBe("GITHUB_TOKEN")
      expect(response.status).toBe(200)
      expect(response.headers["x-answer"]).toBe("2")
      expect(response.headers["content-type"]).toBe("application/json")
    }).pipe(Effect.provide(firstUnavailable())))

  it.effect("a raw request (clipboard write)", () =>
    Effect.gen(function*() {
      const clipboard = yield* Clipboard
      const { response, value } = yield* afterRetries(Transport.withResponse(clipboard.writeText(boxId, "hi")))
      expect(value).toEqual({})
      expect(response.status).toBe(200)
      expect(response.headers["x-answer"]).toBe("2")
    }).pipe(Effect.provide(firstUnavailable())))

  it.effect("nested: the inner and the outer both see the answer", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets
      const outer = yield* afterRetries(Transport.withResponse(Transport.withResponse(secrets.retrieve("GITHUB_TOKEN"))))
      expect(outer.value.response.headers["x-answer"]).toBe("2")
      expect(outer.response.headers["x-answer"]).toBe("2")
    }).pipe(Effect.provide(firstUnavailable())))

  it.effect("an effect that received no HTTP answer dies, naming withResponse", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Transport.withResponse(Effect.succeed(1)))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "").toContain("Transport.withResponse")
    }))
})

describe("Transport.withResponse against the local service", () => {
  const app = AppId.make("app_00000000-0000-4000-8000-000000000001")

  it.live("a replayed create carries idempotent-replayed: true; a failure is the operation's own", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const secrets = yield* Secrets
      const request = { name: "with-response", app_id: app, image: { base: "debian" } }
      const first = yield* Transport.withResponse(boxes.create(request, { idempotencyKey: "with-response-1" }))
      const again = yield* Transport.withResponse(boxes.create(request, { idempotencyKey: "with-response-1" }))
      expect(first.response.status).toBe(again.response.status)
      expect(first.response.headers["idempotent-replayed"]).toBeUndefined()
      expect(again.response.headers["idempotent-replayed"]).toBe("true")
      expect(again.value.value.box_id).toBe(first.value.value.box_id)
      yield* secrets.create("WITH_RESPONSE", Redacted.make("v"))
      const read = yield* Transport.withResponse(secrets.retrieve("WITH_RESPONSE"))
      expect(read.value.name).toBe("WITH_RESPONSE")
      expect(read.response.status).toBe(200)
      const missing = yield* Effect.flip(Transport.withResponse(secrets.retrieve("NO_SUCH_SECRET")))
      expect(missing).toBeInstanceOf(ApiError.NotFoundError)
    }).pipe(Effect.provide(BoxkitTesting.layer())))
})
