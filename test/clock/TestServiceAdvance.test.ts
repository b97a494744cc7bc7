/**
 * `boxkit/testing`'s `TestService.advance` (docs/ASSUMPTIONS.md "The virtual clock", "The test layer"): the README's
 * example, a box that ends at its lifetime and a webhook that gives up after its last round, under the test's
 * `TestClock` (a suite layer) and under the live clock (`it.live` with a layer of its own); and `TestService.clock`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { Responses } from "../../src/Client/Responses.js"
import * as BoxkitTesting from "../../src/testing.js"
import * as SuiteLayer from "../support/SuiteLayer.js"

/** Creates a box that ends after an hour, advances an hour, and reads it: terminated. */
const boxEndsAtItsLifetime = Effect.gen(function*() {
  const service = yield* BoxkitTesting.TestService
  const app = yield* (yield* Apps).find("tests", { mintIfMissing: true })
  const boxes = yield* Boxes
  const created = yield* boxes.create({
    name: "short-lived",
    app_id: app.id,
    image: { base: "debian" },
    max_lifetime_seconds: 3600
  })
  yield* service.advance("59 minutes")
  expect((yield* boxes.retrieve(created.value.box_id)).status).not.toBe("terminated")
  yield* service.advance("1 minute")
  expect((yield* boxes.retrieve(created.value.box_id)).status).toBe("terminated")
})

/** A receiver that always answers 500: after two hours of the service's clock it got every round, 60 requests. */
const webhookGivesUp = Effect.gen(function*() {
  let received = 0
  const receiver = createServer((_request, response) => {
    received++
    response.writeHead(500).end()
  })
  yield* Effect.acquireRelease(
    Effect.promise(() => new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))),
    () => Effect.sync(() => receiver.close())
  )
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  yield* (yield* Responses).create({ model: "boxkit-local", input: "nobody listens" }, { completionWebhook: { url } })
  const clock = yield* (yield* BoxkitTesting.TestService).advance("2 hours")
  expect(received).toBe(60)
  expect(clock.mode).toBe("virtual")
  expect(clock.offset_seconds).toBeGreaterThanOrEqual(7200)
})

SuiteLayer.layer(BoxkitTesting.layer())("TestService.advance under the test's TestClock", (it) => {
  it.effect("a box ends at its lifetime", () => boxEndsAtItsLifetime)
  it.scoped("a webhook gives up after its last round", () => webhookGivesUp)
})

describe("TestService.advance under the live clock", () => {
  it.live("a box ends at its lifetime; the clock reads the offset", () =>
    Effect.gen(function*() {
      yield* boxEndsAtItsLifetime
      const clock = yield* (yield* BoxkitTesting.TestService).clock
      expect(clock).toMatchObject({ mode: "virtual", offset_seconds: expect.any(Number) })
      expect(clock.offset_seconds).toBeGreaterThanOrEqual(3600)
    }).pipe(Effect.provide(BoxkitTesting.layer())))

  it.live("a webhook gives up after its last round", () =>
    Effect.scoped(webhookGivesUp).pipe(Effect.provide(BoxkitTesting.layer())))
})
