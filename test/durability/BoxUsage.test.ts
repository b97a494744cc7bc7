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
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Fiber, Layer, Option, Redacted } from "effect"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import { boxes as sqlBoxes } from "../../src/Server/state/sql/SqlBoxes.js"
import { storedBox } from "../support/Fixtures.js"
import * as Postgres from "../support/Postgres.js"
import * as SqlClients from "../support/SqlClients.js"

/** Runs the migrations whose id is at most `upTo`. */
const migrate = (upTo: number) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(
      Object.fromEntries(Object.entries(migrations).filter(([name]) => Number(name.split("_")[0]) <= upTo))
    )
  })

const clipboard = (text: string) => ({ mediaType: "text/plain", bytes: new TextEncoder().encode(text) })

// This worker's PostgreSQL server starts once, within the hook's own limit (its start can take a minute on a loaded
// machine); every PostgreSQL test below then only creates a database on it.
beforeAll(() => Postgres.startTestDatabase().then((database) => database.stop()), Postgres.startLimitMillis)

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

describe("insertWithinQuota on PostgreSQL under concurrency (one organization, several instances)", () => {
  /** The boxes repository and SQL client of one instance: its own pool on the database at `url`. */
  const instance = (url: string) =>
    Layer.build(sqlBoxes.pipe(Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })), Layer.orDie))

  const insert = (id: string, quota: number) =>
    Effect.flatMap(Repositories.Boxes, (boxes) => boxes.insertWithinQuota(storedBox(id), quota))

  it.scopedLive("a create that runs while another instance's create of the last place is not yet committed is refused", () =>
    Effect.gen(function*() {
      const url = yield* Postgres.testDatabase
      const [first, second] = [yield* instance(url), yield* instance(url)]
      yield* migrate(Number.MAX_SAFE_INTEGER).pipe(Effect.provide(first))
      for (let index = 0; index < 9; index++) expect(yield* insert(`sb_${index}`, 10).pipe(Effect.provide(first))).toBe(true)

      // The first instance takes the tenth place in a transaction that stays open until the second one has started.
      const inserted = yield* Deferred.make<boolean>()
      const commit = yield* Deferred.make<void>()
      const sql = yield* Effect.provide(SqlClient.SqlClient, first)
      const holding = yield* sql.withTransaction(
        Effect.tap(insert("sb_last", 10), (done) => Effect.zipRight(Deferred.succeed(inserted, done), Deferred.await(commit)))
      ).pipe(Effect.provide(first), Effect.fork)
      expect(yield* Deferred.await(inserted)).toBe(true)
      const racing = yield* insert("sb_over", 10).pipe(Effect.provide(second), Effect.fork)
      // The second create is under way before the first commits: its statement waits on a lock of the first.
      const waiting = sql<{ waiting: string }>`SELECT count(*) AS waiting FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`
      while (Number((yield* waiting.pipe(Effect.provide(second)))[0]!.waiting) === 0) yield* Effect.sleep("20 millis")
      yield* Deferred.succeed(commit, undefined)
      yield* Fiber.join(holding)
      expect(yield* Fiber.join(racing)).toBe(false)
      expect(yield* usageOf("org").pipe(Effect.provide(second))).toEqual({ activeBoxes: 10, clipboardBytes: 0 })
    }))

  it.scoped("60 creates at once through two instances with a quota of 10 make 10 boxes", () =>
    Effect.gen(function*() {
      const url = yield* Postgres.testDatabase
      const instances = [yield* instance(url), yield* instance(url)] as const
      yield* migrate(Number.MAX_SAFE_INTEGER).pipe(Effect.provide(instances[0]))
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 60 }, (_, index) => index),
        (index) => insert(`sb_${index}`, 10).pipe(Effect.provide(instances[index % 2]!)),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((inserted) => inserted)).toHaveLength(10)
      expect(yield* usageOf("org").pipe(Effect.provide(instances[1]))).toEqual({ activeBoxes: 10, clipboardBytes: 0 })
    }))
})
