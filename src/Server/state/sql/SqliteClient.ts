/**
 * The `@effect/sql` client of the SQLite state store (the default; `@effect/sql-libsql` stays selectable beside it:
 * SqlState.ts `client: "stock"`). Statements are built and compiled by `@effect/sql` (`SqlClient.make`, the SQLite
 * compiler) as with any other client; only how they run differs, for speed (docs/decisions/0003-sqlite-client.md):
 *
 * - **Prepared once.** One connection of the `libsql` driver (the native SQLite binding under `@libsql/client`), each
 *   statement prepared once and kept by its text (at most {@link statementCacheSize}, the oldest dropped first), and
 *   run synchronously. `@libsql/client` prepares every statement anew, which cost libsql more than running it.
 * - **Group commit.** Every write is in a transaction that is committed once for all the work of the same turn of the
 *   event loop: the first statement or unit of work (`withTransaction`) opens it (`BEGIN IMMEDIATE`), later ones of
 *   the same turn join it, and it is committed (`COMMIT`) when the turn ends (or, when a unit of work is running
 *   then, as soon as that unit ends). A statement or unit returns only after the commit that made it durable: what it
 *   wrote is in the database file's log when it returns (as with autocommit), and it fails when that commit fails.
 *   Each unit of work runs under a savepoint of its own, so a unit that fails or is interrupted takes back only its
 *   own writes. One unit of work runs at a time; statements outside units wait for it to end.
 * - **No wrapping per statement when untraced.** Outside a span a statement goes straight to the connection of its
 *   fiber, without `@effect/sql`'s span and scope per statement (DirectStatements.ts); under a span it runs as stock.
 *
 * Values are read and bound as `@libsql/client` does with its default `intMode` "number": integers read as numbers (a
 * RangeError past 2^53), byte strings read as an `ArrayBuffer`, booleans bound as 0 or 1.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "@effect/sql"
import { Context, Deferred, Effect, Exit, FiberId, Layer, Option, type Scope, Stream } from "effect"
import type LibsqlDatabase from "libsql"
import * as DirectStatements from "./DirectStatements.js"

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

/** A statement prepared once: whether it returns rows, and its column names. */
interface Kept {
  readonly statement: Prepared
  readonly reader: boolean
  readonly columns: ReadonlyArray<string>
}

/** An integer as read with `intMode` "bigint" (as `@libsql/client` answers it then); other values as {@link fromSql}. */
const fromSqlBigint = (value: unknown): unknown => typeof value === "bigint" ? value : fromSql(value)

/** How integers are read: as numbers (an error past 2^53), or all as bigints (as `@libsql/client`'s `intMode`). */
export type IntMode = "number" | "bigint"

