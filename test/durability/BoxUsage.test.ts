/**
 * An organization's usage (`org_usage`: boxes not terminated, clipboard bytes) follows its boxes in SQLite and in
 * PostgreSQL, kept by the triggers of migration 2 (Migrations.ts): a box inserted, changed (its clipboard written or
 * cleared, terminated) or deleted counts at once, in the statement's own transaction; a change that fails leaves the
 * usage as it was; and a store made before the triggers (migration 1 only, usage counted by the repository) keeps
 * counting from where it was once migrated. The boxes quota is checked in the insert itself (`insertWithinQuota`), in
 * memory and in both databases.
 *
 * Source: docs/ASSUMPTIONS.md "Quotas" and "Durable state".
 */
import { Migrator, SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import { boxes as sqlBoxes } from "../../src/Server/state/sql/SqlBoxes.js"
import { storedBox } from "../support/Fixtures.js"
import * as SqlClients from "../support/SqlClients.js"

/** Runs the migrations whose id is at most `upTo`. */
const migrate = (upTo: number) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(
      Object.fromEntries(Object.entries(migrations).filter(([name]) => Number(name.split("_")[0]) <= upTo))
    )
  })

const clipboard = (text: string) => ({ mediaType: "text/plain", bytes: new TextEncoder().encode(text) })

const usageOf = (orgId: string) => Effect.flatMap(Repositories.Boxes, (boxes) => boxes.usage(orgId))

describe.each([["SQLite", SqlClients.sqlite], ["PostgreSQL", SqlClients.postgres]] as const)("org_usage in %s", (_, client) => {
  const store = sqlBoxes.pipe(
    Layer.provideMerge(Layer.effectDiscard(migrate(Number.MAX_SAFE_INTEGER))),
    Layer.provideMerge(client),
    Layer.orDie
  )

  it.scoped("counts boxes and clipboard bytes as boxes are inserted, changed and deleted", () =>
    Effect.gen(function*() {
      const boxes = yield* Repositories.Boxes
      const sql = yield* SqlClient.SqlClient
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 0, clipboardBytes: 0 })
      yield* boxes.insert(storedBox("sb_1"))
      yield* boxes.insert(storedBox("sb_2", { clipboard: clipboard("hello") }))
      yield* boxes.insert(storedBox("sb_3", { status: "terminated", clipboard: clipboard("abc") }))
      yield* boxes.insert(storedBox("sb_other", { orgId: "org_other" }))
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 2, clipboardBytes: 8 })
      expect(yield* usageOf("org_other")).toEqual({ activeBoxes: 1, clipboardBytes: 0 })

      // A write that changes neither status nor clipboard leaves the usage alone.
      yield* boxes.update("sb_1", (record) => ({ ...record, name: "renamed" }))
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 2, clipboardBytes: 8 })
      yield* boxes.update("sb_1", (record) => ({ ...record, clipboard: clipboard("0123456789") }))
      yield* boxes.update("sb_2", (record) => ({ ...record, clipboard: null }))
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 2, clipboardBytes: 13 })
      yield* boxes.updateAll(["sb_1", "sb_2"], (record) => ({ ...record, status: "terminated" }))
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 0, clipboardBytes: 13 })

      // No code path deletes a box; a row deleted by hand still takes its share off.
      yield* sql`DELETE FROM boxes WHERE id = ${"sb_1"}`
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 0, clipboardBytes: 3 })
      yield* sql`DELETE FROM boxes WHERE id = ${"sb_other"}`
      expect(yield* usageOf("org_other")).toEqual({ activeBoxes: 0, clipboardBytes: 0 })
    }).pipe(Effect.provide(store)))

  it.scoped("a change that is rolled back leaves the usage as it was", () =>
    Effect.gen(function*() {
      const boxes = yield* Repositories.Boxes
      const sql = yield* SqlClient.SqlClient
      yield* boxes.insert(storedBox("sb_1", { clipboard: clipboard("hi") }))
      const failed = yield* sql.withTransaction(Effect.zipRight(
        boxes.insert(storedBox("sb_2", { clipboard: clipboard("lost") })),
        Effect.fail("taken back" as const)
      )).pipe(Effect.flip)
      expect(failed).toBe("taken back")
      expect(yield* boxes.get("sb_2")).toEqual(Option.none())
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 1, clipboardBytes: 2 })
    }).pipe(Effect.provide(store)))

  it.scoped("a store made before the triggers keeps counting from its stored usage once migrated", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrate(1)
      // What the repository wrote before migration 2: the row, and the usage beside it.
      yield* sql`INSERT INTO boxes (id, org_id, status, created_at_millis, record)
        VALUES (${"sb_old"}, ${"org"}, ${"running"}, ${0}, ${JSON.stringify({ ...storedBox("sb_old"), clipboard: null })})`
      yield* sql`INSERT INTO org_usage (org_id, active_boxes, clipboard_bytes) VALUES (${"org"}, ${1}, ${0})`
      yield* migrate(Number.MAX_SAFE_INTEGER)
      const boxes = yield* Effect.provide(Repositories.Boxes, sqlBoxes)
      expect(yield* boxes.usage("org")).toEqual({ activeBoxes: 1, clipboardBytes: 0 })
      yield* boxes.insert(storedBox("sb_new_1"))
      yield* boxes.insert(storedBox("sb_new_2", { clipboard: clipboard("abcd") }))
      yield* boxes.update("sb_old", (record) => ({ ...record, status: "terminated" }))
      expect(yield* boxes.usage("org")).toEqual({ activeBoxes: 2, clipboardBytes: 4 })
    }).pipe(Effect.provide(Layer.orDie(client))))
})

