/**
 * `boxkit/testing` as a user's `@effect/vitest` suite meets it: `layer(BoxkitTesting.layer())` (test/support/SuiteLayer.ts,
 * the same runtime as `@effect/vitest`'s `layer` without its change to the shared `it`) gives the suite TestClock, which stands still, yet the embedded service and the client services of the layer run on the real clock,
 * so waiting on the service (`awaitStatus`) passes without `TestClock.adjust`, while the test's
 * own clock stays where it was. The other ways to use the layer: TestingLayerProvide.test.ts; retries:
 * TestingLayerRetries.test.ts, with `awaitCompletion` (each `layer()` suite in a file of its own).
 */
import { expect } from "@effect/vitest"
import { Clock, Effect, Fiber, Option, Redacted } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import * as BoxkitTesting from "../../src/testing.js"
import { layer } from "../support/SuiteLayer.js"

/** A pause on the real clock (the test's clock is TestClock). */
const realPause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 20)))

layer(BoxkitTesting.layer())("boxkit/testing under TestClock", (it) => {
  it.effect("awaitStatus waits for a box to run on the real clock; the test's clock stands still", () =>
    Effect.gen(function*() {
      const app = yield* (yield* Apps).find("testing-layer", { mintIfMissing: true })
      const boxes = yield* Boxes
      const created = yield* boxes.create({ name: "testing-layer", app_id: app.id, image: { base: "debian" } })
      const box = yield* boxes.awaitStatus(created.value.box_id, "running")
      expect(box.status).toBe("running")
      // TestClock starts at the epoch and nothing moved it: the waits above did not use it.
      expect(yield* Clock.currentTimeMillis).toBe(0)
    }))

  it.effect("the test's own sleeps keep TestClock: a sleep beside the client does not pass by itself", () =>
    Effect.gen(function*() {
      const sleeping = yield* Effect.fork(Effect.sleep("1 second"))
      const app = yield* (yield* Apps).find("testing-layer", { mintIfMissing: true })
      expect(app.name).toBe("testing-layer")
      yield* realPause
      expect(Option.isNone(yield* Fiber.poll(sleeping))).toBe(true)
      yield* Fiber.interrupt(sleeping)
    }))

  it.effect("TestService: the address and key the client uses, and the service's state, typed", () =>
    Effect.gen(function*() {
      const service = yield* BoxkitTesting.TestService
      expect(service.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
      expect(Redacted.value(service.apiKey)).toBe("sk_acme_org")
      const state: BoxkitTesting.LocalState = yield* service.state
      expect(state.organizations.length).toBeGreaterThan(0)
      const stored = state.boxes.find((box) => box.name === "testing-layer")
      expect(stored?.status).toBe("running")
      expect(stored?.app_id).toBe(state.apps.find((app) => app.name === "testing-layer")?.id)
      expect(state.recent_requests.some((request) => request.path.endsWith("/apps/find"))).toBe(true)
      expect(state.faults.injected[503]).toBe(0)
    }))
})
