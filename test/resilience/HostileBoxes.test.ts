/**
 * A hostile network, boxes: 500 box creations through the client against the local service with 30% injected
 * faults all succeed and leave exactly 500 boxes (none lost, none duplicated); then 500 upgrades all succeed and
 * restart each box exactly once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Boxes } from "../../src/Client/Boxes.js"
import * as Harness from "../support/Harness.js"
import { appId, attemptsOf, calls, callsOf, concurrency, expectReplaysAfterLostAnswers, report, run, state, stateWhen } from "./Hostile.js"

/** 500 box creations, 25 at a time. */
const createAll = Effect.gen(function*() {
  const boxes = yield* Boxes
  return yield* Effect.forEach(
    Array.from({ length: calls }, (_, i) => i),
    (i) => boxes.create({ name: `hostile-${i}`, app_id: appId, image: { base: "debian" } }),
    { concurrency }
  )
})

describe.each(Harness.variants({ stockClient: true }))("a hostile network: 30%% faults including resets after commit ($name)", (variant) => {
  it.live("500 box creations all succeed with exactly 500 boxes; then 500 upgrades each restart a box exactly once", () =>
    run(variant, (recorder) =>
      Effect.gen(function*() {
        // Creations.
        const createStarted = Date.now()
        const created = yield* createAll
        const createMillis = Date.now() - createStarted
        const afterCreate = yield* state
        expect(created).toHaveLength(calls)
        expect(new Set(created.map((result) => result.value.box_id)).size).toBe(calls)
        expect(afterCreate.boxes).toHaveLength(calls)
        expect(new Set(afterCreate.boxes.map((box: any) => box.name)).size).toBe(calls)
        expect(afterCreate.idempotency_keys).toBe(calls)
        expect(new Set(created.map((result) => result.idempotencyKey)).size).toBe(calls)
        for (const kind of ["429", "503", "503-no-retry-after", "reset-after-commit"]) {
          expect(afterCreate.faults.injected[kind], kind).toBeGreaterThan(0)
        }
        // Replays are bounded by the attempts that lost their answer as the client saw them (resets, and attempts
        // that timed out on a loaded machine), not by the resets injected.
        const createCalls = callsOf(recorder, "Boxes.create")
        expect(createCalls).toHaveLength(calls)
        const createReplays = expectReplaysAfterLostAnswers(createCalls, afterCreate.faults.requests)
        expect(createReplays.replayed).toBe(created.filter((result) => result.replayed).length)
        const createAttempts = attemptsOf(recorder, "Boxes.create")
        report("create box", createAttempts, createMillis, afterCreate.faults, createReplays)

        // Upgrades onto a new runtime: a running box restarts once per executed upgrade.
        const before = yield* stateWhen((s) => s.boxes.every((box: any) => box.status === "running"))
        const raised = yield* Harness.fetchRaw("/_local/runtime", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ guest_schema_version: 2 })
        })
        expect(raised.status).toBe(200)
        const boxes = yield* Boxes
        const started = Date.now()
        const results = yield* Effect.forEach(created, (result) => boxes.upgrade(result.value.box_id), { concurrency })
        const millis = Date.now() - started
        const after = yield* state
        expect(results.every((result) => result.value.applied && result.value.guest_schema_version === 2)).toBe(true)
        expect(after.boxes).toHaveLength(calls)
        for (const box of after.boxes) {
          expect(box.guest_schema_version).toBe(2)
          expect(box.boot_count).toBe(2)
        }
        expect(after.idempotency_keys).toBe(2 * calls)
        const upgradeCalls = callsOf(recorder, "Boxes.upgrade")
        expect(upgradeCalls).toHaveLength(calls)
        const replays = expectReplaysAfterLostAnswers(upgradeCalls, after.faults.requests - before.faults.requests)
        expect(replays.replayed).toBe(results.filter((result) => result.replayed).length)
        const attempts = attemptsOf(recorder, "Boxes.upgrade")
        report("upgrade", attempts, millis, {
          requests: after.faults.requests - before.faults.requests,
          injected: Object.fromEntries(
            Object.entries(after.faults.injected).map(([kind, n]) => [kind, (n as number) - before.faults.injected[kind]])
          )
        }, replays)
      })
    ), { timeout: 120_000 })
})
