/**
 * The SQLite client of the state store (src/Server/state/sql/SqliteClient.ts) beside the stock one
 * (`@effect/sql-libsql` over `@libsql/client`, SqlState.ts `client: "stock"`): the same statements give the same
 * answers, the same errors and the same `sql.execute` spans; what a statement or unit of work wrote is committed when
 * it returns (another connection reads it); a unit of work that fails, is interrupted or fails inside a savepoint
 * takes back only its own writes, and no statement of another fiber runs inside it.
 */
import { LibsqlClient } from "@effect/sql-libsql"
import { SqlClient } from "@effect/sql"
import { createClient } from "@libsql/client"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Either, Fiber, Layer } from "effect"
import Database from "libsql"
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqliteClient from "../../src/Server/state/sql/SqliteClient.js"
import { rowsAffectedOf } from "../../src/Server/state/sql/Rows.js"
import * as Capture from "../resilience/Capture.js"

/** A fresh database file in a temporary directory (removed with the scope), in WAL mode as the store opens it. */
const databaseFile = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-sqlite-client-"))),
    (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
  ),
  (directory) => join(directory, "test.db")
)

const pragmas = (database: InstanceType<typeof Database>) => {
  database.exec("PRAGMA journal_mode = WAL")
  database.exec("PRAGMA synchronous = NORMAL")
  return database
}

const prepared = (path: string) => SqliteClient.layer(() => pragmas(new Database(path)))

const stock = (path: string) =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.promise(async () => {
        const client = createClient({ url: `file:${path}` })
        await client.execute("PRAGMA journal_mode = WAL")
        return client
      }),
      (client) => Effect.sync(() => client.close())
    ),
    (client) => LibsqlClient.layer({ liveClient: client })
  ))

/** The rows another connection reads from the file: only what was committed. */
const committed = (path: string, query: string) => {
  const reader = new Database(path)
  try {
    return reader.prepare(query).all([])
  } finally {
    reader.close()
  }
}

