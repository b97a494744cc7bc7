/**
 * `Transport.call` on the live clock with the toolkit's own HTTP client (the path where the attempt's timeout and the
 * call's deadline are one plain timer in the client, not a racing fiber) and, in the `stock-client` project, with
 * `NodeHttpClient.layerUndici` (the stock path: `Effect.timeoutFail`), so both are held to the same outcomes
 * (docs/decisions/0006-client-own-code-or-stock.md), over real HTTP against a service whose
 * requests hang: the deadline ends the call with the deadline's `TimeoutError` and aborts the request on the server;
 * per-attempt timeouts are retried up to `maxAttempts`, each attempt aborted; a fast call is not disturbed and
 * leaves no deadline behind.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Layer, Schedule } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import type { BoxId } from "../../src/Domain/Ids.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as Harness from "../support/Harness.js"

const state = Effect.map(Harness.fetchRaw("/_local/state"), (response) => response.json)
const stateWhen = (done: (state: any) => boolean) =>
  state.pipe(
    Effect.repeat(Schedule.spaced("10 millis").pipe(Schedule.whileInput((s: any) => !done(s)), Schedule.passthrough)),
    Effect.timeout("10 seconds")
  )

/** Runs `program` against a service whose /v1 requests wait 30 s, with a client of its own (closed first). */
const withSlowService = <A, E, R>(
  variant: Harness.Variant,
  retry: Parameters<typeof Harness.clientOn>[2],
  program: Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const service = yield* Layer.build(Harness.serviceOn(variant, { faults: FaultInjection.settings({ latency: Duration.seconds(30) }) }))
    const client = yield* Layer.build(Harness.clientOn(variant, "sk_acme_org", retry)).pipe(Effect.provide(service))
    return yield* Effect.provide(program, Context.merge(service, client) as Context.Context<R>)
  }))

const boxId = "sb_00000000-0000-4000-8000-00000000beef" as BoxId

/** The toolkit's own `HttpClient` (its own timer) and the stock one (`Effect.timeoutFail`), on the fast path. */
const clients = [Harness.fast, Harness.variant("fast", { client: "stock" })]

describe.each(clients)("Transport.call with the $client client on the live clock", (variant) => {
  it.live("the deadline ends the call with its TimeoutError after about `deadline`, and the server sees the abort", () =>
    withSlowService(
      variant,
      { deadline: Duration.millis(300), attemptTimeout: Duration.seconds(10) },
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const started = Date.now()
        const exit = yield* Effect.exit(boxes.retrieve(boxId))
        const elapsed = Date.now() - started
        expect(Exit.isFailure(exit)).toBe(true)
        const failure = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(failure).toBeInstanceOf(ApiError.TimeoutError)
        expect(Duration.toMillis((failure as ApiError.TimeoutError).timeout)).toBe(300)
        expect((failure as ApiError.TimeoutError).message).toContain("deadline")
        expect(elapsed).toBeGreaterThanOrEqual(290)
        expect(elapsed).toBeLessThan(2000)
        const after = yield* stateWhen((s) => s.faults.client_aborts === 1)
        expect(after.faults.requests).toBe(1)
      })
    ))

  it.live("attempt timeouts are retried with the same request until maxAttempts, each attempt aborted", () =>
    withSlowService(
      variant,
      { attemptTimeout: Duration.millis(300), maxAttempts: 3, backoffBase: Duration.millis(1), deadline: Duration.seconds(20) },
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const exit = yield* Effect.exit(boxes.retrieve(boxId))
        const failure = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(failure).toBeInstanceOf(ApiError.TimeoutError)
        expect((failure as ApiError.TimeoutError).message).toBe("attempt timed out after 300ms")
        const after = yield* stateWhen((s) => s.faults.client_aborts === 3)
        expect(after.faults.requests).toBe(3)
      })
    ))

  it.live("a call that answers in time is not disturbed, and its deadline does not outlive it", () =>
    Effect.gen(function*() {
      const apps = yield* Apps
      // Calls shorter than their 200 ms attempt timeout, one after another past that time: none is cut short.
      for (let index = 0; index < 20; index++) {
        const app = yield* apps.find("deadline-app", { mintIfMissing: true })
        expect(app.name).toBe("deadline-app")
        yield* Effect.sleep("15 millis")
      }
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", {}, { attemptTimeout: Duration.millis(200) }))))
})
