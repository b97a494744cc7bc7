/**
 * Apps (spec: App; POST {api_url}/apps/find with mint_if_missing "safe on every start"): one app per name per
 * organization whatever the race; the missing-app answer without mint_if_missing is a 404 (docs/ASSUMPTIONS.md).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

const seed = C.seedWith({
  organizations: [{ id: "org_other", created_at: "2026-01-01T00:00:00Z" }],
  api_keys: [{ key: "sk_other_org", org_id: "org_other" }]
})

describe.each(Harness.variants({ sqlite: true }))("apps ($name)", (variant) => {
  it.effect("50 concurrent finds with mint_if_missing create exactly one app", () =>
    C.withServiceOn(variant, {}, seed)(Effect.gen(function*() {
      const keys = ["sk_acme_org", "sk_acme_ada", "sk_acme_bob", "sk_ada_personal"]
      const answers = yield* Effect.all(
        Array.from({ length: 50 }, (_, index) =>
          C.post("/v1/apps/find", { name: "raced", mint_if_missing: true }, keys[index % keys.length])),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 50 }, () => 200))
      expect(new Set(answers.map((answer) => answer.json.id)).size).toBe(1)
      expect(answers[0].json.id).toMatch(/^app_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(Number.isInteger(answers[0].json.created_at)).toBe(true)
      const apps = (yield* C.state).apps.filter((app: any) => app.name === "raced")
      expect(apps).toHaveLength(1)
      // Another organization gets its own app of that name.
      const other = yield* C.post("/v1/apps/find", { name: "raced", mint_if_missing: true }, "sk_other_org")
      expect(other.json.id).not.toBe(answers[0].json.id)
    })))

  it.effect("find returns an existing app; a missing one without mint_if_missing is a 404 and creates nothing", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const found = yield* C.post("/v1/apps/find", { name: "demo" })
      expect(found.json).toEqual({ id: C.appId, name: "demo", created_at: found.json.created_at })
      const before = yield* C.state
      for (const body of [{ name: "missing" }, { name: "missing", mint_if_missing: false }]) {
        C.expectError(yield* C.post("/v1/apps/find", body), 404, "not_found_error", { param: "name" })
      }
      expect(yield* C.state).toEqual(before)
    })))
})
