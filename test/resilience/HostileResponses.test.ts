/**
 * A hostile network, model responses: 500 background responses submitted through the client against the local
 * service with 30% injected faults are all accepted exactly once and all complete.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { Responses } from "../../src/Client/Responses.js"
import { attemptsOf, calls, callsOf, concurrency, expectReplaysAfterLostAnswers, report, run, state, stateWhen } from "./Hostile.js"
import * as Harness from "../support/Harness.js"

describe.each(Harness.variants({ stockClient: true }))("a hostile network: 30%% faults including resets after commit ($name)", (variant) => {
  it.live("500 background responses all accepted once and all completed", () =>
    run(variant, (recorder) =>
      Effect.gen(function*() {
        const responses = yield* Responses
        const started = Date.now()
        const submitted = yield* Effect.forEach(
          Array.from({ length: calls }, (_, i) => i),
          (i) => responses.submit({ model: "boxkit-local", input: `hostile ${i}` }),
          { concurrency }
        )
        const millis = Date.now() - started
        const accepted = yield* state
        expect(accepted.responses).toHaveLength(calls)
        expect(new Set(submitted.map((result) => result.value.id)).size).toBe(calls)
        expect(accepted.idempotency_keys).toBe(calls)
        // Replays are bounded by the attempts that lost their answer as the client saw them (resets, and attempts
        // that timed out on a loaded machine), not by the resets injected.
        const submitCalls = callsOf(recorder, "Responses.submit")
        expect(submitCalls).toHaveLength(calls)
        const replays = expectReplaysAfterLostAnswers(submitCalls, accepted.faults.requests)
        expect(replays.replayed).toBe(submitted.filter((result) => result.replayed).length)
        const attempts = attemptsOf(recorder, "Responses.submit")
        report("background response", attempts, millis, accepted.faults, replays)
        yield* stateWhen((s) => s.responses.every((response: any) => response.status === "completed"))
        // Every fifth response is read back through the client (GETs under the same faults).
        const finished = yield* Effect.forEach(
          submitted.filter((_, i) => i % 5 === 0),
          (result) => responses.awaitCompletion(result.value.id, { interval: Duration.millis(10) }),
          { concurrency }
        )
        expect(finished.every((response) => response.status === "completed")).toBe(true)
        const after = yield* state
        expect(after.responses).toHaveLength(calls)
        expect(after.responses.every((response: any) => response.status === "completed")).toBe(true)
      })
    ), { timeout: 120_000 })
})
