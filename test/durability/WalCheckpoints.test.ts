/**
 * The log's checkpoints on a thread of their own (src/Sql/WalCheckpoints.ts), through `SqlDriver.layerSqliteFile`:
 * while the connection writes less than its own checkpoint threshold, the writes still reach the database file (the
 * worker copied them); the worker loads the driver the process loaded; closing the layer stops the worker, and the
 * connection's last checkpoint still empties the log.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import Database from "libsql"
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlDriver from "../../src/Sql/SqlDriver.js"
import * as WalCheckpoints from "../../src/Sql/WalCheckpoints.js"

const databaseFile = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-wal-checkpoints-"))),
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  ),
  (directory) => join(directory, "test.db")
)

const sizeOf = (path: string) => existsSync(path) ? statSync(path).size : 0

/** About 400 pages of 4 KiB: under the connection's own threshold, so only the worker can copy them. */
const rows = 400
const payload = "x".repeat(3000)

describe("WalCheckpoints", () => {
  it("finds the libsql driver this process loaded", () => {
    expect(new Database(":memory:").open).toBe(true)
    const file = WalCheckpoints.loadedDriverFile()
    expect(file).toMatch(/[\\/]libsql[\\/]index\.js$/)
  })

  it.scopedLive("copies the log's pages into the database file while the connection writes, and stops at close", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      yield* Effect.scoped(Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const [threshold] = yield* sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`
          expect(threshold.wal_autocheckpoint).toBe(WalCheckpoints.connectionAutocheckpointPages)
          expect(rows).toBeLessThan(WalCheckpoints.connectionAutocheckpointPages / 2)
          yield* sql`CREATE TABLE items (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)`
          const before = sizeOf(file)
          for (let index = 0; index < rows; index++) yield* sql`INSERT INTO items (id, payload) VALUES (${index}, ${payload})`
          expect(sizeOf(`${file}-wal`)).toBeGreaterThan(rows * 3000)
          // The worker checkpoints every 100 ms; waited for as a condition, at most 30 s on a loaded machine.
          yield* Effect.sync(() => sizeOf(file)).pipe(
            Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (size) => size >= before + rows * 3000 }),
            Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the database file never grew") })
          )
        }),
        SqlDriver.layerSqliteFile(file)
      ))
      expect(sizeOf(`${file}-wal`)).toBe(0)
      const reader = new Database(file)
      expect(reader.prepare("SELECT count(*) AS count FROM items").get()).toEqual({ count: rows })
      reader.close()
    }), { timeout: 60_000 })
})
