/**
 * `boxkit/testing` as a user's `@effect/vitest` suite meets it (issue 11): `layer(BoxkitTesting.layer())` gives the
 * suite TestClock, yet the embedded service runs on the real clock (a box boots while the test's clock stands still);
 * the client's own waits follow the test's clock.
 */
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Redacted, TestClock } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import * as BoxkitTesting from "../../src/testing.js"

/** A pause on the real clock (the test's clock is TestClock). */
const realPause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 20)))

layer(BoxkitTesting.layer())("boxkit/testing under TestClock", (it) => {
  it.effect("the service boots a box on the real clock while the test's clock stands still", () =>
    Effect.gen(function*() {
      const app = yield* (yield* Apps).find("testing-layer", { mintIfMissing: true })
      const boxes = yield* Boxes
      const created = yield* boxes.create({ name: "testing-layer", app_id: app.id, image: { base: "debian" } })
      let status: string = created.value.status
      for (let round = 0; round < 500 && status !== "running"; round++) {
        yield* realPause
        status = (yield* boxes.retrieve(created.value.box_id)).status
      }
      expect(status).toBe("running")
    }))

  it.effect("the client's waits follow the test's clock: awaitStatus passes its deadline only when the clock moves", () =>
    Effect.gen(function*() {
      const app = yield* (yield* Apps).find("testing-layer", { mintIfMissing: true })
      const boxes = yield* Boxes
      const created = yield* boxes.create({ name: "testing-wait", app_id: app.id, image: { base: "debian" } })
      // Waiting for a status the box never reaches: under TestClock the wait ends only as the test moves the clock.
      // (The reads' own timeouts are set far away, so that only the wait's deadline can end it.)
      const far = Duration.hours(1)
      const waiting = yield* Effect.fork(Effect.flip(boxes.awaitStatus(created.value.box_id, "paused", {
        timeout: Duration.seconds(10),
        retry: { attemptTimeout: far, deadline: far }
      })))
      yield* realPause
      expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
      let moved = 0
      while (Option.isNone(yield* Fiber.poll(waiting)) && moved < 2_000) {
        yield* TestClock.adjust("1 second")
        moved++
        yield* realPause
      }
      const error = yield* Fiber.join(waiting)
      expect(moved).toBeGreaterThanOrEqual(10)
      expect(error._tag).toBe("WaitTimeoutError")
    }))

  it.effect("TestService: the address and key the client uses, and the service's state", () =>
    Effect.gen(function*() {
      const service = yield* BoxkitTesting.TestService
      expect(service.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
      expect(Redacted.value(service.apiKey)).toBe("sk_acme_org")
      const state = (yield* service.state) as { readonly organizations?: ReadonlyArray<unknown> }
      expect(state.organizations?.length).toBeGreaterThan(0)
    }))
})
