/**
 * Migration 4 (Migrations.ts) in SQLite and PostgreSQL: a store made before it, holding remembered idempotency keys,
 * comes out with each key's organization (from its API key: the key's own organization, or its user's), each API
 * key's keys and answer bytes in `idempotency_usage`, and each organization's answer bytes in `org_usage`; from then
 * on the triggers keep them in step as keys are settled, taken over and deleted.
 *
 * Source: docs/ASSUMPTIONS.md "Quotas" and "Durable state".
 */
import { Migrator, SqlClient } from "@effect/sql"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import { numberOf } from "../../src/Server/state/sql/Rows.js"
import * as Postgres from "../support/Postgres.js"
import * as SqlClients from "../support/SqlClients.js"

/** Runs the migrations whose id is at most `upTo`. */
const migrate = (upTo: number) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(
      Object.fromEntries(Object.entries(migrations).filter(([name]) => Number(name.split("_")[0]) <= upTo))
    )
  })

beforeAll(() => Postgres.startTestDatabase().then((database) => database.stop()), Postgres.startLimitMillis)

/** `idempotency_usage` as `{ scope: [keys, bytes] }`, and `org_usage.answer_bytes` as `{ org: bytes }`. */
const usage = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* sql`SELECT scope, held_keys, answer_bytes FROM idempotency_usage`
  const orgs = yield* sql`SELECT org_id, answer_bytes FROM org_usage`
  return {
    keys: Object.fromEntries(keys.map((row) => [row.scope, [numberOf(row.held_keys), numberOf(row.answer_bytes)]])),
    orgs: Object.fromEntries(orgs.map((row) => [row.org_id, numberOf(row.answer_bytes)]))
  }
})

describe.each([["SQLite", SqlClients.sqlite], ["PostgreSQL", SqlClients.postgres]] as const)("migration 4 in %s", (_, client) => {
  it.scoped("counts the keys stored before it, then follows settles, take-overs and deletes", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrate(3)
      yield* sql`INSERT INTO users (id, org_id, admin) VALUES (${"user_1"}, ${"org_b"}, ${0})`
      yield* sql`INSERT INTO api_keys (key_hash, key_id, org_id, user_id) VALUES
        (${"h1"}, ${"key_org"}, ${"org_a"}, ${null}), (${"h2"}, ${"key_user"}, ${null}, ${"user_1"})`
      const key = (scope: string, name: string, body: Uint8Array | null) =>
        sql`INSERT INTO idempotency_keys (scope, key, fingerprint, token, owner, settled, expires_at_millis, status,
          headers, body) VALUES (${scope}, ${name}, ${"f"}, ${name}, ${null}, ${body === null ? 0 : 1}, ${1000},
          ${body === null ? null : 400}, ${body === null ? null : "{}"}, ${body})`
      yield* key("key_org", "a1", new Uint8Array(100))
      yield* key("key_org", "a2", new Uint8Array(20))
      yield* key("key_user", "b1", new Uint8Array(7))
      yield* key("key_user", "b2", null)
      yield* migrate(Number.MAX_SAFE_INTEGER)
      expect(yield* usage).toEqual({
        keys: { key_org: [2, 120], key_user: [2, 7] },
        orgs: { org_a: 120, org_b: 7 }
      })
      // Settling the running key, taking a settled one over (its answer dropped), deleting one.
      yield* sql`UPDATE idempotency_keys SET settled = 1, body = ${new Uint8Array(5)} WHERE key = ${"b2"}`
      yield* sql`UPDATE idempotency_keys SET settled = 0, body = NULL WHERE key = ${"a1"}`
      yield* sql`DELETE FROM idempotency_keys WHERE key = ${"a2"}`
      expect(yield* usage).toEqual({
        keys: { key_org: [1, 0], key_user: [2, 12] },
        orgs: { org_a: 0, org_b: 12 }
      })
    }).pipe(Effect.provide(Layer.orDie(client))))
})
