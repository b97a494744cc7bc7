/**
 * The inspection page's clock (docs/ASSUMPTIONS.md "The virtual clock"), in a real headless browser: on a virtual
 * clock `/_local/` shows the clock and an "advance" control, which moves the service's clock by the seconds entered.
 */
import { expect } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Browser from "../support/Browser.js"
import * as Harness from "../support/Harness.js"
import { layer } from "../support/SuiteLayer.js"
import * as Clocked from "../clock/Clocked.js"

const origin = Effect.map(LocalService.baseUrl, (baseUrl) => new URL(baseUrl).origin)

const page = Effect.acquireRelease(
  Effect.flatMap(Browser.Browser, (browser) => Effect.promise(() => browser.newPage({ viewport: { width: 1280, height: 900 } }))),
  (opened) => Effect.promise(() => opened.close())
)

layer(Layer.mergeAll(Clocked.service(Harness.fast.server, "memory"), Browser.layer), {
  timeout: 60_000,
  excludeTestServices: true
})("the clock on the inspection page", (it) => {
  it.scoped("/_local/ shows the virtual clock; its advance control moves it", () =>
    Effect.gen(function*() {
      const at = yield* origin
      const tab = yield* page
      yield* Effect.promise(() => tab.goto(`${at}/_local/`))
      yield* Effect.promise(() => tab.getByText(/^clock virtual · /).waitFor())
      yield* Effect.promise(() => tab.locator("#advance-seconds").fill("3600"))
      yield* Effect.promise(() => tab.getByRole("button", { name: "advance" }).click())
      yield* Effect.promise(() => tab.getByText(/^clock virtual \+3600 s · /).waitFor())
      expect((yield* Clocked.readClock).offset_seconds).toBe(3600)
    }), 60_000)
})
