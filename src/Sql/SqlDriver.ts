/**
 * The SQL drivers boxkit loads on demand (they are optional peer dependencies): a driver module loaded when a store
 * that needs it is built, with an error naming what to install when it is missing, and the `SqlClient` of one SQLite
 * file over `@effect/sql-libsql`. Shared by the local service's durable state (Server/state/sql/SqlState.ts) and the
 * durable workflows of `boxkit/workflow`.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state"; docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import type { SqlClient } from "@effect/sql"
import type * as Libsql from "@libsql/client"
import { Data, Effect, Layer } from "effect"
import * as SqliteClient from "../Server/state/sql/SqliteClient.js"

/**
 * A SQL driver could not be loaded or a database not opened; `message` says which and, for a missing package, what
 * to install.
 *
 * @since 0.1.0
 * @category Errors
 */
export class SqlDriverError extends Data.TaggedError("SqlDriverError")<{ readonly message: string }> {}

/** The optional peer dependencies each database needs (package.json `peerDependenciesMeta`). */
export const driverPackages = {
  SQLite: "@effect/sql @effect/sql-libsql libsql",
  PostgreSQL: "@effect/sql @effect/sql-pg"
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

/** The settings of a SQLite connection, before anything else runs on it. */
const sqlitePragmas = ["PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"] as const

/**
 * The `SqlClient` of one SQLite file at `path`, in WAL mode with `synchronous=NORMAL` (a write survives the process
 * being killed once its statement returns) and a 5 s busy timeout, transactions on its one connection; integers read
 * as `intMode` (default `number`; `bigint` where they can pass 2^53, as the workflow engine's snowflake ids do).
 * `client`: `prepared` (default), the `libsql` driver through Server/state/sql/SqliteClient.ts (statements prepared
 * once, group commit; docs/decisions/0003-sqlite-client.md); `stock`, `@effect/sql-libsql` over `@libsql/client`.
 * The drivers are loaded when the layer is built. Fails with {@link SqlDriverError} when the driver is missing or
 * the file cannot be opened.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqliteFile = (
  path: string,
  options: { readonly intMode?: "number" | "bigint"; readonly client?: "prepared" | "stock" } = {}
): Layer.Layer<SqlClient.SqlClient, SqlDriverError> =>
  options.client === "stock" ? layerSqliteFileStock(path, options) : Layer.unwrapScoped(Effect.gen(function*() {
    const driver = yield* load("SQLite", () => import("libsql"))
    return SqliteClient.layer(() => {
      const database = new driver.default(path)
      for (const pragma of sqlitePragmas) database.exec(pragma)
      return database
    }, options.intMode ?? "number")
  })).pipe(Layer.mapError((error) => error instanceof SqlDriverError ? error : driverError(`SQLite ${path}`)(error)))

/** {@link layerSqliteFile} with the stock client. */
const layerSqliteFileStock = (
  path: string,
  options: { readonly intMode?: "number" | "bigint" }
): Layer.Layer<SqlClient.SqlClient, SqlDriverError> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const { LibsqlClient } = yield* load("SQLite", () => import("@effect/sql-libsql"))
    const { createClient } = yield* load("SQLite", () => import("@libsql/client"))
    const sdk = yield* Effect.acquireRelease(
      Effect.try({ try: () => createClient({ url: `file:${path}`, intMode: options.intMode ?? "number" }), catch: driverError(`cannot open ${path}`) }),
      (sdk) => Effect.sync(() => sdk.close())
    )
    yield* Effect.tryPromise({
      try: async () => {
        for (const pragma of sqlitePragmas) await sdk.execute(pragma)
      },
      catch: driverError(`cannot use ${path}`)
    })
    return LibsqlClient.layer({ liveClient: oneConnection(sdk) })
  })).pipe(Layer.mapError((error) => error instanceof SqlDriverError ? error : driverError(`SQLite ${path}`)(error)))
