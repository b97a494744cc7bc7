/**
 * A data directory keeps its secrets and refuses what it cannot serve, as a local attacker or a failing disk would
 * test it (docs/ASSUMPTIONS.md "Durable state"):
 * - a directory that already exists with mode 0755, under a permissive umask: the database and its `-wal` and `-shm`
 *   files are 0600 (they hold secret values), and files an earlier process left 0644 become 0600;
 * - random bytes written into the database file: the service refuses to start with one line naming the file and what
 *   to do, on both SQLite clients, instead of starting and answering 500 to every request;
 * - `--database-url` values that are not PostgreSQL URLs: refused before any connection, with the problem named and
 *   no password shown.
 */
import { afterEach, describe, expect, it } from "vitest"
import { Cause, Effect, Exit, Layer, ManagedRuntime, Option, Redacted, Schema } from "effect"
import { chmodSync, closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

const directories: Array<string> = []
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true })
})

/** A fresh directory with mode 0755, as `mkdir` under the usual umask leaves it. */
const openDirectory = () => {
  const directory = mkdtempSync(join(tmpdir(), "boxkit-datadir-"))
  chmodSync(directory, 0o755)
  directories.push(directory)
  return directory
}

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8)

/** The service on `directory` with the `client` SQLite client: started, a secret written, then stopped. */
const writeSecret = async (directory: string, client: "prepared" | "stock" = "prepared") => {
  const runtime = ManagedRuntime.make(LocalService.layerNode(seed, { state: SqlState.layerSqlite(directory, { client }) }))
  try {
    const baseUrl = await runtime.runPromise(LocalService.baseUrl)
    const answer = await fetch(`${baseUrl}/secrets`, {
      method: "POST",
      headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
      body: JSON.stringify({ name: "DATA_DIR_TOKEN", value: "hunter2" })
    })
    expect(answer.status).toBe(201)
  } finally {
    await runtime.dispose()
  }
}

/** How building the service on `state` ends: its failure's message, or "started". */
const startOutcome = async (state: NonNullable<Parameters<typeof LocalService.layerNode>[1]>["state"]) => {
  const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(LocalService.layerNode(seed, { state }))))
  if (Exit.isSuccess(exit)) return "started"
  const failure = Option.getOrUndefined(Cause.failureOption(exit.cause))
  return failure !== undefined && typeof failure === "object" && "message" in failure ? String(failure.message) : Cause.pretty(exit.cause)
}

describe("a data directory", () => {
  it("keeps the database and its WAL files 0600 under a permissive umask and directory mode", async () => {
    const directory = openDirectory()
    const umask = process.umask(0o022)
    try {
      await writeSecret(directory)
      const database = join(directory, SqlState.databaseFileName)
      for (const file of [database, `${database}-wal`, `${database}-shm`]) {
        try {
          expect(modeOf(file), file).toBe("600")
        } catch (error) {
          // A checkpoint at close may remove -wal and -shm; the database itself always exists.
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
        }
      }
      // Files left readable by others by an earlier process are made private again at the next start.
      chmodSync(database, 0o644)
      await writeSecret(directory)
      expect(modeOf(database)).toBe("600")
    } finally {
      process.umask(umask)
    }
  })

  for (const client of ["prepared", "stock"] as const) {
    it(`refuses to start on a damaged database, naming the file and what to do (${client} client)`, async () => {
      const directory = openDirectory()
      await writeSecret(directory, client)
      const database = join(directory, SqlState.databaseFileName)
      // The pages moved from the WAL into the file (as SQLite's checkpoints do over time), then 40 KiB of random
      // bytes into the file past its header page: the file still opens as a database.
      const Libsql = (await import("libsql")).default
      const connection = new Libsql(database)
      connection.exec("PRAGMA wal_checkpoint(TRUNCATE)")
      connection.close()
      const descriptor = openSync(database, "r+")
      writeSync(descriptor, crypto.getRandomValues(new Uint8Array(40 * 1024)), 0, 40 * 1024, 4096)
      closeSync(descriptor)
      const outcome = await startOutcome(SqlState.layerSqlite(directory, { client }))
      expect(outcome).toContain(`the SQLite file ${database} is damaged`)
      expect(outcome).toContain("restore it from a backup, or move it away")
      expect(outcome.split("\n")).toHaveLength(1)
    })
  }

  it("refuses a file that is not a database at all", async () => {
    const directory = openDirectory()
    const database = join(directory, SqlState.databaseFileName)
    const descriptor = openSync(database, "w")
    writeSync(descriptor, crypto.getRandomValues(new Uint8Array(8192)))
    closeSync(descriptor)
    const outcome = await startOutcome(SqlState.layerSqlite(directory))
    expect(outcome).toContain(`the SQLite file ${database} is damaged`)
  })
})

describe("a database URL", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["notaurl", "the database URL is not a URL"],
    ["mysql://root:pw@127.0.0.1/boxkit", "the database URL's scheme mysql: is not supported"],
    ["user:hunter2@example", "the database URL's scheme user: is not supported"],
    ["127.0.0.1:5432/boxkit?password=hunter2", "the database URL is not a URL"],
    ["hunter2@localhost/boxkit", "the database URL is not a URL"]
  ]
  for (const [url, expected] of cases) {
    it(`${JSON.stringify(url)} is refused before connecting, naming the problem`, async () => {
      const outcome = await startOutcome(SqlState.layerPostgres(Redacted.make(url)))
      expect(outcome).toContain(expected)
      expect(outcome).toContain("expected postgres://USER:PASSWORD@HOST:5432/DATABASE")
      expect(outcome).not.toContain("hunter2")
      expect(outcome).not.toContain(":pw@")
    })
  }

  it("accepts the forms PostgreSQL takes", () => {
    for (const url of ["postgres://u:p@127.0.0.1:5432/boxkit", "postgresql://localhost/boxkit", "postgres://u@/boxkit?host=/run/postgresql"]) {
      expect(SqlState.postgresUrlProblem(url), url).toBeUndefined()
    }
  })
})
