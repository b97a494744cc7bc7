/**
 * The durable state stores of the local service (StateStore.ts) over `@effect/sql`: SQLite in a data directory
 * (`@effect/sql-libsql`, one process per directory) and PostgreSQL (`@effect/sql-pg`, any number of instances on one
 * database). Both run the migrations of Migrations.ts at start.
 *
 * SQLite runs in WAL mode with `synchronous=NORMAL`: a write is in the database file's log when its statement returns,
 * so it survives the process being killed at any point (the crash tests); only the last writes before a power loss
 * of the machine may go. One service uses a directory at a time: it holds `serve.lock` (its process id) while it
 * runs, and a second service on the same directory is refused at start; a lock whose process is gone (killed) is
 * taken over.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { Migrator, SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Redacted } from "effect"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import type { LocalServiceConfig } from "../../LocalServiceConfig.js"
import { type StateStore, StateLocation, StateStoreError } from "../StateStore.js"
import { migrations } from "./Migrations.js"
import { boxes } from "./SqlBoxes.js"
import * as SqlIdempotency from "./SqlIdempotency.js"
import {
  apps,
  egressPolicies,
  identity,
  logs,
  responses,
  runtimeVersion,
  secrets,
  tcpAddresses
} from "./SqlRepositories.js"
import { layerDurableWork, layerInstances, layerTransactions } from "./SqlWork.js"
import * as SqlSnapshots from "./SqlSnapshots.js"
import * as SqlClockOffset from "./SqlClockOffset.js"
import { numberOf } from "./Rows.js"
import * as SqlDriver from "../../../Sql/SqlDriver.js"

/** The file of the SQLite database in a data directory. @since 0.1.0 @category Constants */
export const databaseFileName = "boxkit.db"

/** The lock file of a data directory: the process id of the service using it. @since 0.1.0 @category Constants */
export const lockFileName = "serve.lock"

/** The name of the migrations table. */
const migrationsTable = "effect_sql_migrations"

const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: migrationsTable })

/**
 * The migrations, one instance at a time: on PostgreSQL under a transaction-scoped advisory lock (the Migrator's own
 * table lock needs its table to exist, which two instances starting together would both try to create).
 */
const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${migrationLockKey})`
        yield* sql`CREATE TABLE IF NOT EXISTS ${sql(migrationsTable)} (migration_id integer PRIMARY KEY,
          created_at timestamp with time zone NOT NULL DEFAULT now(), name text NOT NULL)`
        yield* runMigrations
      })),
    orElse: () => runMigrations
  })
})

/** The advisory lock key of the migrations (any fixed number; "boxkit" in ASCII, truncated). */
const migrationLockKey = 0x626f786b6974

/** Every state service over the `SqlClient` in context, after the migrations; `description` names the store. */
const layerOver = (description: string, sole: boolean) => {
  const instances = layerInstances({ sole })
  const location = Layer.effect(
    StateLocation,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql`SELECT count(*) AS count FROM organizations`
      return { description, durable: true, fresh: numberOf(rows[0].count) === 0 }
    })
  )
  const services = Layer.mergeAll(
    identity,
    apps,
    secrets,
    egressPolicies,
    boxes,
    runtimeVersion,
    tcpAddresses,
    responses,
    logs,
    layerTransactions({ sole }),
    location,
    SqlSnapshots.layer,
    SqlClockOffset.layer,
    Layer.merge(SqlIdempotency.layer, layerDurableWork).pipe(Layer.provide(instances))
  )
  return services.pipe(Layer.provide(Layer.effectDiscard(migrate)))
}

/** An error of the SQL layer as a `StateStoreError` (the message kept). */
const storeError = (what: string) => (error: unknown) =>
  new StateStoreError({ message: error instanceof SqlDriver.SqlDriverError ? error.message : `${what}: ${SqlDriver.messageOf(error)}` })

/** Options of the SQLite store. @since 0.1.0 @category Models */
export interface SqliteStateOptions {
  /**
   * The SQL client: `prepared` (default), SqliteClient.ts (statements prepared once, run synchronously); `stock`,
   * `@effect/sql-libsql` over `@libsql/client` as they are. Both keep the same tables and answer alike. Without it,
   * `BOXKIT_SQLITE_CLIENT=stock` picks the stock one (so that `boxkit serve` can be measured on either:
   * docs/decisions/0003-sqlite-client.md).
   */
  readonly client?: "prepared" | "stock" | undefined
}

/** The client `BOXKIT_SQLITE_CLIENT` names (`stock`), else `prepared`. */
const clientFromEnvironment = (): "prepared" | "stock" =>
  process.env.BOXKIT_SQLITE_CLIENT === "stock" ? "stock" : "prepared"

/**
 * The state in SQLite, in `directory` (created if missing, readable by its owner only) as `boxkit.db` with its WAL.
 * Fails with `StateStoreError` when the directory cannot be made, the database cannot be opened (another `serve`
 * holds it) or a migration fails.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqlite = (
  directory: string,
  options: SqliteStateOptions = {}
): Layer.Layer<StateStore, StateStoreError, LocalServiceConfig> => {
  const path = resolve(directory, databaseFileName)
  const client = Layer.unwrapScoped(Effect.gen(function*() {
    yield* Effect.try({
      try: () => mkdirSync(resolve(directory), { recursive: true, mode: 0o700 }),
      catch: storeError(`cannot create the data directory ${directory}`)
    })
    yield* Effect.acquireRelease(
      Effect.try({ try: () => lockDirectory(resolve(directory)), catch: (error) => error as StateStoreError }),
      (unlock) => Effect.sync(unlock)
    )
    return SqlDriver.layerSqliteFile(path, { client: options.client ?? clientFromEnvironment() })
  }))
  return layerOver(`SQLite ${join(resolve(directory), databaseFileName)}`, true).pipe(
    Layer.provide(client),
    Layer.mapError((error) => error instanceof StateStoreError ? error : storeError(`SQLite state in ${directory}`)(error))
  )
}

/** The directories this process holds (a service of this process may be stopped and another started). */
const heldHere = new Set<string>()

/** True when a process with this id runs (signal 0 checks without sending anything). */
const processRuns = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Takes `directory/serve.lock` for this process (created exclusively; a lock left by a process that is gone, or by
 * this process for a service that stopped, is taken over). Throws `StateStoreError` when a running service holds
 * it. Returns the release.
 */
const lockDirectory = (directory: string): () => void => {
  const path = join(directory, lockFileName)
  if (heldHere.has(directory)) {
    throw new StateStoreError({ message: `${directory} is in use by another boxkit serve (in this process)` })
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: "wx", mode: 0o600 })
      heldHere.add(directory)
      return () => {
        heldHere.delete(directory)
        rmSync(path, { force: true })
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new StateStoreError({ message: `cannot lock ${directory}: ${(error as Error).message}` })
      }
      const holder = Number.parseInt(readFileSync(path, "utf8"), 10)
      if (Number.isInteger(holder) && holder !== process.pid && processRuns(holder)) {
        throw new StateStoreError({
          message: `${directory} is in use by another boxkit serve (process ${holder}; ${path})`
        })
      }
      rmSync(path, { force: true })
    }
  }
  throw new StateStoreError({ message: `cannot lock ${directory}: ${path} keeps coming back` })
}

/**
 * `postgres://user:password@host:port/database` without its credentials, for people.
 *
 * @since 0.1.0
 * @category Utils
 */
