/**
 * The building blocks the SQL repositories share (SqlRepositories.ts, SqlBoxes.ts, SqlIdempotency.ts): a database
 * failure as the repositories' `StoreError`, the keys a text column can hold, the row lock and read-modify-write of
 * an update, an organization's stored bytes read under its usage row's lock, and an insert made only below an
 * organization's count quota (`org_usage`, Migrations.ts migration 3), each for SQLite and PostgreSQL.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state", "Quotas".
 *
 * @since 0.1.0
 */
import { SqlClient, type SqlConnection, type SqlError, type Statement } from "@effect/sql"
import { Effect, Option } from "effect"
import * as Text from "../../../Domain/Text.js"
import { StoreError } from "../StoreError.js"
import { numberOf } from "./Rows.js"

/** A row as the client answers it: values by column name. */
export type Row = Record<string, unknown>

/** `effect` with its database failure as the repositories' `StoreError` of `operation` (e.g. `Apps.list`). */
export const refail = <A, R>(
  operation: string,
  effect: Effect.Effect<A, SqlError.SqlError, R>
): Effect.Effect<A, StoreError, R> => StoreError.refail(operation)(effect)

/**
 * True when a text column can hold `key` as it is: no NUL (PostgreSQL refuses it with an error, SQLite's strings end
 * at it) and no unpaired surrogate (it would be written as U+FFFD). No row has any other key, so a lookup of one finds
 * nothing without asking the database: the answer memory gives (docs/ASSUMPTIONS.md "Text fields").
 */
export const storable = (key: string): boolean => Text.isFreeText(key)

/**
 * How the statements of a create's unit of work and of the boots run (SqlIdempotency.ts, SqlBoxes.ts): `rows` answers
 * a statement's rows, `raw` the client's raw result (`rowsAffectedOf` reads it).
 */
export interface UnitStatements {
  readonly rows: (statement: Statement.Statement<Row>) => Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError>
  readonly raw: (statement: Statement.Statement<Row>) => Effect.Effect<unknown, SqlError.SqlError>
}

/**
 * {@link UnitStatements}. `traced` (`LocalServiceConfig.requestTracing`): each statement runs as `@effect/sql` runs it,
 * in a `sql.execute` span. Otherwise a statement inside a transaction is compiled and run on the transaction's own
 * connection (`SqlClient.TransactionConnection`, which holds the one connection until the transaction ends): no span,
 * no scope to take the connection, no statement transformer (the store sets none). Each of these costs more CPU than
 * SQLite's own work on a create's statements (docs/decisions/0003-sqlite-client.md, "Statements of a unit"). Outside
 * a transaction a statement runs as `@effect/sql` runs it, taking the connection.
 */
export const unitStatements = (traced: boolean): UnitStatements => {
  if (traced) return { rows: (statement) => statement, raw: (statement) => statement.raw }
  // As `@effect/sql` runs them: rows compiled with the compiler's transforms, raw results without.
  const onConnection = <A>(
    outside: Effect.Effect<A, SqlError.SqlError>,
    run: (connection: SqlConnection.Connection) => Effect.Effect<A, SqlError.SqlError>
  ) =>
    Effect.flatMap(
      Effect.serviceOption(SqlClient.TransactionConnection),
      (transaction) => Option.isNone(transaction) ? outside : run(transaction.value[0])
    )
  return {
    rows: (statement) =>
      onConnection(statement, (connection) => connection.execute(...statement.compile(), undefined)),
    raw: (statement) => onConnection(statement.raw, (connection) => connection.executeRaw(...statement.compile(true)))
  }
}

/** The first row, if any. */
export const first = (rows: ReadonlyArray<Row>): Option.Option<Row> => Option.fromNullable(rows[0])

/** The row lock of a read-modify-write: `FOR UPDATE` on PostgreSQL; nothing on SQLite (one writer at a time). */
export const forUpdate = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })

