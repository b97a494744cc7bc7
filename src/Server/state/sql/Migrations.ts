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
  // What each organization holds (Quotas.ts): boxes and clipboard bytes kept in step by triggers on boxes (migration
  // 2), response bytes by the responses repository.
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

/**
 * What a row of `boxes` adds to its organization's usage: 1 active box unless terminated (BoxLifecycle
 * `countsTowardBoxesQuota`, written here as SQL; a migration's text stays as it ran, so the triggers are checked
 * against BoxLifecycle by test/durability/BoxLifecycleStores.test.ts, and a change of the rule needs a new migration),
 * and its clipboard's bytes.
 * The triggers of migration 2 add it when a row is inserted, take the old row's off and add the new one's when a row
 * changes, and take it off when a row is deleted, in the statement's own transaction. (Before migration 2 the
 * repository ran the same arithmetic as statements of its own beside each change.)
 */
const boxUsageTriggers = {
  sqlite: (): ReadonlyArray<string> => {
    const active = (row: string) => `(${row}.status <> 'terminated')`
    const bytes = (row: string) => `coalesce(length(${row}.clipboard), 0)`
    const add = (boxes: string, clipboard: string, orgId: string) =>
      `INSERT INTO org_usage (org_id, active_boxes, clipboard_bytes) VALUES (${orgId}, ${boxes}, ${clipboard})
        ON CONFLICT (org_id) DO UPDATE SET active_boxes = active_boxes + excluded.active_boxes,
          clipboard_bytes = clipboard_bytes + excluded.clipboard_bytes;`
    return [
      `CREATE TRIGGER boxes_usage_insert AFTER INSERT ON boxes
        WHEN ${active("NEW")} OR ${bytes("NEW")} <> 0
        BEGIN ${add(active("NEW"), bytes("NEW"), "NEW.org_id")} END`,
      `CREATE TRIGGER boxes_usage_update AFTER UPDATE ON boxes
        WHEN ${active("NEW")} <> ${active("OLD")} OR ${bytes("NEW")} <> ${bytes("OLD")}
        BEGIN ${add(`${active("NEW")} - ${active("OLD")}`, `${bytes("NEW")} - ${bytes("OLD")}`, "NEW.org_id")} END`,
      `CREATE TRIGGER boxes_usage_delete AFTER DELETE ON boxes
        WHEN ${active("OLD")} OR ${bytes("OLD")} <> 0
        BEGIN ${add(`-${active("OLD")}`, `-${bytes("OLD")}`, "OLD.org_id")} END`
    ]
  },
  pg: (): ReadonlyArray<string> => [
    `CREATE FUNCTION boxes_usage() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        boxes BIGINT := 0;
        clipboard BIGINT := 0;
        org TEXT;
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          boxes := boxes + (NEW.status <> 'terminated')::int;
          clipboard := clipboard + coalesce(octet_length(NEW.clipboard), 0);
          org := NEW.org_id;
        END IF;
        IF TG_OP <> 'INSERT' THEN
          boxes := boxes - (OLD.status <> 'terminated')::int;
          clipboard := clipboard - coalesce(octet_length(OLD.clipboard), 0);
          org := OLD.org_id;
        END IF;
        IF boxes <> 0 OR clipboard <> 0 THEN
          INSERT INTO org_usage (org_id, active_boxes, clipboard_bytes) VALUES (org, boxes, clipboard)
            ON CONFLICT (org_id) DO UPDATE SET active_boxes = org_usage.active_boxes + excluded.active_boxes,
              clipboard_bytes = org_usage.clipboard_bytes + excluded.clipboard_bytes;
        END IF;
        RETURN NULL;
      END
    $$`,
    `CREATE TRIGGER boxes_usage AFTER INSERT OR UPDATE OR DELETE ON boxes FOR EACH ROW EXECUTE FUNCTION boxes_usage()`
  ]
}

/** The tables whose rows an organization's usage counts (Quotas.ts), with the `org_usage` column of each. */
const countedTables = [["secrets", "secrets"], ["egress_policies", "egress_policies"], ["apps", "apps"]] as const

/**
 * Migration 3: `org_usage` counts each organization's secrets, saved egress policies and apps (their quotas are
 * checked against these counts as a row is inserted), kept by triggers on insert and delete (a secret replaced or a
 * policy renamed keeps its row) and filled from the rows already there.
 */
