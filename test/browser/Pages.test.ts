/**
 * The service's pages as a person sees them (README "Pages: `/docs` and `/_local/`"), in a real headless browser
 * (Debian's chromium through playwright-core): `/docs` lists every operation of the contract without a key and loads
 * nothing from the network; `/_local/` shows a box that was just created, with its status changing, and the request
 * that created it with its idempotency key. Each test saves a screenshot (test/support/Browser.ts).
 */
import { expect } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Boxes } from "../../src/Client/Boxes.js"
import { Apps } from "../../src/Client/Apps.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { routes } from "../../src/Server/http/Routes.js"
import * as Browser from "../support/Browser.js"
import * as Harness from "../support/Harness.js"
import { layer } from "../support/SuiteLayer.js"

/** The service's origin (`http://127.0.0.1:PORT`). */
const origin = Effect.map(LocalService.baseUrl, (baseUrl) => new URL(baseUrl).origin)

/** A page of the browser, closed with the scope. */
const page = Effect.acquireRelease(
  Effect.flatMap(Browser.Browser, (browser) => Effect.promise(() => browser.newPage({ viewport: { width: 1280, height: 900 } }))),
  (opened) => Effect.promise(() => opened.close())
)

layer(Layer.mergeAll(Harness.serviceOn(Harness.fast), Browser.layer), { timeout: 60_000, excludeTestServices: true })("pages in a browser", (it) => {
  it.scoped("/docs: every operation listed, no key, nothing from the network", () =>
    Effect.gen(function*() {
      const at = yield* origin
      const tab = yield* page
      const elsewhere: Array<string> = []
      tab.on("request", (request) => {
        if (!request.url().startsWith(at) && !request.url().startsWith("data:")) elsewhere.push(request.url())
      })
      const answer = yield* Effect.promise(() => tab.goto(`${at}/docs`))
      expect(answer?.status()).toBe(200)
      yield* Effect.promise(() => tab.locator(".opblock").first().waitFor())
      const listed = yield* Effect.promise(() => tab.locator(".opblock .opblock-summary-path").allTextContents())
      const paths = listed.map((text) => text.replace(/\u200b/g, "").trim())
      for (const route of routes) {
        const templated = route.pattern.source.replace(/^\^|\$$/g, "").replace(/\\\//g, "/")
        expect(paths.some((path) => new RegExp(`^${templated.replace(/\[\^\/\]\+/g, "\\{[a-z_]+\\}")}$`).test(path)), route.name).toBe(true)
      }
      expect(yield* Effect.promise(() => tab.getByText("Create a box").first().isVisible())).toBe(true)
      yield* Effect.promise(() => tab.screenshot({ path: Browser.screenshotPath("docs.png") }))
      expect(elsewhere).toEqual([])
    }))

  it.scoped("/_local/: a new box appears with its status, which changes; its request with the idempotency key", () =>
    Effect.gen(function*() {
      const at = yield* origin
      const tab = yield* page
      yield* Effect.promise(() => tab.goto(`${at}/_local/`))
      yield* Effect.promise(() => tab.getByText(/^updated /).waitFor())

      const key = `browser-${crypto.randomUUID()}`
      const box = yield* Effect.gen(function*() {
        const app = yield* (yield* Apps).find("browser-app", { mintIfMissing: true })
        const boxes = yield* Boxes
        const created = yield* boxes.create(
          { name: "browser-box", app_id: app.id, image: { base: "debian" }, ingress_ports: [{ guest_port: 8080 }] },
          { idempotencyKey: key }
        )
        return yield* boxes.awaitStatus(created.value.box_id)
      }).pipe(Effect.provide(Harness.clientOn(Harness.fast)))

      const row = tab.locator(`tr[data-box-id="${box.box_id}"]`)
      yield* Effect.promise(() => row.locator("td.status", { hasText: "running" }).waitFor())
      expect(yield* Effect.promise(() => row.textContent())).toContain("8080/http https://")
      const request = tab.locator("#requests tr", { hasText: key })
      expect(yield* Effect.promise(() => request.textContent())).toMatch(/POST\/v1\/boxes201/)

      yield* Effect.flatMap(Boxes, (boxes) => boxes.pause(box.box_id)).pipe(Effect.provide(Harness.clientOn(Harness.fast)))
      yield* Effect.promise(() => row.locator("td.status", { hasText: "paused" }).waitFor())
      yield* Effect.promise(() => tab.screenshot({ path: Browser.screenshotPath("inspection.png"), fullPage: true }))
    }))
})