/**
 * Reads one row with its lock, applies `f` to the decoded record and writes it back, in one transaction; None when
 * the row does not exist. Fails with the database's `SqlError` (the caller names the operation: `StoreError.refail`).
 */
export const modify = <A>(
  sql: SqlClient.SqlClient,
  read: Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError>,
  decode: (row: Row) => A,
  f: (record: A) => A,
  write: (next: A, current: A) => Effect.Effect<unknown, SqlError.SqlError>
): Effect.Effect<Option.Option<A>, SqlError.SqlError> =>
  sql.withTransaction(Effect.gen(function*() {
    const row = first(yield* read)
    if (Option.isNone(row)) return Option.none<A>()
    const current = decode(row.value)
    const next = f(current)
    if (next !== current) yield* write(next, current)
    return Option.some(next)
  }))

/**
 * What organization `orgId` stores (clipboard, response and remembered answer bytes of `org_usage`), read in the
 * current transaction with the organization's usage row locked until it ends: on PostgreSQL an upsert creates the row
 * if missing and locks it, returning its latest values (writes of one organization on any instance take turns);
 * SQLite has one writer, whose transaction is the lock.
 */
export const lockedStoredBytes = (sql: SqlClient.SqlClient, orgId: string): Effect.Effect<number, SqlError.SqlError> =>
  Effect.map(
    sql.onDialectOrElse({
      pg: () =>
        sql`INSERT INTO org_usage (org_id) VALUES (${orgId})
          ON CONFLICT (org_id) DO UPDATE SET active_boxes = org_usage.active_boxes
          RETURNING clipboard_bytes, response_bytes, answer_bytes`,
      orElse: () => sql`SELECT clipboard_bytes, response_bytes, answer_bytes FROM org_usage WHERE org_id = ${orgId}`
    }),
    (rows) =>
      rows.length === 0
        ? 0
        : numberOf(rows[0].clipboard_bytes) + numberOf(rows[0].response_bytes) + numberOf(rows[0].answer_bytes)
  )

/** The `org_usage` columns that count rows (Migrations.ts migration 3). */
export type CountColumn = "secrets" | "egress_policies" | "apps"

/**
 * `insertInto` (`INSERT INTO table (columns)`) `values` (`SELECT value, ...`) `tail`, made only while organization
 * `orgId` holds fewer than `max` of what `column` counts: one statement. On PostgreSQL the organization's usage row
 * is created if missing and locked by an upsert that returns its latest count (inserts of one organization on any
 * instance take turns; the trigger's count commits with the row); SQLite has one writer. Values bound in the SELECT
 * are text to PostgreSQL: cast the number columns.
 */
export const insertBelowCount = (
  sql: SqlClient.SqlClient,
  column: CountColumn,
  orgId: string,
  max: number,
  insertInto: Statement.Fragment,
  values: Statement.Fragment,
  tail: Statement.Fragment
) => {
  const counted = sql.literal(column)
  return sql.onDialectOrElse({
    pg: () =>
      sql`WITH usage AS (INSERT INTO org_usage (org_id) VALUES (${orgId})
          ON CONFLICT (org_id) DO UPDATE SET ${counted} = org_usage.${counted} RETURNING ${counted} AS held)
        ${insertInto} ${values} FROM usage WHERE usage.held < ${max} ${tail}`,
    orElse: () =>
      sql`${insertInto} ${values}
        WHERE COALESCE((SELECT ${counted} FROM org_usage WHERE org_id = ${orgId}), 0) < ${max} ${tail}`
  })
}

/** How many of what `column` counts organization `orgId` holds. */
export const countOf = (sql: SqlClient.SqlClient, column: CountColumn, orgId: string) =>
  sql`SELECT ${sql.literal(column)} AS held FROM org_usage WHERE org_id = ${orgId}`.pipe(
    Effect.map((rows) => rows.length === 0 ? 0 : numberOf(rows[0].held))
  )
