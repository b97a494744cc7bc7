/**
 * SQL clients of the durable store's tests, each on fresh storage removed with its layer: SQLite through the store's
 * own client (src/Server/state/sql/SqliteClient.ts) in a temporary directory, and PostgreSQL on a fresh database of
 * the test server (Postgres.ts).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import Database from "libsql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqliteClient from "../../src/Server/state/sql/SqliteClient.js"
import { testDatabase } from "./Postgres.js"

/** The store's SQLite client on `boxkit.db` in a fresh temporary directory. */
export const sqlite = Layer.unwrapScoped(Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-sql-"))),
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  ),
  (directory) => SqliteClient.layer(() => new Database(join(directory, "boxkit.db")))
))

/** A PostgreSQL client (two connections) on a fresh database of the test server. */
export const postgres = Layer.unwrapScoped(Effect.map(
  testDatabase,
  (url) => PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })
))
