/**
 * The schema of the durable state store, as `@effect/sql` Migrator migrations (run at start, in order, once each;
 * the table `effect_sql_migrations` records which ran). One schema for SQLite and PostgreSQL: only the types of
 * byte strings and of sequence keys differ.
 *
 * Records with many fields are kept as one JSON document (`record`) beside the columns that are looked up or
 * ordered by; byte strings (clipboards, remembered answers) have columns of their own; times are Unix milliseconds.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The statements of the first schema, for a dialect's byte-string and sequence-key types. */
const schema = (bytes: string, sequenceKey: string): ReadonlyArray<string> => [
  `CREATE TABLE organizations (id TEXT PRIMARY KEY, credits INTEGER NOT NULL, created_at_millis BIGINT NOT NULL)`,
  `CREATE TABLE users (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, admin INTEGER NOT NULL)`,
  // key_hash: the SHA-256 of the API key (hex); the key itself is never stored.
  `CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, key_id TEXT NOT NULL, org_id TEXT, user_id TEXT)`,
  `CREATE TABLE apps (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, name TEXT NOT NULL, created_at BIGINT NOT NULL,
    UNIQUE (org_id, name))`,
  `CREATE TABLE secrets (org_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, PRIMARY KEY (org_id, name))`,
  `CREATE TABLE egress_policies (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, record TEXT NOT NULL)`,
  `CREATE TABLE boxes (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, status TEXT NOT NULL,
    created_at_millis BIGINT NOT NULL, deadline_millis BIGINT, record TEXT NOT NULL,
    clipboard_media_type TEXT, clipboard ${bytes})`,
  `CREATE INDEX boxes_deadline ON boxes (deadline_millis) WHERE deadline_millis IS NOT NULL`,
  `CREATE INDEX boxes_creating ON boxes (created_at_millis) WHERE status = 'creating'`,
  `CREATE INDEX boxes_org ON boxes (org_id)`,
  // What each organization holds (Quotas.ts), kept in step with boxes and responses by their repositories.
  `CREATE TABLE org_usage (org_id TEXT PRIMARY KEY, active_boxes BIGINT NOT NULL DEFAULT 0,
    clipboard_bytes BIGINT NOT NULL DEFAULT 0, response_bytes BIGINT NOT NULL DEFAULT 0)`,
  `CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)`,
  `CREATE TABLE tcp_addresses (seq ${sequenceKey}, org_id TEXT NOT NULL, address TEXT NOT NULL,
    UNIQUE (org_id, address))`,
  `CREATE TABLE responses (id TEXT PRIMARY KEY, org_id TEXT NOT NULL, record TEXT NOT NULL, webhook_token TEXT,
    first_delivered_at_millis BIGINT, bytes BIGINT NOT NULL DEFAULT 0)`,
  `CREATE INDEX responses_org ON responses (org_id)`,
  `CREATE TABLE audit_log (seq ${sequenceKey}, entry TEXT NOT NULL)`,
  `CREATE TABLE webhook_deliveries (seq ${sequenceKey}, response_id TEXT NOT NULL, at_millis BIGINT NOT NULL,
    entry TEXT NOT NULL)`,
  `CREATE INDEX webhook_deliveries_at ON webhook_deliveries (at_millis)`,
  `CREATE TABLE idempotency_keys (scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
    token TEXT NOT NULL, owner TEXT, settled INTEGER NOT NULL, expires_at_millis BIGINT NOT NULL, status INTEGER,
    headers TEXT, body ${bytes}, PRIMARY KEY (scope, key))`,
  `CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_millis) WHERE settled = 1`,
  `CREATE TABLE instances (id TEXT PRIMARY KEY, heartbeat_at_millis BIGINT NOT NULL)`,
  `CREATE TABLE background_jobs (response_id TEXT PRIMARY KEY, org_id TEXT NOT NULL, prepared TEXT NOT NULL,
    not_before_millis BIGINT NOT NULL, owner TEXT)`,
  `CREATE TABLE webhook_outbox (response_id TEXT PRIMARY KEY, url TEXT NOT NULL, body TEXT NOT NULL,
    round INTEGER NOT NULL, attempt INTEGER NOT NULL, round_started_at_millis BIGINT NOT NULL, owner TEXT)`
]

/** Every migration, by `<id>_<name>` (`Migrator.fromRecord`). */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "1_state": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = sql.onDialectOrElse({
      pg: () => schema("BYTEA", "BIGSERIAL PRIMARY KEY"),
      orElse: () => schema("BLOB", "INTEGER PRIMARY KEY AUTOINCREMENT")
    })
    for (const statement of statements) yield* sql.unsafe(statement)
  })
}
