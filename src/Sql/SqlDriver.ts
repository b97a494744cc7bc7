/**
 * The SQL drivers boxkit loads on demand (they are optional peer dependencies): a driver module loaded when a store
 * that needs it is built, with an error naming what to install when it is missing, and the `SqlClient` of one SQLite
 * file over the `libsql` driver (or `@effect/sql-libsql`). Shared by the local service's durable state
 * (Server/state/sql/SqlState.ts) and the durable workflows of `boxkit/workflow`.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state"; docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import type { SqlClient } from "@effect/sql"
import type * as Libsql from "@libsql/client"
import { Data, Effect, Layer } from "effect"
import { chmodSync, closeSync, existsSync, openSync } from "node:fs"
import * as SqliteClient from "../Server/state/sql/SqliteClient.js"
import * as WalCheckpoints from "./WalCheckpoints.js"

/**
 * A SQL driver could not be loaded or a database not opened; `message` says which and, for a missing package, what
 * to install.
 *
 * @since 0.1.0
 * @category Errors
 */
export class SqlDriverError extends Data.TaggedError("SqlDriverError")<{ readonly message: string }> {}

/**
 * The optional peer dependencies each database needs (package.json `peerDependenciesMeta`), with their ranges: npm's
 * `latest` of `@effect/sql-pg` is an Effect 4 release and that of `libsql` is outside boxkit's peer range, so an
 * install line without them fails (ERESOLVE).
 */
export const driverPackages = {
  SQLite: "@effect/sql@^0.52.1 @effect/sql-libsql@^0.42.0 libsql@^0.4.7",
  PostgreSQL: "@effect/sql@^0.52.1 @effect/sql-pg@^0.53.0"
} as const

/** The message of an error and of its cause, if any. */
export const messageOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null || !("message" in error)) return String(error)
  const cause = (error as { readonly cause?: unknown }).cause
  const own = String((error as { readonly message: unknown }).message)
  return typeof cause === "object" && cause !== null && "message" in cause ? `${own} (${messageOf(cause)})` : own
}

/**
 * A driver module of one database, loaded when it is needed (a program that uses one database never loads the
 * other's). When it is not installed, a {@link SqlDriverError} naming what to install.
 */
export const load = <A>(database: keyof typeof driverPackages, importModule: () => Promise<A>) =>
  Effect.tryPromise({
    try: importModule,
    catch: (error) =>
      new SqlDriverError({
        message: ["MODULE_NOT_FOUND", "ERR_MODULE_NOT_FOUND"].includes(String((error as NodeJS.ErrnoException).code))
          ? `${database} needs the optional packages ${driverPackages[database]}: npm install ${driverPackages[database]}`
          : `cannot load the ${database} driver: ${messageOf(error)}`
      })
  })

/** `postgres://user:password@host:port/database` without its credentials, for people. */
export const describePostgres = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `PostgreSQL ${parsed.host}${parsed.pathname}`
  } catch {
    return "PostgreSQL"
  }
}

const driverError = (what: string) => (error: unknown) => new SqlDriverError({ message: `${what}: ${messageOf(error)}` })

/**
 * The libsql client of one file, with transactions on its one connection (`BEGIN IMMEDIATE` ... `COMMIT`).
 * `@libsql/client` opens a new connection after each transaction, which would lose the connection's settings; the
 * SQL client (`@effect/sql-libsql`) already lets one transaction run at a time.
 */
const oneConnection = (client: Libsql.Client): Libsql.Client => {
  const transaction = async (): Promise<Libsql.Transaction> => {
    await client.execute("BEGIN IMMEDIATE")
    let open = true
    const end = (statement: string) => async () => {
      if (!open) return
      open = false
      await client.execute(statement)
    }
    return {
      execute: (statement: Libsql.InStatement) => client.execute(statement),
      batch: async (statements: Array<Libsql.InStatement>) => {
        const results: Array<Libsql.ResultSet> = []
        for (const statement of statements) results.push(await client.execute(statement))
        return results
      },
      executeMultiple: (text: string) => client.executeMultiple(text),
      commit: end("COMMIT"),
      rollback: end("ROLLBACK"),
      close: () => {
        if (open) void end("ROLLBACK")()
      },
      get closed() {
        return !open
      }
    } as Libsql.Transaction
  }
  return {
    execute: (statement: Libsql.InStatement) => client.execute(statement),
    transaction,
    close: () => client.close(),
    get closed() {
      return client.closed
    },
    protocol: client.protocol
  } as unknown as Libsql.Client
}

/**
 * Makes the SQLite file at `path` and its companions (`-wal`, `-shm`, `-journal`) readable and writable by their owner
 * only (0600), whatever the umask and the directory's mode: the file is created empty with that mode before SQLite
 * opens it (SQLite gives the companions it creates the mode of the database file), and files left by an earlier
 * process with another mode are changed. The state holds secret values. Throws the file system's error.
 */
export const keepPrivate = (path: string): void => {
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600))
  for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
}

/** The longest report of `PRAGMA quick_check` kept in the damaged-file error, in characters. */
const quickCheckReportLength = 240

/**
 * The answer of SQLite's `PRAGMA quick_check`: `ok` for a sound file, else what it found (the first problems, joined;
 * a row of SQLite's report can itself hold several lines).
 */
const quickCheckResult = (rows: ReadonlyArray<unknown>): string =>
  rows.map((row) => Object.values(row as Record<string, unknown>)[0]).slice(0, 3).map(String).join("; ").trim()