const countUsage = {
  sqlite: (): ReadonlyArray<string> =>
    countedTables.flatMap(([table, column]) => {
      const add = (delta: string, orgId: string) =>
        `INSERT INTO org_usage (org_id, ${column}) VALUES (${orgId}, ${delta})
          ON CONFLICT (org_id) DO UPDATE SET ${column} = ${column} + excluded.${column};`
      return [
        `ALTER TABLE org_usage ADD COLUMN ${column} BIGINT NOT NULL DEFAULT 0`,
        `CREATE TRIGGER ${table}_usage_insert AFTER INSERT ON ${table} BEGIN ${add("1", "NEW.org_id")} END`,
        `CREATE TRIGGER ${table}_usage_delete AFTER DELETE ON ${table} BEGIN ${add("-1", "OLD.org_id")} END`
      ]
    }),
  pg: (): ReadonlyArray<string> =>
    countedTables.flatMap(([table, column]) => [
      `ALTER TABLE org_usage ADD COLUMN ${column} BIGINT NOT NULL DEFAULT 0`,
      `CREATE FUNCTION ${table}_usage() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            INSERT INTO org_usage (org_id, ${column}) VALUES (NEW.org_id, 1)
              ON CONFLICT (org_id) DO UPDATE SET ${column} = org_usage.${column} + 1;
          ELSE
            UPDATE org_usage SET ${column} = ${column} - 1 WHERE org_id = OLD.org_id;
          END IF;
          RETURN NULL;
        END
      $$`,
      `CREATE TRIGGER ${table}_usage AFTER INSERT OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_usage()`
    ])
}

/** The counts of migration 3 for the rows stored before it. */
const countExisting: ReadonlyArray<string> = [
  // The WHERE clause keeps SQLite from reading ON CONFLICT as a join constraint of the SELECT.
  `INSERT INTO org_usage (org_id) SELECT org_id FROM (SELECT org_id FROM secrets UNION SELECT org_id FROM egress_policies
    UNION SELECT org_id FROM apps) AS held WHERE true ON CONFLICT (org_id) DO NOTHING`,
  `UPDATE org_usage SET ${
    countedTables.map(([table, column]) => `${column} = (SELECT count(*) FROM ${table} WHERE ${table}.org_id = org_usage.org_id)`)
      .join(", ")
  }`
]

/**
 * Migration 4: remembered idempotent answers bounded and counted. `idempotency_keys.org_id` is the organization of the
 * key's API key (filled from `api_keys` for the keys stored before); `idempotency_usage` holds each API key's keys and
 * answer body bytes, checked by the statement that claims a new key (SqlIdempotency.ts); `org_usage.answer_bytes`
 * holds each organization's answer body bytes, part of its stored bytes. Triggers keep both in step with the rows,
 * in the statement's own transaction: the organization's row first, then the API key's (the order of every writer
 * that locks both).
 */
