/**
 * The `@effect/sql` client of the SQLite state store (the default; `@effect/sql-libsql` stays selectable beside it:
 * SqlState.ts `client: "stock"`), built as `@effect/sql-sqlite-node` builds its own over better-sqlite3:
 * `SqlClient.make` with the SQLite compiler over one connection of the `libsql` driver (the native binding under
 * `@libsql/client`) behind `Effect.makeSemaphore(1)`, transactions and savepoints by `@effect/sql` (begun with
 * `BEGIN IMMEDIATE`). Unlike `@effect/sql-libsql`, whose `@libsql/client` prepares every statement anew and answers
 * through a promise, a statement is prepared once and kept by its text (at most {@link statementCacheSize}, the oldest
 * dropped first; an `unprepared` statement is prepared for its one run and not kept, but for a transaction's begin,
 * commit and rollback, the same texts every time) and run synchronously (docs/decisions/0003-sqlite-client.md).
 *
 * Values are read and bound as `@libsql/client` does with its default `intMode` "number": integers read as numbers (a
 * RangeError past 2^53), byte strings read as an `ArrayBuffer`, booleans bound as 0 or 1.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state"; docs/decisions/0003-sqlite-client.md.
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "@effect/sql"
import { Effect, Layer, Scope, Stream } from "effect"
import type LibsqlDatabase from "libsql"

/** How many prepared statements are kept (the service has about a hundred distinct statements). */
export const statementCacheSize = 512

/** A `libsql` database connection. */
export type Database = InstanceType<typeof LibsqlDatabase>
type Prepared = ReturnType<Database["prepare"]>

/** What a statement gave: the names of its columns, its rows as arrays, and the rows it changed. */
interface Outcome {
  readonly columns: ReadonlyArray<string>
  readonly values: ReadonlyArray<ReadonlyArray<unknown>>
  readonly changes: number
}

const minSafe = BigInt(Number.MIN_SAFE_INTEGER)
const maxSafe = BigInt(Number.MAX_SAFE_INTEGER)

/** A value read from SQLite, as `@libsql/client` (intMode "number") answers it. */
const fromSql = (value: unknown): unknown => {
  if (typeof value === "bigint") {
    if (value < minSafe || value > maxSafe) {
      throw new RangeError("Received integer which cannot be safely represented as a JavaScript number")
    }
    return Number(value)
  }
  if (value instanceof Uint8Array) return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength)
  return value
}

/** A bound value, as `@libsql/client` passes it (the native driver aborts the process on a boolean). */
const toSql = (value: unknown): unknown => {
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments")
      return value
    case "boolean":
      return value ? 1 : 0
    case "undefined":
      throw new TypeError("undefined cannot be passed as argument to the database")
    default:
      if (value instanceof ArrayBuffer) return Buffer.from(value)
      if (value instanceof Date) return value.valueOf()
      return value
  }
}

/** A prepared statement: whether it returns rows, and its column names. */
interface PreparedStatement {
  readonly statement: Prepared
  readonly reader: boolean
  readonly columns: ReadonlyArray<string>
}

/** An integer as read with `intMode` "bigint" (as `@libsql/client` answers it then); other values as {@link fromSql}. */
const fromSqlBigint = (value: unknown): unknown => typeof value === "bigint" ? value : fromSql(value)

/** How integers are read: as numbers (an error past 2^53), or all as bigints (as `@libsql/client`'s `intMode`). */
export type IntMode = "number" | "bigint"

/**
 * A kept statement that failed with SQLITE_BUSY, and its parameters. The driver resets a statement only when it runs
 * it again, and such a statement stays pending until then: it keeps the write lock, and the connection's later
 * autocommit writes are not committed until it is reset.
 */
interface PendingAfterBusy {
  readonly statement: Prepared
  readonly params: ReadonlyArray<unknown>
}

