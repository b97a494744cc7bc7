/**
 * A failing SQLite database is a typed error, answered once at the edge (src/Server/state/StoreError.ts,
 * StoreOutage.ts; docs/ASSUMPTIONS.md "Durable state"; spec "Errors" rule 2):
 * - a repository whose statement fails fails with `StoreError` in its error channel (not a defect), naming the
 *   operation, with `reason` `failed` for a broken schema;
 * - over HTTP, such a failure is the 500 `server_error` envelope, and a database locked by another connection past the
 *   busy timeout is the 503 `server_error` envelope with `Retry-After: 2`; nothing is acknowledged that was not stored.
 */
import { describe, expect, it } from "vitest"
import { Cause, Effect, Exit, Layer, ManagedRuntime, Option, Schema } from "effect"
import { Migrator, SqlClient } from "@effect/sql"
import Database from "libsql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import * as Seed from "../../src/Server/state/Seed.js"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import * as SqlRepositories from "../../src/Server/state/sql/SqlRepositories.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import { StoreError } from "../../src/Server/state/StoreError.js"
import * as SqlClients from "../support/SqlClients.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

/** The secrets repository over a migrated SQLite database, and the database's client to break it with. */
const secretsOnSqlite = SqlRepositories.secrets.pipe(
  Layer.provideMerge(Layer.effectDiscard(Migrator.make({})({ loader: Migrator.fromRecord(migrations) }))),
  Layer.provideMerge(SqlClients.sqlite),
  Layer.orDie
)

describe("a SQLite store that fails", () => {
  it("fails a repository with StoreError in its error channel, not a defect", () =>
    Effect.gen(function*() {
      const secrets = yield* Repositories.Secrets
      const sql = yield* SqlClient.SqlClient
      yield* sql`DROP TABLE secrets`
      const exit = yield* Effect.exit(secrets.get("org_acme", "GITHUB_TOKEN"))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        expect(Cause.isDie(exit.cause)).toBe(false)
        const error = Option.getOrThrow(Cause.failureOption(exit.cause))
        expect(error).toBeInstanceOf(StoreError)
        expect(error).toMatchObject({ _tag: "StoreError", reason: "failed", operation: "Secrets.get" })
      }
    }).pipe(Effect.provide(secretsOnSqlite), Effect.scoped, Effect.runPromise))

  it.each(["fast", "platform"] as const)(
    "is answered with the envelope: 500 for a failed statement, 503 with Retry-After for a locked database (%s path)",
    async (server) => {
      const directory = mkdtempSync(join(tmpdir(), "boxkit-store-error-"))
      const runtime = ManagedRuntime.make(
        LocalService.layerNode(seed, { state: SqlState.layerSqlite(directory), server })
      )
      const other = new Database(join(directory, "boxkit.db"))
      try {
        const baseUrl = await runtime.runPromise(LocalService.baseUrl)
        const send = async (path: string, init: RequestInit = {}) => {
          const answer = await fetch(`${baseUrl}${path}`, {
            headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
            signal: AbortSignal.timeout(30_000),
            ...init
          })
          const body = await answer.json().catch(() => undefined)
          return { status: answer.status, retryAfter: answer.headers.get("retry-after"), type: body?.error?.type }
        }
        const createSecret = (name: string) =>
          send("/secrets", { method: "POST", body: JSON.stringify({ name, value: `value of ${name}` }) })
        expect((await createSecret("BEFORE")).status).toBe(201)

        // A statement that fails for another reason (a trigger refuses the insert): 500, the envelope, nothing stored.
        other.exec(
          "CREATE TRIGGER refuse_policies BEFORE INSERT ON egress_policies BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        expect(await send("/egress-policies", { method: "POST", body: JSON.stringify({ name: "p", document: {} }) }))
          .toEqual({ status: 500, retryAfter: null, type: "server_error" })
        other.exec("DROP TRIGGER refuse_policies")
        expect((await createSecret("AFTER_FAILURE")).status).toBe(201)

        // Another connection holds the write lock past the service's busy timeout: the store is unavailable.
        other.exec("BEGIN IMMEDIATE")
        expect(await createSecret("LOCKED")).toEqual({ status: 503, retryAfter: "2", type: "server_error" })
        other.exec("ROLLBACK")
        expect((await send("/secrets/LOCKED")).status).toBe(404)
        // Once the lock is let go, the service writes again without a restart.
        expect((await createSecret("AFTER_LOCK")).status).toBe(201)
      } finally {
        other.close()
        await runtime.dispose()
        rmSync(directory, { recursive: true, force: true })
      }
    },
    60_000
  )
})
