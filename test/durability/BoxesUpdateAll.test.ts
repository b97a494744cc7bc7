/**
 * `Boxes.updateAll` (the boots due together, BoxRuntime.ts) in memory and in SQLite: every listed box that exists is
 * updated once (ids listed twice, missing ids and lists longer than one `IN (...)` included), boxes not listed are
 * left as they were, and the organization's usage follows the changes. In SQL (SQLite and PostgreSQL), a box the
 * layer inserted is written over by compare-and-set on the document it stored (SqlBoxes.ts): a row changed since
 * (by another instance) is read back and `f` sees the stored record, and an insert taken back leaves nothing to
 * update.
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

/** SQLite boxes in a fresh temporary directory (removed with the layer), after the migrations. */
const sqlite = sqlBoxes.pipe(
  Layer.provide(Layer.effectDiscard(Migrator.make({})({ loader: Migrator.fromRecord(migrations) }))),
  Layer.provide(SqlClients.sqlite),
  Layer.orDie
)

const booted = (record: Repositories.BoxRecord): Repositories.BoxRecord =>
  record.status === "creating" ? { ...record, status: "running", bootCount: record.bootCount + 1 } : record

describe.each([["in memory", MemoryRepositories.boxesMemory], ["in SQLite", sqlite]] as const)(
  "Boxes.updateAll %s",
  (_, layer) => {
    it.scoped("updates each listed box once, skips missing ones, leaves the others and keeps the usage", () =>
      Effect.gen(function*() {
        const boxes = yield* Repositories.Boxes
        const ids = Array.from({ length: 70 }, (_, index) => `sb_${index}`)
        for (const id of ids) yield* boxes.insert(storedBox(id, { status: "creating", bootCount: 0 }))
        yield* boxes.insert(storedBox("sb_gone", { status: "terminated" }))
        yield* boxes.insert(storedBox("sb_unlisted", { status: "creating", bootCount: 0 }))
        yield* boxes.updateAll([...ids.slice(0, 69), "sb_0", "sb_missing", "sb_gone"], booted)
        const after = yield* Effect.forEach([...ids, "sb_gone", "sb_unlisted"], (id) => boxes.get(id))
        const statuses = after.map((found) => Option.map(found, (record) => `${record.status}/${record.bootCount}`))
        expect(statuses.slice(0, 69)).toEqual(Array(69).fill(Option.some("running/1")))
        expect(statuses.slice(69)).toEqual([
          Option.some("creating/0"),
          Option.some("terminated/1"),
          Option.some("creating/0")
        ])
        expect((yield* boxes.usage("org")).activeBoxes).toBe(71)
        yield* boxes.updateAll(["sb_69"], (record) => ({ ...record, status: "terminated" }))
        expect((yield* boxes.usage("org")).activeBoxes).toBe(70)
      }).pipe(Effect.provide(layer)))
  }
)

/** The SQL boxes over `client`, after the migrations, with the client beside them. */
const overClient = <E>(client: Layer.Layer<SqlClient.SqlClient, E>) =>
  sqlBoxes.pipe(
    Layer.provideMerge(Layer.effectDiscard(Migrator.make({})({ loader: Migrator.fromRecord(migrations) }))),
    Layer.provideMerge(client),
    Layer.orDie
  )

describe.each([["SQLite", SqlClients.sqlite], ["PostgreSQL", SqlClients.postgres]] as const)(
  "Boxes.updateAll over boxes inserted here, in %s",
  (_, client) => {
    it.scoped("reads back a box whose row changed since its insert: f sees the stored record", () =>
      Effect.gen(function*() {
        const boxes = yield* Repositories.Boxes
        const sql = yield* SqlClient.SqlClient
        yield* boxes.insert(storedBox("sb_changed", { status: "creating", bootCount: 0 }))
        yield* boxes.insert(storedBox("sb_same", { status: "creating", bootCount: 0 }))
        // Another instance renames the first box: its document is no longer the one inserted here.
        const [row] = yield* sql<{ record: string }>`SELECT record FROM boxes WHERE id = ${"sb_changed"}`
        yield* sql`UPDATE boxes SET record = ${JSON.stringify({ ...JSON.parse(row.record), name: "renamed" })}
          WHERE id = ${"sb_changed"}`
        const seen: Array<string> = []
        yield* boxes.updateAll(["sb_changed", "sb_same", "sb_changed"], (record) => {
          seen.push(`${record.id}:${record.name}`)
          return booted(record)
        })
        // f ran on the remembered records first; the changed box's write found another document, so f ran again on
        // the record read back, and that result is what was written.
        expect(seen).toEqual(["sb_changed:sb_changed", "sb_same:sb_same", "sb_changed:renamed"])
        const after = yield* Effect.forEach(["sb_changed", "sb_same"], (id) => boxes.get(id))
        expect(after.map((found) => Option.map(found, (record) => `${record.name}/${record.status}/${record.bootCount}`)))
          .toEqual([Option.some("renamed/running/1"), Option.some("sb_same/running/1")])
        expect((yield* boxes.usage("org")).activeBoxes).toBe(2)
      }).pipe(Effect.provide(overClient(client))))

    it.scoped("leaves nothing behind for an insert that was taken back", () =>
      Effect.gen(function*() {
        const boxes = yield* Repositories.Boxes
        const sql = yield* SqlClient.SqlClient
        yield* Effect.flip(sql.withTransaction(Effect.zipRight(
          boxes.insert(storedBox("sb_taken_back", { status: "creating", bootCount: 0 })),
          Effect.fail("taken back" as const)
        )))
        let calls = 0
        yield* boxes.updateAll(["sb_taken_back"], (record) => {
          calls++
          return booted(record)
        })
        expect(yield* boxes.get("sb_taken_back")).toEqual(Option.none())
        expect((yield* boxes.usage("org")).activeBoxes).toBe(0)
        // f ran on the remembered record, whose write found no row; nothing was read back.
        expect(calls).toBe(1)
      }).pipe(Effect.provide(overClient(client))))
  }
)
