/**
 * Every client operation fails with exactly the errors its endpoint lists in the contract, the one home of each
 * operation's errors: `Transport.operation` reads them from the endpoint's error schema. An envelope the endpoint does
 * not list becomes `UnexpectedResponseError` carrying it; one it lists stays typed.
 */
import { HttpApi, HttpClient, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Cause, Redacted } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { BoxkitConfig } from "../../src/Client/BoxkitConfig.js"
import { Secrets } from "../../src/Client/Secrets.js"
import * as Transport from "../../src/Client/Transport.js"
import { BoxServiceApi } from "../../src/Contract/Api.js"
import { boxId } from "../support/Fixtures.js"

/** A client whose every request is answered `status` with the envelope of `type`. */
const answering = (status: number, type: string) =>
  Layer.mergeAll(Boxes.Default, Secrets.Default).pipe(
    Layer.provide(BoxkitConfig.layer({
      apiKey: Redacted.make("sk_test"),
      baseUrl: "http://box.test/v1",
      retry: { maxAttempts: 1 }
    })),
    Layer.provide(Layer.succeed(
      HttpClient.HttpClient,
      HttpClient.make((request) =>
        Effect.succeed(HttpClientResponse.fromWeb(
          request,
          new Response(JSON.stringify({ error: { type, message: "scripted" } }), {
            status,
            headers: { "content-type": "application/json" }
          })
        ))
      )
    ))
  )

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

describe("the errors of each operation come from the contract", () => {
  it("every endpoint of the contract lists the common errors, and the idempotent ones list the conflict", () => {
    const seen: Array<string> = []
    HttpApi.reflect(BoxServiceApi, {
      onGroup() {},
      onEndpoint({ endpoint, group }) {
        const classes = Transport.errorsListedBy(group.identifier, endpoint.name)
        seen.push(`${group.identifier}.${endpoint.name}`)
        for (const common of [ApiError.InvalidRequestError, ApiError.AuthenticationError, ApiError.ServerError]) {
          expect(classes).toContain(common)
        }
      }
    })
    expect(seen.length).toBeGreaterThan(15)
    expect(Transport.errorsListedBy("boxes", "create")).toContain(ApiError.ConflictError)
    expect(Transport.errorsListedBy("clipboard", "write")).toContain(ApiError.NotImplementedError)
    expect(Transport.errorsListedBy("secrets", "retrieve")).not.toContain(ApiError.ConflictError)
    expect(() => Transport.errorsListedBy("boxes", "nope")).toThrow(/no endpoint boxes.nope/)
  })

  it.effect("a listed error stays typed: 409 conflict_error on pause is a ConflictError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.flatMap(Boxes, (boxes) => boxes.pause(boxId)))
      expect(failureOf(exit)).toBeInstanceOf(ApiError.ConflictError)
    }).pipe(Effect.provide(answering(409, "conflict_error"))))

  it.effect("an unlisted error is unexpected: 409 conflict_error on a secret read is an UnexpectedResponseError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")))
      const failure = failureOf(exit)
      expect(failure).toBeInstanceOf(ApiError.UnexpectedResponseError)
      expect((failure as ApiError.UnexpectedResponseError).cause).toBeInstanceOf(ApiError.ConflictError)
      expect((failure as ApiError.UnexpectedResponseError).message).toMatch(/not an answer this operation lists/)
    }).pipe(Effect.provide(answering(409, "conflict_error"))))
})