export const describePostgres = SqlDriver.describePostgres

/**
 * What is wrong with a PostgreSQL connection URL, for people (never showing its password), or `undefined` when it
 * is a `postgres:` or `postgresql:` URL (`postgres://USER:PASSWORD@HOST:PORT/DATABASE`; what PostgreSQL's driver
 * fills in by default, such as the host or the database, is left to it).
 * Checked before any connection, so that a mistyped URL is not reported as a DNS or connection failure.
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 * @category Utils
 */
export const postgresUrlProblem = (url: string): string | undefined => {
  const expected = "expected postgres://USER:PASSWORD@HOST:5432/DATABASE"
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    // PostgreSQL's own forms that WHATWG URLs refuse (`postgres://user@/db?host=/run/postgresql`): the driver decides.
    if (/^postgres(ql)?:\/\//.test(url)) return undefined
    // The value itself is not shown: it may hold a password.
    return `the database URL is not a URL: ${expected}`
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    return `the database URL's scheme ${parsed.protocol} is not supported: boxkit keeps durable state in PostgreSQL ` +
      `(postgres:// or postgresql://), or in SQLite with --data-dir; ${expected}`
  }
  return undefined
}

/** Options of the PostgreSQL store. @since 0.1.0 @category Models */
export interface PostgresStateOptions {
  /** Connections of this instance's pool (default 10). */
  readonly maxConnections?: number | undefined
  /**
   * How long one statement may take (default 5 s): PostgreSQL cancels it after that (`statement_timeout`), the
   * driver gives up on an answer that does not come 1 s later (`query_timeout`: a server that is stopped or
   * unreachable), and a new connection must be made within it. The request then answers 503 with `Retry-After`
   * (StoreOutage.ts). Values the URL sets itself (`?statement_timeout=…`) win.
   */
  readonly statementTimeout?: Duration.DurationInput | undefined
}

/**
 * The default of {@link PostgresStateOptions.statementTimeout}.
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultStatementTimeout: Duration.Duration = Duration.seconds(5)

/**
 * `url` with the statement and read timeouts of `timeout` as connection parameters (which the `pg` driver reads from
 * the URL), unless the URL sets them. A URL WHATWG URLs cannot parse is left as it is.
 *
 * @since 0.1.0
 * @category Utils
 */
export const withTimeouts = (url: string, timeout: Duration.Duration): string => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url
  }
  const milliseconds = Math.max(1, Math.round(Duration.toMillis(timeout)))
  if (!parsed.searchParams.has("statement_timeout")) parsed.searchParams.set("statement_timeout", String(milliseconds))
  if (!parsed.searchParams.has("query_timeout")) parsed.searchParams.set("query_timeout", String(milliseconds + 1000))
  return parsed.toString()
}

/**
 * The state in PostgreSQL at `url` (`postgres://user:password@host:port/database`; the database must exist). Several
 * instances on one database are one service (SqlWork.ts). Fails with `StateStoreError` when the database refuses
 * the connection or a migration fails.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerPostgres = (
  url: Redacted.Redacted<string>,
  options: PostgresStateOptions = {}
): Layer.Layer<StateStore, StateStoreError, LocalServiceConfig> => {
  const problem = postgresUrlProblem(Redacted.value(url))
  if (problem !== undefined) return Layer.fail(new StateStoreError({ message: problem }))
  return layerOver(describePostgres(Redacted.value(url)), false).pipe(
    Layer.provide(Layer.unwrapEffect(Effect.map(
      SqlDriver.load("PostgreSQL", () => import("@effect/sql-pg")),
      ({ PgClient }) => {
        const timeout = Duration.decode(options.statementTimeout ?? defaultStatementTimeout)
        return PgClient.layer({
          url: Redacted.make(withTimeouts(Redacted.value(url), timeout)),
          maxConnections: options.maxConnections ?? 10,
          connectTimeout: timeout,
          applicationName: "boxkit"
        })
      }
    ))),
    Layer.mapError((error) => error instanceof StateStoreError ? error : storeError("PostgreSQL state")(error))
  )
}