/** `use` with the default client on a fresh file that has a table `items (id TEXT PRIMARY KEY)`. */
const withItems = <A, E>(use: (sql: SqlClient.SqlClient, file: string) => Effect.Effect<A, E>) =>
  Effect.flatMap(databaseFile, (file) =>
    Effect.provide(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE items (id TEXT PRIMARY KEY)`
        return yield* use(sql, file)
      }),
      prepared(file)
    ))

/** Every kind of statement the store uses, with the answers kept as they come. */
const script = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const answers: Array<unknown> = []
  const keep = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.flatMap(Effect.either(effect), (result) =>
      Effect.sync(() => {
        answers.push(Either.isLeft(result) ? { error: String((result.left as { message?: unknown }).message ?? result.left) } : result.right)
      }))
  yield* sql`CREATE TABLE items (id TEXT PRIMARY KEY, count BIGINT NOT NULL, flag INTEGER, note TEXT, bytes BLOB)`
  yield* keep(sql`INSERT INTO items (id, count, flag, note, bytes) VALUES (${"a"}, ${1}, ${true}, ${null},
    ${new Uint8Array([1, 2, 3])}) RETURNING id, count`)
  yield* keep(sql`INSERT INTO items (id, count, flag) VALUES (${"a"}, ${2}, ${false}) ON CONFLICT DO NOTHING RETURNING id`)
  yield* keep(sql`INSERT INTO items (id, count, flag) VALUES (${"a"}, ${2}, ${false})`)
  yield* keep(sql`INSERT INTO items (id, count, flag, note) VALUES (${"b"}, ${Number.MAX_SAFE_INTEGER - 1}, ${0}, ${"é ✓"})`)
  yield* keep(sql`INSERT INTO items (id, count) VALUES ('c', 9007199254740993)`)
  yield* keep(sql`SELECT id FROM items WHERE id = 'c'`)
  yield* keep(sql`SELECT * FROM items WHERE id = 'c'`)
  yield* keep(sql`UPDATE items SET count = count + 1 WHERE id IN ('a', 'b')`.raw.pipe(Effect.map(rowsAffectedOf)))
  // The idempotency claim's shape: an insert that may do nothing, told by its count of changed rows.
  yield* keep(sql`INSERT INTO items (id, count) VALUES (${"a"}, ${3}) ON CONFLICT DO NOTHING`.raw.pipe(Effect.map(rowsAffectedOf)))
  yield* keep(sql`INSERT INTO items (id, count) VALUES (${"d"}, ${3}) ON CONFLICT DO NOTHING`.raw.pipe(Effect.map(rowsAffectedOf)))
  yield* keep(sql`SELECT id, count, flag, note, bytes FROM items WHERE id <> 'c' ORDER BY id`.pipe(
    Effect.map((rows) =>
      rows.map((row) => ({ ...row, bytes: row.bytes instanceof ArrayBuffer ? Array.from(new Uint8Array(row.bytes)) : row.bytes }))
    )
  ))
  yield* keep(sql`SELECT id, count FROM items ORDER BY id`.values)
  yield* keep(sql.withTransaction(Effect.zipRight(sql`DELETE FROM items WHERE id = 'a'`, Effect.fail("refused"))))
  yield* keep(sql.withTransaction(Effect.gen(function*() {
    yield* sql`UPDATE items SET note = 'outer' WHERE id = 'a'`
    yield* Effect.either(sql.withTransaction(Effect.zipRight(sql`UPDATE items SET note = 'inner' WHERE id = 'b'`, Effect.fail("inner"))))
    return yield* sql`SELECT id, note FROM items WHERE id IN ('a', 'b') ORDER BY id`
  })))
  // One place in the source run again and again, with plain values and with a fragment among them (the same SQL
  // text finds the same prepared statement; a fragment makes another): all as the stock client.
  const find = (first: unknown, second: unknown) =>
    sql`SELECT id, count FROM items WHERE id = ${first} OR id = ${second} ORDER BY id`
  const values: Array<readonly [unknown, unknown]> = [
    ["a", "b"],
    ["b", "zzz"],
    [sql.literal("'c'"), "a"],
    ["a", sql.literal("'d'")],
    ["d", "d"],
    [sql`${"b"}`, "a"]
  ]
  for (const [first, second] of values) {
    answers.push(find(first, second).compile())
    yield* keep(find(first, second))
  }
  yield* keep(sql`SELECT count(*) AS count FROM items`)
  yield* keep(sql`SELECT nothing FROM items`)
  // Unprepared statements (the cluster's storage reads are made so, with literals in their text).
  yield* keep(sql`SELECT id, count FROM items WHERE id IN (${sql.literal("'a','b'")}) ORDER BY id`.unprepared)
  yield* keep(sql`UPDATE items SET note = ${"unprepared"} WHERE id = 'a' RETURNING id, note`.unprepared)
  yield* keep(sql`SELECT nothing FROM items`.unprepared)
  return answers
})

describe("the SQLite client of the state store", () => {
  it.scoped("answers every statement as the stock client does", () =>
    Effect.gen(function*() {
      const stockFile = yield* databaseFile
      const preparedFile = yield* databaseFile
      const expected = yield* Effect.provide(script, stock(stockFile))
      const actual = yield* Effect.provide(script, prepared(preparedFile))
      expect(actual).toEqual(expected)
      // The script reached what it is meant to compare: rows returned, and seven refusals (a duplicate key, an
      // integer past 2^53 read three times, a failed unit of work, an unknown column twice).
      expect(expected).toContainEqual([{ id: "a", count: 1 }])
      expect(expected.filter((answer) => typeof answer === "object" && answer !== null && "error" in answer)).toHaveLength(7)
      expect(committed(preparedFile, "SELECT id, note FROM items ORDER BY id")).toEqual(
        committed(stockFile, "SELECT id, note FROM items ORDER BY id")
      )
    }))

  it.scoped("keeps what it prepared past more unprepared statements than it keeps: those are not kept, but a transaction's begin, commit and rollback are", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      const prepares = new Map<string, number>()
      const counting = SqliteClient.layer(() => {
        const database = pragmas(new Database(file))
        const prepare = database.prepare.bind(database)
        database.prepare = ((text: string) => {
          prepares.set(text, (prepares.get(text) ?? 0) + 1)
          return prepare(text)
        }) as typeof database.prepare
        return database
      })
      yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE items (id TEXT PRIMARY KEY)`
          const find = (id: string) => sql`SELECT id FROM items WHERE id = ${id}`
          yield* find("a")
          for (let index = 0; index <= SqliteClient.statementCacheSize; index++) {
            yield* sql`SELECT id FROM items WHERE id = ${sql.literal(`'item-${index}'`)}`.unprepared
          }
          yield* find("b")
          // Transactions: their begin, commit and rollback are the same texts each time, run as unprepared statements.
          for (let index = 0; index < 3; index++) yield* sql.withTransaction(find(`c${index}`))
          yield* Effect.exit(sql.withTransaction(Effect.zipRight(find("d"), Effect.fail("rolled back"))))
          yield* sql.withTransaction(Effect.exit(sql.withTransaction(Effect.zipRight(find("e"), Effect.fail("inner")))))
        }),
        counting
      )
      expect(prepares.get("SELECT id FROM items WHERE id = ?")).toBe(1)
      expect(prepares.get("SELECT id FROM items WHERE id = 'item-0'")).toBe(1)
      expect(prepares.get("BEGIN IMMEDIATE")).toBe(1)
      expect(prepares.get("COMMIT")).toBe(1)
      expect(prepares.get("ROLLBACK")).toBe(1)
      // A savepoint's text is prepared for its run: it names its depth.
      expect(prepares.get("SAVEPOINT effect_sql_1")).toBe(1)
    }))

  it.scoped("makes the same sql.execute spans as the stock client, under a span and outside any", () =>
    Effect.gen(function*() {
      const spansOf = (client: Layer.Layer<SqlClient.SqlClient, unknown>) =>
        Effect.provide(
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const recorder = yield* Capture.make
            yield* sql`CREATE TABLE items (id TEXT PRIMARY KEY)`
            yield* recorder.record(sql`INSERT INTO items (id) VALUES (${"a"})`)
            yield* recorder.record(sql.withTransaction(sql`SELECT id FROM items WHERE id = ${"a"}`))
            yield* recorder.record(Effect.withSpan(sql`SELECT id FROM items WHERE id = ${"a"}`, "traced"))
            const traced = recorder.spans.find((span) => span.name === "traced")?.spanId
            return recorder.spans.filter((span) => span.name === "sql.execute").map((span) => ({
              query: span.attributes.get("db.query.text"),
              underTraced: span.parent._tag === "Some" && span.parent.value.spanId === traced
            }))
          }),
          client
        )
      const expected = yield* spansOf(stock(yield* databaseFile))
      expect(expected).toEqual([
        { query: "INSERT INTO items (id) VALUES (?)", underTraced: false },
        { query: "SELECT id FROM items WHERE id = ?", underTraced: false },
        { query: "SELECT id FROM items WHERE id = ?", underTraced: true }
      ])
      expect(yield* spansOf(prepared(yield* databaseFile))).toEqual(expected)
    }))

  it.scoped("returns from a statement and a unit of work only once their writes are committed", () =>
    withItems((sql, file) =>
      Effect.gen(function*() {
        yield* sql`INSERT INTO items (id) VALUES ('statement')`
        expect(committed(file, "SELECT id FROM items")).toEqual([{ id: "statement" }])
        yield* sql.withTransaction(sql`INSERT INTO items (id) VALUES ('unit')`)
        expect(committed(file, "SELECT id FROM items ORDER BY id")).toEqual([{ id: "statement" }, { id: "unit" }])
      })
    ))

  it.scoped("takes back only the writes of a unit that fails or is interrupted; other fibers' statements wait for it", () =>
    withItems((sql, file) =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        // A unit that holds the connection until it is interrupted.
        const held = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO items (id) VALUES ('interrupted')`
          yield* Deferred.succeed(started, undefined)
          return yield* Effect.never
        })))
        yield* Deferred.await(started)
        // They wait for the connection: none of them runs inside the unit that is interrupted.
        const units = yield* Effect.fork(Effect.all([
          sql.withTransaction(sql`INSERT INTO items (id) VALUES ('kept')`),
          Effect.either(sql.withTransaction(Effect.zipRight(sql`INSERT INTO items (id) VALUES ('failed')`, Effect.fail("no")))),
          Effect.either(sql`INSERT INTO items (id) VALUES ('kept')`),
          sql`INSERT INTO items (id) VALUES ('statement')`
        ], { concurrency: "unbounded" }))
        yield* Fiber.interrupt(held)
        const [, failed, duplicate] = yield* Fiber.join(units)
        expect(Either.isLeft(failed)).toBe(true)
        expect(Either.isLeft(duplicate)).toBe(true)
        expect(committed(file, "SELECT id FROM items ORDER BY id")).toEqual([{ id: "kept" }, { id: "statement" }])
      })
    ))
})

describe("the adapter when its layer closes", () => {
  it.scoped("leaves every write in the database file itself: the log is checkpointed and emptied", () =>
    Effect.gen(function*() {
      const file = yield* databaseFile
      yield* Effect.scoped(Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE items (id TEXT PRIMARY KEY)`
          for (let index = 0; index < 200; index++) yield* sql`INSERT INTO items (id) VALUES (${`item-${index}`})`
          // Statements prepared and kept by the client while it ran.
          expect((yield* sql`SELECT count(*) AS count FROM items`)[0]).toEqual({ count: 200 })
        }),
        prepared(file)
      ))
      expect(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0).toBe(0)
      // The database file alone (a copy taken after the stop, without its log) holds every write.
      const copy = `${file}.copy`
      copyFileSync(file, copy)
      expect(committed(copy, "SELECT count(*) AS count FROM items")).toEqual([{ count: 200 }])
    }))
})