const isBusy = (error: unknown): boolean =>
  /SQLITE_BUSY|database is locked/i.test(`${(error as { code?: unknown })?.code ?? ""} ${(error as Error)?.message ?? ""}`)

/**
 * Resets `pending` without keeping what it does: it runs again inside a transaction that is rolled back. Throws the
 * database's SQLITE_BUSY while another connection still holds the write lock (then `pending` stays to reset later).
 */
const resetAfterBusy = (database: Database, pending: PendingAfterBusy): void => {
  database.exec("BEGIN IMMEDIATE")
  try {
    pending.statement.run(pending.params)
  } catch {
    // Failing again resets it too; what it would have done is rolled back either way.
  } finally {
    database.exec("ROLLBACK")
  }
}

/** `sql` prepared on `database`: whether it returns rows (as arrays, integers as bigints), and its column names. */
const prepareOn = (database: Database, sql: string): PreparedStatement => {
  const statement = database.prepare(sql)
  const reader = statement.reader
  if (reader) statement.raw(true)
  statement.safeIntegers(true)
  return { statement, reader, columns: reader ? statement.columns().map((column) => column.name) : [] }
}

/**
 * The texts this client gives `@effect/sql` to begin, commit and roll back a transaction. `@effect/sql` runs them as
 * unprepared statements, but they are the same texts in every transaction, so they are kept prepared like the
 * statements of `run` (a savepoint's text names its depth and is prepared for its run only).
 */
const transactionTexts = { beginTransaction: "BEGIN IMMEDIATE", commit: "COMMIT", rollback: "ROLLBACK" } as const
const keptUnpreparedTexts: ReadonlySet<string> = new Set(Object.values(transactionTexts))

/**
 * Runs statements on `database`: `run` prepares each text once and keeps it (the oldest prepared dropped past the cache
 * size); `runUnprepared` prepares its text for this run only (texts made once, such as `@effect/sql`'s `unprepared`
 * statements with literals in them, would otherwise push the kept ones out of the cache), except the transaction texts
 * ({@link transactionTexts}), which it keeps.
 */
const statementsOf = (database: Database, intMode: IntMode) => {
  const read = intMode === "bigint" ? fromSqlBigint : fromSql
  const cache = new Map<string, PreparedStatement>()
  let pendingAfterBusy: PendingAfterBusy | undefined
  const prepareCached = (sql: string): PreparedStatement => {
    const found = cache.get(sql)
    if (found !== undefined) return found
    const prepared = prepareOn(database, sql)
    // The oldest prepared first (a statement's text is looked up once per run; no reordering on use).
    if (cache.size >= statementCacheSize) cache.delete(cache.keys().next().value!)
    cache.set(sql, prepared)
    return prepared
  }
  const runOn = ({ columns, reader, statement }: PreparedStatement, params: ReadonlyArray<unknown>): Outcome => {
    if (pendingAfterBusy !== undefined && !database.inTransaction) {
      resetAfterBusy(database, pendingAfterBusy)
      pendingAfterBusy = undefined
    }
    const bound = params.map(toSql)
    if (!reader) {
      try {
        return { columns, values: [], changes: statement.run(bound).changes }
      } catch (error) {
        if (isBusy(error)) pendingAfterBusy = { statement, params: bound }
        throw error
      }
    }
    // The driver makes fresh arrays: their values are converted in place.
    const values = statement.all(bound) as Array<Array<unknown>>
    for (const row of values) {
      for (let index = 0; index < row.length; index++) row[index] = read(row[index])
    }
    return { columns, values, changes: 0 }
  }
  return {
    run: (sql: string, params: ReadonlyArray<unknown>): Outcome => runOn(prepareCached(sql), params),
    runUnprepared: (sql: string, params: ReadonlyArray<unknown>): Outcome =>
      runOn(keptUnpreparedTexts.has(sql) ? prepareCached(sql) : prepareOn(database, sql), params),
    clear: () => cache.clear()
  }
}

