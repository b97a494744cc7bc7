import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Schema } from "effect"
import * as ApiError from "../src/ApiError.js"
import { Apps } from "../src/Client/Apps.js"
import * as Boxkit from "../src/Client/Boxkit.js"
import { Boxes } from "../src/Client/Boxes.js"
import { openApiDocument } from "../src/Contract/Api.js"
import * as Box from "../src/Domain/Box.js"
import * as Ids from "../src/Domain/Ids.js"
import * as LocalService from "../src/Server/LocalService.js"
import * as Routes from "../src/Server/http/Routes.js"
import * as Harness from "./support/Harness.js"
import { layer } from "./support/SuiteLayer.js"

describe("schemas", () => {
  it("an unknown box status decodes (open set)", () => {
    const decode = Schema.decodeUnknownSync(Box.CreateBoxResponse)
    const id = "sb_123e4567-e89b-42d3-a456-426614174000"
    expect(decode({ box_id: id, status: "hibernating_on_the_moon" }).status).toBe("hibernating_on_the_moon")
    for (const status of Box.knownStatuses) expect(decode({ box_id: id, status }).status).toBe(status)
    expect(() => decode({ box_id: id, status: 3 })).toThrow()
  })

  it("ids are a prefix and a UUID in 8-4-4-4-12 hex groups, just inside and just outside", () => {
    const uuid = "123e4567-e89b-42d3-a456-426614174000"
    const ok = (schema: Schema.Schema<any, string>, text: string) => Schema.is(schema)(text)
    expect(ok(Ids.BoxId, `sb_${uuid}`)).toBe(true)
    expect(ok(Ids.BoxId, `sb_${uuid.toUpperCase()}`)).toBe(true)
    expect(ok(Ids.BoxId, `sb_${uuid.slice(0, -1)}`)).toBe(false)
    expect(ok(Ids.BoxId, `sb_${uuid}0`)).toBe(false)
    expect(ok(Ids.BoxId, `sb_${uuid.replace("-", "")}`)).toBe(false)
    expect(ok(Ids.BoxId, `sb_${uuid.replace("1", "g")}`)).toBe(false)
    expect(ok(Ids.BoxId, `app_${uuid}`)).toBe(false)
    expect(ok(Ids.AppId, `app_${uuid}`)).toBe(true)
    expect(ok(Ids.AppId, `sb_${uuid}`)).toBe(false)
    expect(ok(Ids.EgressPolicyId, `ep_${uuid}`)).toBe(true)
    expect(ok(Ids.EgressPolicyId, `hp_${uuid}`)).toBe(true)
    expect(ok(Ids.EgressPolicyId, `xp_${uuid}`)).toBe(false)
  })

  it("the client decodes an envelope into the class of its type, with status, Retry-After and billing_url", () => {
    const envelope = (type: string, extra: object = {}) => ({
      error: { message: "m", type, param: null, code: null, ...extra }
    })
    const cases: Array<[string, number, unknown]> = [
      ["invalid_request_error", 400, ApiError.InvalidRequestError],
      ["authentication_error", 401, ApiError.AuthenticationError],
      ["billing_error", 402, ApiError.BillingError],
      ["permission_error", 403, ApiError.PermissionError],
      ["not_found_error", 404, ApiError.NotFoundError],
      ["conflict_error", 409, ApiError.ConflictError],
      ["rate_limit_error", 429, ApiError.RateLimitError],
      ["quota_exceeded_error", 429, ApiError.QuotaExceededError],
      ["not_implemented_error", 501, ApiError.NotImplementedError],
      ["server_error", 503, ApiError.ServerError]
    ]
    for (const [type, status, errorClass] of cases) {
      const error = ApiError.fromEnvelope(envelope(type), status, Option.some(Duration.seconds(2)))
      expect(error).toBeInstanceOf(errorClass as any)
      expect(error.status).toBe(status)
      expect(ApiError.typeOf(error)).toBe(type)
      expect(error.retryAfter).toEqual(Duration.seconds(2))
    }
    const billing = ApiError.fromEnvelope(envelope("billing_error", { code: "credits_exhausted", billing_url: "https://b" }), 402, Option.none())
    expect(billing).toBeInstanceOf(ApiError.BillingError)
    expect((billing as ApiError.BillingError).billing_url).toBe("https://b")
    const unknown = ApiError.fromEnvelope(envelope("brand_new_error"), 418, Option.none())
    expect(unknown).toBeInstanceOf(ApiError.UnknownApiError)
    expect(ApiError.typeOf(unknown)).toBe("brand_new_error")
  })

  it("Retry-After is delta-seconds or an HTTP date", () => {
    const now = Date.parse("2026-11-22T00:00:00Z")
    expect(ApiError.parseRetryAfter("3", now)).toEqual(Option.some(Duration.seconds(3)))
    expect(ApiError.parseRetryAfter("Sun, 22 Nov 2026 00:00:05 GMT", now)).toEqual(Option.some(Duration.millis(5000)))
    expect(ApiError.parseRetryAfter("Sat, 21 Nov 2026 00:00:05 GMT", now)).toEqual(Option.some(Duration.zero))
    expect(ApiError.parseRetryAfter("soon", now)).toEqual(Option.none())
    expect(ApiError.parseRetryAfter(undefined, now)).toEqual(Option.none())
  })

  it("every path of the contract starts with /v1; the OpenAPI document lists them", () => {
    const document = openApiDocument() as { paths: Record<string, unknown> }
    const paths = Object.keys(document.paths)
    expect(paths.length).toBe(Routes.routes.length > 0 ? new Set(paths).size : 0)
    for (const path of paths) expect(path.startsWith("/v1/")).toBe(true)
    for (const route of Routes.routes) expect(route.pattern.source.startsWith("^\\/v1\\/")).toBe(true)
    expect(paths).toContain("/v1/secrets/{name}")
    expect(paths).toContain("/v1/egress-policies/{policy_id}")
    expect(paths).toContain("/v1/boxes/{box_id}/exec/{exec_id}/resize")
    expect(paths).toContain("/v1/boxes/{box_id}/clipboard")
    expect(paths).toContain("/v1/boxes/{box_id}/listeners/{guest_port}")
    expect(paths).toContain("/v1/boxes/{box_id}/upgrade")
    expect(paths).toContain("/v1/apps/find")
    expect(paths).toContain("/v1/responses")
  })
})