describe("the adapter after SQLITE_BUSY (another connection held the write lock past the busy timeout)", () => {
  it.scoped("keeps no lock and no pending write: later writes are committed and another connection can write", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(join(tmpdir(), "boxkit-sqlite-busy-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
      const path = join(directory, "busy.db")
      const open = () => {
        const database = new Database(path)
        database.exec("PRAGMA journal_mode = WAL")
        database.exec("PRAGMA busy_timeout = 200")
        return database
      }
      const sql = Context.get(yield* Layer.build(SqliteClient.layer(open)), SqlClient.SqlClient)
      yield* sql`CREATE TABLE t (x INTEGER)`
      const other = open()
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      other.exec("BEGIN IMMEDIATE")
      expect(Either.isLeft(yield* Effect.either(sql`INSERT INTO t VALUES (1)`))).toBe(true)
      expect(Either.isLeft(yield* Effect.either(sql`INSERT INTO t VALUES (5)`))).toBe(true)
      other.exec("ROLLBACK")
      yield* sql`INSERT INTO t VALUES (2)`
      // The driver resets a failed statement only when it runs it again: before the adapter reset it, this write
      // failed with "database is locked" and the write above was not committed.
      other.exec("INSERT INTO t VALUES (3)")
      expect(other.prepare("SELECT group_concat(x) AS xs FROM (SELECT x FROM t ORDER BY x)").get()).toEqual({ xs: "2,3" })
    }))
})