/** Rows as objects by column name (the first of two columns of one name wins, as in `@libsql/client`). */
const objectsOf = (outcome: Outcome): Array<Record<string, unknown>> =>
  outcome.values.map((values) => {
    const row: Record<string, unknown> = {}
    for (let index = 0; index < values.length; index++) {
      const column = outcome.columns[index]
      if (!Object.hasOwn(row, column)) row[column] = values[index]
    }
    return row
  })

const failure = (message: string) => (cause: unknown) => new SqlError.SqlError({ cause, message })

/** The one connection over `statements`: each statement run at once, its failure an `SqlError`. */
const connectionOver = (statements: ReturnType<typeof statementsOf>): SqlConnection.Connection => {
  const run = <A>(sql: string, params: ReadonlyArray<unknown>, f: (outcome: Outcome) => A) =>
    Effect.try({ try: () => f(statements.run(sql, params)), catch: failure("Failed to execute statement") })
  const rowsOf = (transformRows: ((rows: ReadonlyArray<any>) => ReadonlyArray<any>) | undefined) =>
    transformRows === undefined ? objectsOf : (outcome: Outcome) => transformRows(objectsOf(outcome))
  return {
    execute: (sql, params, transformRows) => run(sql, params, rowsOf(transformRows)),
    executeRaw: (sql, params) => run(sql, params, (outcome) => ({ rows: objectsOf(outcome), rowsAffected: outcome.changes })),
    executeValues: (sql, params) => run(sql, params, (outcome) => outcome.values),
    executeUnprepared: (sql, params, transformRows) =>
      Effect.try({
        try: () => rowsOf(transformRows)(statements.runUnprepared(sql, params)),
        catch: failure("Failed to execute statement")
      }),
    executeStream: () => Stream.dieMessage("executeStream is not supported by the SQLite state store")
  }
}

/**
 * The client over `database` (opened by the caller, in WAL mode; closed with the scope), integers read as `intMode`
 * (default "number"). One statement or one transaction runs at a time: a statement outside a transaction waits for
 * the running one to end. A statement fails with `SqlError` when SQLite refuses it.
 */
export const make = (
  database: Database,
  intMode: IntMode = "number"
): Effect.Effect<SqlClient.SqlClient, never, Reactivity.Reactivity | Scope.Scope> =>
  Effect.gen(function*() {
    const statements = statementsOf(database, intMode)
    yield* Effect.addFinalizer(() => Effect.sync(() => statements.clear()))
    const connection = connectionOver(statements)
    const semaphore = yield* Effect.makeSemaphore(1)
    // A statement, or a transaction, holds the connection until its scope closes (for a transaction: once its commit
    // or rollback is done), so that no statement of another fiber runs inside someone else's transaction.
    const acquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        connection
      )
    )
    return yield* SqlClient.make({
      acquirer,
      ...transactionTexts,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  })

/**
 * Copies every write of the log into the database file and empties the log, then closes `database`. The driver's
 * `close` neither checkpoints nor removes the log while statements it prepared are alive (the client keeps them),
 * so without it the log stays beside the file and the next open recovers it. A checkpoint that cannot run (another
 * connection reading) leaves the log as it is, for the next open.
 */
const checkpointAndClose = (database: Database): void => {
  try {
    database.exec("PRAGMA wal_checkpoint(TRUNCATE)")
  } catch {
    // The log stays; the next open recovers it.
  }
  database.close()
}

/**
 * The client as the `SqlClient` service; when the layer closes, the log is checkpointed into the database file and
 * the database is closed (the file then holds every write by itself).
 */
export const layer = (open: () => Database, intMode: IntMode = "number"): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.flatMap(
      Effect.acquireRelease(
        Effect.try({ try: open, catch: failure("Failed to open the database") }),
        (database) => Effect.sync(() => checkpointAndClose(database))
      ),
      (database) => make(database, intMode)
    )
  ).pipe(Layer.provide(Reactivity.layer))
