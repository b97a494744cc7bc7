/**
 * The seed's schemas and the snapshot's (src/Server/state/Seed.ts, Snapshot.ts): a snapshot record is the seed's
 * record of the same kind with the members a snapshot adds or requires, so both refuse the same ids (an empty id is
 * an error in either: docs/ASSUMPTIONS.md "Local service").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as Seed from "../../src/Server/state/Seed.js"
import * as Snapshot from "../../src/Server/state/Snapshot.js"

const decodes = <A, I>(schema: Schema.Schema<A, I>, input: unknown) =>
  Either.isRight(Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })(input))

const at = "2026-01-01T00:00:00.000Z"

describe("seed and snapshot schemas", () => {
  it.effect("a seed with an empty app or egress policy id is refused, naming the member", () =>
    Effect.gen(function*() {
      const app = yield* Effect.flip(Seed.decode({ apps: [{ id: "", org_id: "org_1", name: "a" }] }))
      expect(app.issues.join("; ")).toContain("apps[0].id")
      const policy = yield* Effect.flip(Seed.decode({ egress_policies: [{ id: "", org_id: "org_1", name: "p", document: {} }] }))
      expect(policy.issues.join("; ")).toContain("egress_policies[0].id")
    }))

  it("a snapshot record is the seed's record with the snapshot's members", () => {
    const app = { id: "app_1", org_id: "org_1", name: "a" }
    expect(decodes(Seed.SeedApp, app)).toBe(true)
    expect(decodes(Snapshot.SnapshotApp, app)).toBe(false)
    expect(decodes(Snapshot.SnapshotApp, { ...app, created_at: 1 })).toBe(true)
    expect(decodes(Snapshot.SnapshotApp, { ...app, id: "", created_at: 1 })).toBe(false)
    expect(decodes(Snapshot.SnapshotSecret, { org_id: "org_1", name: "S", created_at: at, updated_at: at })).toBe(true)
    expect(decodes(Snapshot.SnapshotUser, { id: "u_1", org_id: "org_1" })).toBe(false)
    expect(decodes(Snapshot.SnapshotUser, { id: "u_1", org_id: "org_1", admin: false })).toBe(true)
    expect(decodes(Snapshot.SnapshotOrganization, { id: "org_1", credits: true, created_at: at })).toBe(true)
    expect(decodes(Snapshot.SnapshotOrganization, { id: "org_1" })).toBe(false)
  })
})
