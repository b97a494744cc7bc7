/**
 * `boxkit/testing` provided per test instead of per suite: `it.effect(name, () => program.pipe(Effect.provide(
 * BoxkitTesting.layer())))` runs under TestClock and still waits on the service in real time, and `it.live` works the
 * same way. (No `layer()` suite here: it would change this file's `it`.)
 */
import { expect, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import * as BoxkitTesting from "../../src/testing.js"

/** Creates a box, waits until it runs, and reads the service's state. */
const createAndAwait = (name: string) =>
  Effect.gen(function*() {
    const app = yield* (yield* Apps).find("testing-provide", { mintIfMissing: true })
    const boxes = yield* Boxes
    const created = yield* boxes.create({ name, app_id: app.id, image: { base: "debian" } })
    const box = yield* boxes.awaitStatus(created.value.box_id, "running")
    const state = yield* (yield* BoxkitTesting.TestService).state
    return { box, stored: state.boxes.filter((stored) => stored.name === name) }
  })

it.effect("Effect.provide(BoxkitTesting.layer()) under TestClock: awaitStatus passes on the real clock", () =>
  Effect.gen(function*() {
    const { box, stored } = yield* createAndAwait("provided")
    expect(box.status).toBe("running")
    expect(stored.map((entry) => entry.status)).toEqual(["running"])
    expect(yield* Clock.currentTimeMillis).toBe(0)
  }).pipe(Effect.provide(BoxkitTesting.layer())))

it.live("it.live with Effect.provide(BoxkitTesting.layer())", () =>
  Effect.gen(function*() {
    const { box, stored } = yield* createAndAwait("live")
    expect(box.status).toBe("running")
    expect(stored).toHaveLength(1)
    expect(yield* Clock.currentTimeMillis).toBeGreaterThan(0)
  }).pipe(Effect.provide(BoxkitTesting.layer())))