describe.each([
  ["memory", MemoryRepositories.boxesMemory],
  ["SQLite", sqlBoxes.pipe(Layer.provideMerge(Layer.effectDiscard(migrate(Number.MAX_SAFE_INTEGER))), Layer.provideMerge(SqlClients.sqlite), Layer.orDie)],
  ["PostgreSQL", sqlBoxes.pipe(Layer.provideMerge(Layer.effectDiscard(migrate(Number.MAX_SAFE_INTEGER))), Layer.provideMerge(SqlClients.postgres), Layer.orDie)]
] as const)("insertWithinQuota in %s (the boxes quota, checked as the box is inserted)", (_, store) => {
  it.scoped("inserts while the organization holds fewer boxes than the quota, then refuses and writes nothing", () =>
    Effect.gen(function*() {
      const boxes = yield* Repositories.Boxes
      expect(yield* boxes.insertWithinQuota(storedBox("sb_1"), 2)).toBe(true)
      // Terminated boxes and other organizations' boxes do not count.
      yield* boxes.insert(storedBox("sb_gone", { status: "terminated" }))
      yield* boxes.insert(storedBox("sb_other", { orgId: "org_other" }))
      expect(yield* boxes.insertWithinQuota(storedBox("sb_2", { maxLifetimeSeconds: 60, createdAtMillis: 1_764_000_000_000 }), 2)).toBe(true)
      expect(yield* boxes.insertWithinQuota(storedBox("sb_3"), 2)).toBe(false)
      expect(yield* boxes.get("sb_3")).toEqual(Option.none())
      expect(yield* usageOf("org")).toEqual({ activeBoxes: 2, clipboardBytes: 0 })
      // What was inserted reads back as it was given.
      expect(Option.getOrThrow(yield* boxes.get("sb_2"))).toEqual(storedBox("sb_2", { maxLifetimeSeconds: 60, createdAtMillis: 1_764_000_000_000 }))
      // A termination frees a place.
      yield* boxes.update("sb_1", (record) => ({ ...record, status: "terminated" }))
      expect(yield* boxes.insertWithinQuota(storedBox("sb_3"), 2)).toBe(true)
      expect(yield* boxes.insertWithinQuota(storedBox("sb_x", { orgId: "org_new" }), 0)).toBe(false)
    }).pipe(Effect.provide(store)))
})