/** Runs statements on `database`, each prepared once and kept (the oldest prepared dropped past the cache size). */
const statementsOf = (database: Database, intMode: IntMode) => {
  const read = intMode === "bigint" ? fromSqlBigint : fromSql
  const kept = new Map<string, Kept>()
  const prepare = (sql: string): Kept => {
    const found = kept.get(sql)
    if (found !== undefined) return found
    const statement = database.prepare(sql)
    const reader = statement.reader
    if (reader) statement.raw(true)
    statement.safeIntegers(true)
    const made: Kept = { statement, reader, columns: reader ? statement.columns().map((column) => column.name) : [] }
    // The oldest prepared first (a statement's text is looked up once per run; no reordering on use).
    if (kept.size >= statementCacheSize) kept.delete(kept.keys().next().value!)
    kept.set(sql, made)
    return made
  }
  return {
    run: (sql: string, params: ReadonlyArray<unknown>): Outcome => {
      const { columns, reader, statement } = prepare(sql)
      const bound = params.map(toSql)
      if (!reader) return { columns, values: [], changes: statement.run(bound).changes }
      // The driver makes fresh arrays: their values are converted in place.
      const values = statement.all(bound) as Array<Array<unknown>>
      for (const row of values) {
        for (let index = 0; index < row.length; index++) row[index] = read(row[index])
      }
      return { columns, values, changes: 0 }
    },
    clear: () => kept.clear()
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

/** A unit of work of this client: open while it runs; its savepoint depth. */
interface Unit {
  open: boolean
  depth: number
}

/** The unit of work the current fiber runs in (a unit that ended, seen by a fiber forked in it, is ignored). */
const CurrentUnit = Context.GenericTag<Unit>("boxkit/server/sql/SqliteClient/CurrentUnit")

/** The transaction a group of statements and units of work is committed in. */
interface Group {
  readonly committed: Deferred.Deferred<void, SqlError.SqlError>
}

/**
 * The client over `database` (opened by the caller, in WAL mode; closed with the scope), integers read as `intMode`
 * (default "number"). Fails nothing itself: a statement fails with `SqlError` when SQLite refuses it or the commit
 * that would make it durable fails.
 */
export const make = (
  database: Database,
  intMode: IntMode = "number"
): Effect.Effect<SqlClient.SqlClient, never, Reactivity.Reactivity | Scope.Scope> =>
  Effect.gen(function*() {
    const statements = statementsOf(database, intMode)
    let closed = false

    // The one connection: held by one unit of work at a time (or for one statement), waiters served in order.
    let held = false
    const waiters: Array<() => void> = []
    let group: Group | undefined
    let commitDue = false

    /** Waits for the connection (uninterruptible: a waiter is always served, and gives it back). */
    const wait = Effect.uninterruptible(Effect.async<void>((resume) => {
      waiters.push(() => resume(Effect.void))
    }))
    /** Takes the connection: at once when it is free, else in turn. */
    const take = Effect.suspend(() => {
      if (held) return wait
      held = true
      return Effect.void
    })

    /** Commits the open group: its members learn whether their writes are durable. */
    const commit = () => {
      const committing = group
      commitDue = false
      if (committing === undefined) return
      group = undefined
      try {
        statements.run("COMMIT", [])
        Deferred.unsafeDone(committing.committed, Exit.void)
      } catch (error) {
        if (database.inTransaction) {
          try {
            statements.run("ROLLBACK", [])
          } catch {
            // The transaction is gone either way.
          }
        }
        Deferred.unsafeDone(committing.committed, Exit.fail(failure("Failed to commit transaction")(error)))
      }
    }

    /** Gives the connection back: the group is committed first when its turn ended meanwhile. */
    const give = () => {
      if (commitDue) commit()
      const next = waiters.shift()
      if (next === undefined) held = false
      else next()
    }

    /** The end of a turn of the event loop: commit now, or when the unit of work running now ends. */
    const endOfTurn = () => {
      if (closed) return
      if (held) commitDue = true
      else commit()
    }

    // Closing: what is written is committed (but the writes of a unit of work still running, taken back), and
    // nothing runs on the connection any more.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (held && group !== undefined) {
          try {
            statements.run("ROLLBACK TO boxkit_unit", [])
          } catch {
            // No unit of work is running (the connection is held for a statement): nothing to take back.
          }
        }
        commit()
        closed = true
        statements.clear()
      })
    )

    /** The open group, opened (`BEGIN IMMEDIATE`) when there is none; the caller holds the connection. */
    const join = (): Group => {
      if (closed) throw new Error("the SQLite state store is closed")
      if (group !== undefined) return group
      statements.run("BEGIN IMMEDIATE", [])
      const opened: Group = { committed: Deferred.unsafeMake<void, SqlError.SqlError>(FiberId.none) }
      group = opened
      setImmediate(endOfTurn)
      return opened
    }

    /** After a failed statement: when SQLite ended the whole transaction, the group failed with it. */
    const checkGroup = (error: SqlError.SqlError) => {
      if (group !== undefined && !database.inTransaction) {
        const lost = group
        group = undefined
        commitDue = false
        Deferred.unsafeDone(lost.committed, Exit.fail(error))
      }
    }

    /** Runs a statement now, in the group open now (a unit of work holds the connection); `f` reads its outcome. */
    const runNow = <A>(sql: string, params: ReadonlyArray<unknown>, f: (outcome: Outcome) => A) =>
      Effect.suspend((): Effect.Effect<A, SqlError.SqlError> => {
        if (group === undefined) {
          return Effect.fail(failure("The transaction was rolled back")(new Error("the transaction was rolled back")))
        }
        try {
          return Effect.succeed(f(statements.run(sql, params)))
        } catch (cause) {
          const error = failure("Failed to execute statement")(cause)
          checkGroup(error)
          return Effect.fail(error)
        }
      })

    /** Runs a statement outside any unit of work: takes the connection, joins the group, waits for its commit. */
    const runGrouped = <A>(sql: string, params: ReadonlyArray<unknown>, f: (outcome: Outcome) => A) =>
      Effect.flatMap(take, (): Effect.Effect<A, SqlError.SqlError> => {
        let outcome: Outcome
        let joined: Group
        try {
          joined = join()
          outcome = statements.run(sql, params)
        } catch (cause) {
          const error = failure("Failed to execute statement")(cause)
          checkGroup(error)
          give()
          return Effect.fail(error)
        }
        give()
        return Effect.as(Deferred.await(joined.committed), f(outcome))
      })

    const connectionRunning = (run: typeof runNow): SqlConnection.Connection => {
      const execute: SqlConnection.Connection["execute"] = (sql, params, transformRows) =>
        run(sql, params, transformRows === undefined ? objectsOf : (outcome) => transformRows(objectsOf(outcome)))
      return {
        execute,
        executeRaw: (sql, params) =>
          run(sql, params, (outcome) => ({ rows: objectsOf(outcome), rowsAffected: outcome.changes })),
        executeValues: (sql, params) => run(sql, params, (outcome) => outcome.values),
        executeUnprepared: execute,
        executeStream: () => Stream.dieMessage("executeStream is not supported by the SQLite state store")
      }
    }
    const inUnit = connectionRunning(runNow)
    const outside = connectionRunning(runGrouped)

    /** The connection of a fiber: in its unit of work while that is open, else outside any. */
    const connectionOf = (context: Context.Context<never>) => {
      const unit = Context.getOption(context, CurrentUnit)
      return Option.isSome(unit) && unit.value.open ? inUnit : outside
    }
    const acquirer = Effect.map(Effect.context<never>(), connectionOf)

    /** A savepoint statement run in the current unit, as an effect that cannot fail (a failure is a defect). */
    const savepointStatement = (sql: string) => Effect.orDie(runNow(sql, [], () => undefined))

    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Effect.serviceOption(CurrentUnit), (outer) => {
          if (Option.isSome(outer) && outer.value.open) {
            // Nested: a savepoint of its own within the unit.
            const name = `boxkit_${++outer.value.depth}`
            return Effect.zipRight(
              savepointStatement(`SAVEPOINT ${name}`),
              Effect.onExit(restore(effect), (exit) =>
                Exit.isSuccess(exit)
                  ? savepointStatement(`RELEASE ${name}`)
                  : Effect.zipRight(savepointStatement(`ROLLBACK TO ${name}`), savepointStatement(`RELEASE ${name}`)))
            )
          }
          return Effect.flatMap(take, () => {
            let joined: Group
            try {
              joined = join()
              statements.run("SAVEPOINT boxkit_unit", [])
            } catch (cause) {
              const error = failure("Failed to begin transaction")(cause)
              checkGroup(error)
              give()
              return Effect.fail(error)
            }
            const unit: Unit = { open: true, depth: 0 }
            return Effect.flatMap(
              Effect.exit(Effect.provideService(restore(effect), CurrentUnit, unit)),
              (exit): Effect.Effect<A, E | SqlError.SqlError> => {
                unit.open = false
                let ended: SqlError.SqlError | undefined
                if (group !== joined) {
                  ended = failure("The transaction was rolled back")(new Error("the transaction was rolled back"))
                } else {
                  try {
                    if (Exit.isFailure(exit)) statements.run("ROLLBACK TO boxkit_unit", [])
                    statements.run("RELEASE boxkit_unit", [])
                  } catch (cause) {
                    ended = failure("Failed to end transaction")(cause)
                    checkGroup(ended)
                  }
                }
                give()
                if (Exit.isFailure(exit)) return exit
                if (ended !== undefined) return Effect.fail(ended)
                return Effect.zipRight(Deferred.await(joined.committed), exit)
              }
            )
          })
        })
      )

    const client = yield* SqlClient.make({
      acquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    return DirectStatements.make(Object.assign(client, { withTransaction }) as SqlClient.SqlClient, connectionOf)
  })

/** The client as the `SqlClient` service; the database is closed when the layer closes. */
export const layer = (open: () => Database, intMode: IntMode = "number"): Layer.Layer<SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.flatMap(
      Effect.acquireRelease(
        Effect.try({ try: open, catch: failure("Failed to open the database") }),
        (database) => Effect.sync(() => database.close())
      ),
      (database) => make(database, intMode)
    )
  ).pipe(Layer.provide(Reactivity.layer))