/** The client with `{base_url}` on 127.0.0.1 and `{api_url}` on localhost: two addresses, one key. */
const twoAddresses = (variant: Harness.Variant) => Layer.unwrapEffect(
  Effect.map(LocalService.baseUrl, (baseUrl) =>
    Boxkit.layer({ apiKey: "sk_acme_org", baseUrl, apiUrl: baseUrl.replace("127.0.0.1", "localhost") }))
).pipe(Layer.provideMerge(Harness.serviceOn(variant)))

describe.each(Harness.variants())("$name", (variant) =>
layer(twoAddresses(variant), { excludeTestServices: true })("two base addresses", (it) => {
  it.effect("one key on separate base_url and api_url addresses", () =>
    Effect.gen(function*() {
      const app = yield* (yield* Apps).find("two-addresses", { mintIfMissing: true })
      const created = yield* (yield* Boxes).create({ name: "two", app_id: app.id, image: { base: "debian" } })
      expect(created.value.box_id).toMatch(/^sb_/)
      // Apps go to {api_url} only: with {api_url} on a closed port, apps fail and boxes still work.
      const baseUrl = yield* LocalService.baseUrl
      const apiUrlClosed = Boxkit.layer({
        apiKey: "sk_acme_org",
        baseUrl,
        apiUrl: "http://127.0.0.1:9/v1",
        retry: { maxAttempts: 1 }
      })
      const outcome = yield* Effect.gen(function*() {
        const appError = yield* Effect.flip((yield* Apps).find("two-addresses"))
        const box = yield* (yield* Boxes).retrieve(created.value.box_id)
        return { appError, box }
      }).pipe(Effect.provide(apiUrlClosed))
      expect(outcome.appError).toBeInstanceOf(ApiError.TransportError)
      expect(outcome.box.box_id).toBe(created.value.box_id)
    }))
}))
