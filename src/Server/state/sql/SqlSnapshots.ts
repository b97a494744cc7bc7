/**
 * The snapshot store of the SQL state (StateSnapshots.ts `SnapshotStore`, tables in Migrations.ts): users, API keys
 * (by hash), secrets, settled idempotency keys and tcp address pools, read and written in their tables. The usage
 * counts follow by the tables' triggers, as for every other writer.
 *
 * A consistent read is one transaction: on SQLite `BEGIN IMMEDIATE` (SqliteClient.ts), which no write passes until
 * it ends; on PostgreSQL `REPEATABLE READ`, whose statements all see the data as its first one did, whatever other
 * instances commit meanwhile.
 *
 * Source: docs/ASSUMPTIONS.md "Snapshots (local service)".
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import type { SecretRecord } from "../Repositories.js"
import { type PooledAddress, type RememberedKey, SnapshotStore, type StoredApiKey, tcpPortOf } from "../StateSnapshots.js"
import { StoreError } from "../StoreError.js"
import { bytesOf, flagOf, numberOf, textOrNull } from "./Rows.js"

type Row = Record<string, unknown>

/** A settled key of `idempotency_keys`. */
const rememberedOf = (row: Row): RememberedKey => ({
  keyId: String(row.scope),
  orgId: textOrNull(row.org_id),
  key: String(row.key),
  fingerprint: String(row.fingerprint),
  expiresAtMillis: numberOf(row.expires_at_millis),
  answer: { status: numberOf(row.status), headers: JSON.parse(String(row.headers)), body: bytesOf(row.body) }
})

/** The reads of the snapshot store, over `sql`. */
const reads = (sql: SqlClient.SqlClient) => ({
  users: StoreError.refail("Snapshot.users")(
    Effect.map(sql`SELECT id, org_id, admin FROM users ORDER BY id`, (rows) =>
      rows.map((row) => ({ id: String(row.id), orgId: String(row.org_id), admin: flagOf(row.admin) })))
  ),
  apiKeys: StoreError.refail("Snapshot.apiKeys")(
    Effect.map(sql`SELECT key_hash, key_id, org_id, user_id FROM api_keys ORDER BY key_hash`, (rows) =>
      rows.map((row) => ({
        keyHash: String(row.key_hash),
        keyId: String(row.key_id),
        orgId: textOrNull(row.org_id),
        userId: textOrNull(row.user_id)
      })))
  ),
  secrets: StoreError.refail("Snapshot.secrets")(
    Effect.map(sql`SELECT org_id, name, value, created_at, updated_at FROM secrets ORDER BY org_id, name`, (rows) =>
      rows.map((row) => ({
        orgId: String(row.org_id),
        name: String(row.name),
        value: Redacted.make(String(row.value)),
        createdAt: String(row.created_at),
        updatedAt: String(row.updated_at)
      })))
  ),
  rememberedKeys: (now: number) =>
    StoreError.refail("Snapshot.rememberedKeys")(
      Effect.map(
        sql`SELECT scope, key, fingerprint, expires_at_millis, status, headers, body, org_id FROM idempotency_keys
          WHERE settled = 1 AND expires_at_millis > ${now} ORDER BY expires_at_millis, scope, key`,
        (rows) => rows.map(rememberedOf)
      )
    ),
  tcpAddresses: StoreError.refail("Snapshot.tcpAddresses")(
    Effect.map(sql`SELECT org_id, address FROM tcp_addresses ORDER BY seq`, (rows) =>
      rows.map((row) => ({ orgId: String(row.org_id), address: String(row.address) })))
  )
})

/** The writes of the snapshot store, over `sql`. */
const writes = (sql: SqlClient.SqlClient) => ({
  addApiKey: (key: StoredApiKey) =>
    StoreError.refail("Snapshot.addApiKey")(
      sql`INSERT INTO api_keys (key_hash, key_id, org_id, user_id)
        VALUES (${key.keyHash}, ${key.keyId}, ${key.orgId}, ${key.userId})
        ON CONFLICT (key_hash) DO UPDATE SET key_id = excluded.key_id, org_id = excluded.org_id,
          user_id = excluded.user_id`
    ).pipe(Effect.asVoid),
  restoreSecret: (record: SecretRecord) =>
    StoreError.refail("Snapshot.restoreSecret")(
      sql`INSERT INTO secrets (org_id, name, value, created_at, updated_at)
        VALUES (${record.orgId}, ${record.name}, ${Redacted.value(record.value)}, ${record.createdAt},
          ${record.updatedAt})
        ON CONFLICT (org_id, name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at,
          updated_at = excluded.updated_at`
    ).pipe(Effect.asVoid),
  remember: (entry: RememberedKey) =>
    StoreError.refail("Snapshot.remember")(
      sql`INSERT INTO idempotency_keys
          (scope, key, fingerprint, token, owner, settled, expires_at_millis, status, headers, body, org_id)
        VALUES (${entry.keyId}, ${entry.key}, ${entry.fingerprint}, ${crypto.randomUUID()}, NULL, 1,
          ${entry.expiresAtMillis}, ${entry.answer.status}, ${JSON.stringify(entry.answer.headers)},
          ${entry.answer.body}, ${entry.orgId})
        ON CONFLICT (scope, key) DO NOTHING`
    ).pipe(Effect.asVoid),
  restoreTcpAddresses: (
    pooled: ReadonlyArray<PooledAddress>,
    inUse: ReadonlyArray<string>
  ) =>
    StoreError.refail("Snapshot.restoreTcpAddresses")(Effect.gen(function*() {
      for (const { address, orgId } of pooled) {
        yield* sql`INSERT INTO tcp_addresses (org_id, address) VALUES (${orgId}, ${address}) ON CONFLICT DO NOTHING`
      }
      const ports = [...inUse, ...pooled.map((entry) => entry.address)]
        .map(tcpPortOf)
        .filter((port): port is number => port !== undefined)
      if (ports.length === 0) return
      // The counter holds the last port handed out: the next fresh one is past every restored port.
      const highest = Math.max(...ports)
      yield* sql`INSERT INTO counters (name, value) VALUES ('tcp_port', ${highest})
        ON CONFLICT (name) DO UPDATE SET value = CASE WHEN counters.value < excluded.value THEN excluded.value
          ELSE counters.value END`
    }))
})

/** The SQL snapshot store, over the `SqlClient` in context. */
export const layer = Layer.effect(
  SnapshotStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // PostgreSQL: the isolation is set by the transaction's first statement.
    const isolation = sql.onDialectOrElse({
      pg: () => Effect.asVoid(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`),
      orElse: () => Effect.void
    })
    return {
      consistently: (effect) =>
        sql.withTransaction(Effect.zipRight(isolation, effect)).pipe(
          Effect.catchTag("SqlError", (error) => Effect.fail(StoreError.fromError("Snapshot.consistently", error)))
        ),
      ...reads(sql),
      ...writes(sql)
    }
  })
)
