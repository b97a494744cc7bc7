/**
 * The failure report of every command and the errors as a library user logs them (docs/ASSUMPTIONS.md "Errors on the
 * command line and in logs"): a 404, a 409 on a reused idempotency key, a transport timeout, a missing setting.
 * `Cause.pretty` shows the status, type, code and param with the message, once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigError, Duration, Effect, Exit, Option } from "effect"
import { AppId } from "../../src/Domain/Ids.js"
import * as ApiError from "../../src/ApiError.js"
import * as Failure from "../../src/Cli/Failure.js"
import * as StateStore from "../../src/Server/state/StateStore.js"
import * as SqlDriver from "../../src/Sql/SqlDriver.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { Secrets } from "../../src/Client/Secrets.js"
import * as Transport from "../../src/Client/Transport.js"
import * as BoxkitTesting from "../../src/testing.js"

const report = (error: unknown) => Failure.report(Cause.fail(error), { command: "demo", verbose: false })

const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => (Exit.isFailure(exit) ? exit.cause : Cause.empty))

const app = AppId.make("app_00000000-0000-4000-8000-000000000001")

describe("errors as a person reads them", () => {
  it.effect("404: status and type with the message, in the report and in Cause.pretty, once", () =>
    Effect.gen(function*() {
      const cause = yield* failureOf(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("NO_SUCH_SECRET")))
      const pretty = Cause.pretty(cause)
      const first = "NotFoundError (404 not_found_error) [secrets.retrieve GET /v1/secrets/NO_SUCH_SECRET, attempt 1 of 6]: " +
        "No secret named NO_SUCH_SECRET in this organization."
      expect(pretty.split("\n")[0]).toBe(first)
      expect(pretty.split("No secret named").length).toBe(2)
      const error = Option.getOrThrow(Cause.failureOption(cause))
      expect(error.message).toBe("No secret named NO_SUCH_SECRET in this organization.")
      expect(report(error)).toEqual({
        lines: ["boxkit demo: 404 not_found_error: No secret named NO_SUCH_SECRET in this organization."],
        exitCode: 1
      })
    }).pipe(Effect.provide(BoxkitTesting.layer())))

  it.effect("409 on a reused idempotency key: the param named, and the fix", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      yield* boxes.create({ name: "first", app_id: app, image: { base: "debian" } }, { idempotencyKey: "reused-key" })
      const cause = yield* failureOf(
        boxes.create({ name: "second", app_id: app, image: { base: "debian" } }, { idempotencyKey: "reused-key" })
      )
      const error = Option.getOrThrow(Cause.failureOption(cause))
      expect(Cause.pretty(cause).split("\n")[0]).toBe(
        `ConflictError (409 conflict_error, param Idempotency-Key) [boxes.create POST /v1/boxes, attempt 1 of 6]: ${error.message}`
      )
      expect(report(error)).toEqual({
        lines: [
          `boxkit demo: the idempotency key was already used for another request (409 conflict_error, param Idempotency-Key): ${error.message}`,
          "fix: repeat the first request unchanged, or use a new --idempotency-key for new work"
        ],
        exitCode: 1
      })
    }).pipe(Effect.provide(BoxkitTesting.layer())))

  it.effect("a transport timeout: what ran out, and the fix", () =>
    Effect.gen(function*() {
      const cause = yield* failureOf(
        Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")).pipe(
          Transport.withRetry({ deadline: Duration.millis(0), attemptTimeout: Duration.millis(0) })
        )
      )
      const error = Option.getOrThrow(Cause.failureOption(cause))
      expect(error).toBeInstanceOf(ApiError.TimeoutError)
      expect(Cause.pretty(cause).split("\n")[0]).toBe(
        "TimeoutError [secrets.retrieve GET /v1/secrets/GITHUB_TOKEN, no attempt of 6 made]: call did not finish within its deadline of 0"
      )
      expect(report(error).lines).toEqual([
        "boxkit demo: no answer in time: call did not finish within its deadline of 0",
        "fix: check that the service is up and not overloaded"
      ])
    }).pipe(Effect.provide(BoxkitTesting.layer())))

  it("a transport failure names the request; an error status without envelope names the status", () => {
    const transport = new ApiError.TransportError({ message: "connect ECONNREFUSED 127.0.0.1:9", method: "GET", url: "http://127.0.0.1:9/v1/secrets/X" })
    expect(Cause.pretty(Cause.fail(transport)).split("\n")[0]).toBe(
      "TransportError (GET http://127.0.0.1:9/v1/secrets/X): connect ECONNREFUSED 127.0.0.1:9"
    )
    const unexpected = new ApiError.UnexpectedResponseError({ message: "HTTP 502 without an error envelope", status: 502 })
    expect(Cause.pretty(Cause.fail(unexpected)).split("\n")[0]).toBe("UnexpectedResponseError (HTTP 502): HTTP 502 without an error envelope")
  })

  it("a missing setting: the variable named, exit 1", () => {
    const missing = ConfigError.MissingData(["BOX_API_KEY"], "Expected BOX_API_KEY to exist in the process context")
    expect(report(missing)).toEqual({
      lines: [
        "boxkit demo: BOX_API_KEY is not set",
        "fix: set it in the environment, or pass the matching flag (see --help)"
      ],
      exitCode: 1
    })
  })

  it("with verbose: the whole cause after the report; without: no stack", () => {
    const error = ApiError.make.notFound("No box sb_x.")
    const quiet = Failure.report(Cause.fail(error), { command: "demo", verbose: false })
    expect(quiet.lines.join("\n")).not.toMatch(/^\s+at /m)
    const verbose = Failure.report(Cause.die(new Error("boom")), { command: "serve", verbose: true })
    expect(verbose.lines[0]).toBe("boxkit serve: boom")
    expect(verbose.lines.join("\n")).toMatch(/^\s+at /m)
  })
})

describe("a damaged SQLite file (docs/ASSUMPTIONS.md \"Durable state\")", () => {
  it("is refused in one line naming the file and what to do, even when SQLite's check report spans lines", () => {
    // What PRAGMA quick_check answered for 40 KiB of random bytes in the middle of a used database file.
    const found = "*** in database main ***\nTree 16 page 60: btreeInitPage() returns error code 11\n" +
      "Tree 16 page 61 cell 3: invalid page number 4242\n" + "x".repeat(400)
    const error = new StateStore.StateStoreError({ message: SqlDriver.damagedFileError("/data/boxkit.db", found).message })
    const { exitCode, lines } = Failure.report(Cause.fail(error), { command: "serve", verbose: false })
    expect(exitCode).toBe(Failure.failureExitCode)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^boxkit serve: cannot open the state store: the SQLite file \/data\/boxkit\.db is damaged \(\*\*\* in database main \*\*\* Tree 16 page 60/)
    expect(lines[0]).toContain(SqlDriver.damagedFileRemedy)
    expect(lines[0].length).toBeLessThan(500)
  })
})