/** What a check found, on one line (white space runs, line breaks included, as one space) and cut to its length. */
const oneLineReport = (found: string): string => {
  const line = found.replace(/\s+/g, " ").trim()
  return line.length > quickCheckReportLength ? `${line.slice(0, quickCheckReportLength - 3)}...` : line
}

/**
 * The error of a damaged SQLite file: one line naming the file, what was found (at most
 * {@link quickCheckReportLength} characters of it) and what to do. Source:
 * docs/ASSUMPTIONS.md "Durable state".
 */
export const damagedFileError = (path: string, found: string): SqlDriverError =>
  new SqlDriverError({
    message: `the SQLite file ${path} is damaged (${oneLineReport(found)}): ${damagedFileRemedy}`
  })

/**
 * What to do about a damaged SQLite file, as the damaged-file error says it (the command line prints no other fix
 * after it).
 */
export const damagedFileRemedy = "restore it from a backup, or move it away (with its -wal and -shm files) to start " +
  "with a new store"

/** True for SQLite's answers about a file that is not a database or is damaged (SQLITE_NOTADB, SQLITE_CORRUPT). */
const isDamage = (error: unknown): boolean =>
  /SQLITE_NOTADB|SQLITE_CORRUPT|file is not a database|malformed/i.test(`${messageOf(error)} ${String((error as { code?: unknown })?.code ?? "")}`)

/** An error opening the SQLite file at `path` as a {@link SqlDriverError}: its own, or the one it wraps as `cause`. */
const asDriverError = (path: string) => (error: unknown): SqlDriverError => {
  if (error instanceof SqlDriverError) return error
  const cause = (error as { readonly cause?: unknown } | undefined)?.cause
  return cause instanceof SqlDriverError ? cause : driverError(`SQLite ${path}`)(error)
}

/** The settings of a SQLite connection, before anything else runs on it. */
const sqlitePragmas = ["PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"] as const

/**
 * The `SqlClient` of one SQLite file at `path`, in WAL mode with `synchronous=NORMAL` (a write survives the process
 * being killed once its statement returns) and a 5 s busy timeout, transactions on its one connection; integers read
 * as `intMode` (default `number`; `bigint` where they can pass 2^53, as the workflow engine's snowflake ids do).
 * `client`: `prepared` (default), the `libsql` driver through Server/state/sql/SqliteClient.ts (statements prepared
 * once and run synchronously; docs/decisions/0003-sqlite-client.md); `stock`, `@effect/sql-libsql` over
 * `@libsql/client`.
 * The drivers are loaded when the layer is built. Fails with {@link SqlDriverError} when the driver is missing or
 * the file cannot be opened.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqliteFile = (
  path: string,
  options: { readonly intMode?: "number" | "bigint" | undefined; readonly client?: "prepared" | "stock" | undefined } = {}
): Layer.Layer<SqlClient.SqlClient, SqlDriverError> =>
  options.client === "stock" ? layerSqliteFileStock(path, options) : Layer.unwrapScoped(Effect.gen(function*() {
    const driver = yield* load("SQLite", () => import("libsql"))
    yield* Effect.try({ try: () => keepPrivate(path), catch: driverError(`cannot create ${path}`) })
    const driverFile = WalCheckpoints.loadedDriverFile()
    const client = SqliteClient.layer(() => {
      const database = new driver.default(path)
      try {
        for (const pragma of sqlitePragmas) database.exec(pragma)
        if (driverFile !== undefined) {
          database.exec(`PRAGMA wal_autocheckpoint = ${WalCheckpoints.connectionAutocheckpointPages}`)
        }
        const found = quickCheckResult(database.prepare("PRAGMA quick_check").all())
        if (found !== "ok") throw damagedFileError(path, found)
      } catch (error) {
        database.close()
        throw error instanceof SqlDriverError || !isDamage(error) ? error : damagedFileError(path, messageOf(error))
      }
      return database
    }, options.intMode ?? "number")
    // Started after the connection opened (the file is in WAL mode by then) and stopped before it closes.
    return driverFile === undefined ? client : Layer.provideMerge(Layer.scopedDiscard(WalCheckpoints.run(path, driverFile)), client)
  })).pipe(Layer.mapError(asDriverError(path)))

/** {@link layerSqliteFile} with the stock client. */
const layerSqliteFileStock = (
  path: string,
  options: { readonly intMode?: "number" | "bigint" | undefined }
): Layer.Layer<SqlClient.SqlClient, SqlDriverError> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const { LibsqlClient } = yield* load("SQLite", () => import("@effect/sql-libsql"))
    const { createClient } = yield* load("SQLite", () => import("@libsql/client"))
    yield* Effect.try({ try: () => keepPrivate(path), catch: driverError(`cannot create ${path}`) })
    const sdk = yield* Effect.acquireRelease(
      Effect.try({ try: () => createClient({ url: `file:${path}`, intMode: options.intMode ?? "number" }), catch: driverError(`cannot open ${path}`) }),
      (sdk) => Effect.sync(() => sdk.close())
    )
    yield* Effect.tryPromise({
      try: async () => {
        for (const pragma of sqlitePragmas) await sdk.execute(pragma)
        const found = quickCheckResult((await sdk.execute("PRAGMA quick_check")).rows)
        if (found !== "ok") throw damagedFileError(path, found)
      },
      catch: (error) =>
        error instanceof SqlDriverError ? error
        : isDamage(error) ? damagedFileError(path, messageOf(error))
        : driverError(`cannot use ${path}`)(error)
    })
    return LibsqlClient.layer({ liveClient: oneConnection(sdk) })
  })).pipe(Layer.mapError(asDriverError(path)))
