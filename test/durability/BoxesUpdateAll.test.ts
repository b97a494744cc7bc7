/**
 * `Boxes.updateAll` (the boots due together, BoxRuntime.ts) in memory and in SQLite: every listed box that exists is
 * updated once (ids listed twice, missing ids and lists longer than one `IN (...)` included), boxes not listed are
 * left as they were, and the organization's usage follows the changes.
 */
import { Migrator } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import Database from "libsql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import { boxes as sqlBoxes } from "../../src/Server/state/sql/SqlBoxes.js"
import * as SqliteClient from "../../src/Server/state/sql/SqliteClient.js"
import { storedBox } from "../support/Fixtures.js"

/** SQLite boxes in a fresh temporary directory (removed with the layer), after the migrations. */
const sqlite = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-update-all-"))),
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  ),
  (directory) =>
    sqlBoxes.pipe(
      Layer.provide(Layer.effectDiscard(Migrator.make({})({ loader: Migrator.fromRecord(migrations) }))),
      Layer.provide(SqliteClient.layer(() => new Database(join(directory, "boxkit.db")))),
      Layer.orDie
    )
))

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
