/**
 * The pages beside `/v1` (README "Pages: `/docs` and `/_local/`"; docs/ASSUMPTIONS.md "Local service"), on both
 * serving paths: `/docs` answers without a key with the reference page (Swagger UI inlined, the contract's document
 * embedded); `/_local/` answers the inspection page on loopback with a policy that lets it load nothing from
 * elsewhere, refuses a foreign page, and `/_local/state` lists the recent `/v1` requests with their idempotency keys
 * and replays (never an API key).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Harness from "../support/Harness.js"

const get = (path: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    Effect.promise(async () => {
      const response = await fetch(`${new URL(baseUrl).origin}${path}`, { headers })
      return { status: response.status, headers: response.headers, text: await response.text() }
    }))

const createBox = (key: string) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    Effect.promise(() =>
      fetch(`${baseUrl}/boxes`, {
        method: "POST",
        headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ name: "pages-box", app_id: "app_00000000-0000-4000-8000-000000000001", image: { base: "debian" } })
      }).then((response) => response.status)
    ))

describe.each(Harness.variants())("pages beside /v1 ($name)", (variant) => {
  it.scopedLive("/docs without a key: the reference page, its assets inline", () =>
    Effect.gen(function*() {
      const docs = yield* get("/docs")
      expect(docs.status).toBe(200)
      expect(docs.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(docs.text).toContain("SwaggerUIBundle(")
      expect(docs.text).toContain("\"/v1/boxes/{box_id}/upgrade\"")
      expect(docs.text).not.toMatch(/<(script|link)[^>]+(src|href)="https?:/)
    }).pipe(Effect.provide(Harness.serviceOn(variant))))

  it.scopedLive("/_local/: the page on loopback, nothing from elsewhere; a foreign page refused; recent requests", () =>
    Effect.gen(function*() {
      const page = yield* get("/_local/")
      expect(page.status).toBe(200)
      expect(page.text).toContain("fetch(\"/_local/state\"")
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'")
      expect((yield* get("/_local/", { origin: "http://evil.example" })).status).toBe(403)

      const key = `pages-${crypto.randomUUID()}`
      expect(yield* createBox(key)).toBe(201)
      expect(yield* createBox(key)).toBe(201)
      const state = JSON.parse((yield* get("/_local/state")).text)
      const created = state.recent_requests.filter((request: any) => request.idempotency_key === key)
      expect(created.map((request: any) => [request.method, request.path, request.status, request.replayed])).toEqual([
        ["POST", "/v1/boxes", 201, true],
        ["POST", "/v1/boxes", 201, false]
      ])
      expect(JSON.stringify(state.recent_requests)).not.toContain("sk_acme_org")
    }).pipe(Effect.provide(Harness.serviceOn(variant))))
})