const answerUsage = {
  schema: (length: string): ReadonlyArray<string> => [
    `ALTER TABLE idempotency_keys ADD COLUMN org_id TEXT`,
    `ALTER TABLE org_usage ADD COLUMN answer_bytes BIGINT NOT NULL DEFAULT 0`,
    `CREATE TABLE idempotency_usage (scope TEXT PRIMARY KEY, held_keys BIGINT NOT NULL DEFAULT 0,
      answer_bytes BIGINT NOT NULL DEFAULT 0)`,
    `UPDATE idempotency_keys SET org_id = (SELECT COALESCE(a.org_id, u.org_id) FROM api_keys a
      LEFT JOIN users u ON u.id = a.user_id WHERE a.key_id = idempotency_keys.scope LIMIT 1)`,
    `INSERT INTO idempotency_usage (scope, held_keys, answer_bytes)
      SELECT scope, count(*), CAST(COALESCE(sum(${length}(body)), 0) AS BIGINT) FROM idempotency_keys GROUP BY scope`,
    `INSERT INTO org_usage (org_id) SELECT DISTINCT org_id FROM idempotency_keys WHERE org_id IS NOT NULL
      ON CONFLICT (org_id) DO NOTHING`,
    `UPDATE org_usage SET answer_bytes = (SELECT CAST(COALESCE(sum(${length}(body)), 0) AS BIGINT)
      FROM idempotency_keys WHERE idempotency_keys.org_id = org_usage.org_id)`
  ],
  sqlite: (): ReadonlyArray<string> => {
    const bytes = (row: string) => `coalesce(length(${row}.body), 0)`
    const addToOrg = (row: string, sign: string) =>
      `INSERT INTO org_usage (org_id, answer_bytes) SELECT ${row}.org_id, ${sign}${bytes(row)}
        WHERE ${row}.org_id IS NOT NULL AND ${bytes(row)} <> 0
        ON CONFLICT (org_id) DO UPDATE SET answer_bytes = answer_bytes + excluded.answer_bytes;`
    const addToKey = (row: string, keys: string, answerBytes: string) =>
      `INSERT INTO idempotency_usage (scope, held_keys, answer_bytes) VALUES (${row}.scope, ${keys}, ${answerBytes})
        ON CONFLICT (scope) DO UPDATE SET held_keys = held_keys + excluded.held_keys,
          answer_bytes = answer_bytes + excluded.answer_bytes;`
    return [
      `CREATE TRIGGER idempotency_keys_usage_insert AFTER INSERT ON idempotency_keys
        BEGIN ${addToOrg("NEW", "")} ${addToKey("NEW", "1", bytes("NEW"))} END`,
      `CREATE TRIGGER idempotency_keys_usage_update AFTER UPDATE OF body, org_id ON idempotency_keys
        WHEN ${bytes("NEW")} <> ${bytes("OLD")} OR NEW.org_id IS NOT OLD.org_id
        BEGIN ${addToOrg("OLD", "-")} ${addToOrg("NEW", "")}
          ${addToKey("NEW", "0", `${bytes("NEW")} - ${bytes("OLD")}`)} END`,
      `CREATE TRIGGER idempotency_keys_usage_delete AFTER DELETE ON idempotency_keys
        BEGIN ${addToOrg("OLD", "-")} ${addToKey("OLD", "-1", `-${bytes("OLD")}`)} END`
    ]
  },
  pg: (): ReadonlyArray<string> => [
    `CREATE FUNCTION idempotency_keys_usage() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        key_delta BIGINT := 0;
        added_bytes BIGINT := 0;
        removed_bytes BIGINT := 0;
        held_scope TEXT;
      BEGIN
        IF TG_OP <> 'INSERT' THEN
          key_delta := key_delta - 1;
          removed_bytes := coalesce(octet_length(OLD.body), 0);
          held_scope := OLD.scope;
          IF removed_bytes <> 0 AND OLD.org_id IS NOT NULL THEN
            UPDATE org_usage SET answer_bytes = answer_bytes - removed_bytes WHERE org_id = OLD.org_id;
          END IF;
        END IF;
        IF TG_OP <> 'DELETE' THEN
          key_delta := key_delta + 1;
          added_bytes := coalesce(octet_length(NEW.body), 0);
          held_scope := NEW.scope;
          IF added_bytes <> 0 AND NEW.org_id IS NOT NULL THEN
            INSERT INTO org_usage (org_id, answer_bytes) VALUES (NEW.org_id, added_bytes)
              ON CONFLICT (org_id) DO UPDATE SET answer_bytes = org_usage.answer_bytes + excluded.answer_bytes;
          END IF;
        END IF;
        IF key_delta <> 0 OR added_bytes <> removed_bytes THEN
          INSERT INTO idempotency_usage (scope, held_keys, answer_bytes)
            VALUES (held_scope, key_delta, added_bytes - removed_bytes)
            ON CONFLICT (scope) DO UPDATE SET held_keys = idempotency_usage.held_keys + excluded.held_keys,
              answer_bytes = idempotency_usage.answer_bytes + excluded.answer_bytes;
        END IF;
        RETURN NULL;
      END
    $$`,
    `CREATE TRIGGER idempotency_keys_usage AFTER INSERT OR UPDATE OR DELETE ON idempotency_keys
      FOR EACH ROW EXECUTE FUNCTION idempotency_keys_usage()`
  ]
}

/** Every migration, by `<id>_<name>` (`Migrator.fromRecord`). */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "1_state": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = sql.onDialectOrElse({
      pg: () => schema("BYTEA", "BIGSERIAL PRIMARY KEY"),
      orElse: () => schema("BLOB", "INTEGER PRIMARY KEY AUTOINCREMENT")
    })
    for (const statement of statements) yield* sql.unsafe(statement)
  }),
  "2_box_usage_triggers": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = sql.onDialectOrElse({ pg: boxUsageTriggers.pg, orElse: boxUsageTriggers.sqlite })
    for (const statement of statements) yield* sql.unsafe(statement)
  }),
  "3_count_usage": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = sql.onDialectOrElse({ pg: countUsage.pg, orElse: countUsage.sqlite })
    for (const statement of [...statements, ...countExisting]) yield* sql.unsafe(statement)
  }),
  "4_idempotency_usage": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const statements = sql.onDialectOrElse({
      pg: () => [...answerUsage.schema("octet_length"), ...answerUsage.pg()],
      orElse: () => [...answerUsage.schema("length"), ...answerUsage.sqlite()]
    })
    for (const statement of statements) yield* sql.unsafe(statement)
  })
}
