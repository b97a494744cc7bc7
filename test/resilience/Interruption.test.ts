/**
 * Interruption and waiting over real HTTP: interrupting the caller (or a per-attempt timeout) aborts the request on
 * the server side, and waiting for a status fails with the last status observed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Exit, Fiber, Layer, Schedule } from "effect"
import { AppId } from "../../src/Domain/Ids.js"
import * as ApiError from "../../src/ApiError.js"
import { Boxes } from "../../src/Client/Boxes.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as Harness from "../support/Harness.js"

const appId = AppId.make("app_00000000-0000-4000-8000-000000000001")
const request = { name: "slow", app_id: appId, image: { base: "debian" } } as const

const state = Effect.map(Harness.fetchRaw("/_local/state"), (response) => response.json)

/** Polls `/_local/state` every 10 ms until `done` holds (at most 20 s). */
const stateWhen = (done: (state: any) => boolean) =>
  state.pipe(
    Effect.repeat(Schedule.spaced("10 millis").pipe(Schedule.whileInput((s: any) => !done(s)), Schedule.passthrough)),
    Effect.timeout("20 seconds")
  )

/**
 * Runs `program` against a service whose /v1 requests wait 30 s before running, with a client that has its own
 * HTTP dispatcher, closed before the server. (With the dispatcher shared through one layer, as
 * `Harness.serviceWithClientOn` does, the server's close waited about 4 s, undici's keep-alive timeout, after two
 * aborted attempts.)
 */
const withSlowService = <A, E, R>(variant: Harness.Variant, program: Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const service = yield* Layer.build(Harness.serviceOn(variant, { faults: FaultInjection.settings({ latency: Duration.seconds(30) }) }))
    const client = yield* Layer.build(Harness.clientOn(variant)).pipe(Effect.provide(service))
    return yield* Effect.provide(program, Context.merge(service, client) as Context.Context<R>)
  }))

describe.each(Harness.variants({ stockClient: true }))("interruption aborts the request on the server ($name)", (variant) => {
  it.live("interrupting the caller's fiber closes the connection; the server sees the abort and never runs the request", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const fiber = yield* Effect.fork(boxes.create(request))
      yield* stateWhen((s) => s.faults.requests === 1)
      expect((yield* state).faults.client_aborts).toBe(0)
      yield* Fiber.interrupt(fiber)
      const after = yield* stateWhen((s) => s.faults.client_aborts === 1)
      expect(after.boxes).toEqual([])
      expect(after.idempotency_keys).toBe(0)
    }).pipe((program) => withSlowService(variant, program)))

  it.live("a per-attempt timeout aborts its request on the server too", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const exit = yield* Effect.exit(
        boxes.create(request, { retry: { attemptTimeout: Duration.seconds(1), maxAttempts: 2, backoffBase: Duration.millis(1) } })
      )
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const error = Cause.squash(exit.cause)
        expect(error).toBeInstanceOf(ApiError.TimeoutError)
        expect(error).toMatchObject({ context: { attempts: 2, maxAttempts: 2 } })
      }
      // Every request of the two attempts that reached the service was aborted there. An attempt that timed out
      // before its request arrived (a loaded machine can hold the process past the timeout) never reached it, so the
      // service counts one or two requests, never a request that ran.
      const after = yield* stateWhen((s) => s.faults.requests >= 1 && s.faults.client_aborts === s.faults.requests)
      expect(after.faults.requests).toBeLessThanOrEqual(2)
      expect(after.boxes).toEqual([])
      expect(after.idempotency_keys).toBe(0)
    }).pipe((program) => withSlowService(variant, program)))
})

describe.each(Harness.variants({ stockClient: true }))("waiting ($name)", (variant) => {
  it.live("awaitStatus past its deadline fails with WaitTimeoutError carrying the last status observed", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const created = yield* boxes.create(request)
      const error = yield* Effect.flip(
        boxes.awaitStatus(created.value.box_id, "running", { timeout: Duration.millis(250), interval: Duration.millis(20) })
      )
      expect(error._tag).toBe("WaitTimeoutError")
      if (error._tag === "WaitTimeoutError") {
        expect(error.lastStatus).toBe("creating")
        expect(error.box_id).toBe(created.value.box_id)
        expect(Duration.toMillis(error.timeout)).toBe(250)
      }
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", { bootDelay: Duration.hours(1) }))))

  it.live("a scoped box is running inside its scope and terminated after it", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const box = yield* Effect.scoped(
        Effect.tap(boxes.scoped(request, { interval: Duration.millis(10) }), (box) => expect(box.status).toBe("running"))
      )
      const after = yield* boxes.retrieve(box.box_id)
      expect(after.status).toBe("terminated")
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", { bootDelay: Duration.millis(20) }))))

  it.live("a transport failure of an unsafe call surfaces as TransportError, not a hang", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      // reset-after-commit on every request: the create is committed, the answer lost; with one attempt allowed
      // the caller gets a TransportError quickly.
      const error = yield* Effect.flip(boxes.create(request, { retry: { maxAttempts: 1 } }))
      expect(error).toBeInstanceOf(ApiError.TransportError)
      expect(error.message).not.toContain("sk_acme_org")
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", {
      faults: FaultInjection.settings({ rates: { "reset-after-commit": 1 } })
    }))))
})
