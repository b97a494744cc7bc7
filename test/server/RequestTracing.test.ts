/**
 * The request span of the local service (LocalServiceConfig.requestTracing): off by default (no span per request,
 * which costs CPU even without an exporter; docs/decisions/0002-what-the-fast-paths-save.md), and when turned on one
 * `http.server METHOD` span per request with method, path, route, status and the request headers, the
 * `Authorization` header redacted. Off, the service makes no span at all (its fibers run with the tracer disabled: no
 * `sql.transaction` of a durable create either); on, the inner spans come with the request's.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Capture from "../resilience/Capture.js"
import * as Harness from "../support/Harness.js"

const find = Harness.fetchRaw("/v1/apps/find", {
  method: "POST",
  headers: Harness.auth("sk_acme_org"),
  body: JSON.stringify({ name: "traced-app", mint_if_missing: true })
})

const serverSpans = (recorder: Capture.Recorder) => recorder.spans.filter((span) => span.name.startsWith("http.server"))

describe.each(Harness.variants())("request tracing ($name)", (variant) => {
  it.live("is off by default: requests make no server span", () =>
    Effect.gen(function*() {
      const recorder = yield* Capture.make
      const status = yield* recorder.record(Effect.provide(Effect.map(find, (response) => response.status), Harness.serviceOn(variant)))
      expect(status).toBe(200)
      expect(serverSpans(recorder)).toEqual([])
    }))

  it.live("when turned on, every request is a server span with method, path, route and status; the key is redacted", () =>
    Effect.gen(function*() {
      const recorder = yield* Capture.make
      const statuses = yield* recorder.record(Effect.provide(
        Effect.all([find, Harness.fetchRaw("/v1/secrets/NO_SUCH_SECRET", { headers: Harness.auth("sk_acme_org") })]),
        Harness.serviceOn(variant, { requestTracing: true })
      ))
      expect(statuses.map((response) => response.status)).toEqual([200, 404])
      const spans = serverSpans(recorder)
      expect(spans.map((span) => span.name)).toEqual(["http.server POST", "http.server GET"])
      const [post, get] = spans.map((span) => Object.fromEntries(span.attributes))
      expect(post).toMatchObject({
        "http.request.method": "POST",
        "url.path": "/v1/apps/find",
        "http.route": "/v1/apps/find",
        "http.response.status_code": 200
      })
      expect(get).toMatchObject({ "url.path": "/v1/secrets/NO_SUCH_SECRET", "http.response.status_code": 404 })
      expect(String(post["http.request.header.authorization"])).not.toContain("sk_acme_org")
      expect(recorder.text()).not.toContain("sk_acme_org")
      expect(spans.every((span) => span.status._tag === "Ended")).toBe(true)
    }))
})

const create = Harness.fetchRaw("/v1/boxes", {
  method: "POST",
  headers: { ...Harness.auth("sk_acme_org"), "idempotency-key": "traced-create" },
  body: JSON.stringify({ name: "traced", app_id: "app_00000000-0000-4000-8000-000000000001", image: { base: "debian" } })
})

describe("spans of a durable create", () => {
  const sqlite = Harness.variant("fast", { state: "sqlite" })

  it.live("with request tracing off, the service makes none (not even its unit of work's)", () =>
    Effect.gen(function*() {
      const recorder = yield* Capture.make
      const status = yield* recorder.record(Effect.provide(Effect.map(create, (response) => response.status), Harness.serviceOn(sqlite)))
      expect(status).toBe(201)
      expect(recorder.spans.map((span) => span.name)).toEqual([])
    }))

  it.live("with request tracing on, the unit of work's span is under the request's", () =>
    Effect.gen(function*() {
      const recorder = yield* Capture.make
      const status = yield* recorder.record(Effect.provide(
        Effect.map(create, (response) => response.status),
        Harness.serviceOn(sqlite, { requestTracing: true })
      ))
      expect(status).toBe(201)
      const server = serverSpans(recorder)
      expect(server.map((span) => span.name)).toEqual(["http.server POST"])
      const units = recorder.spans.filter((span) => span.name === "sql.transaction")
      expect(units.length).toBeGreaterThan(0)
      expect(units.some((span) => span.parent._tag === "Some" && span.parent.value.spanId === server[0].spanId)).toBe(true)
    }))
})
