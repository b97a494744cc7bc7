/**
 * The repositories of Repositories.ts over `@effect/sql` (SQLite or PostgreSQL; tables in Migrations.ts), except
 * boxes (SqlBoxes.ts). Every write is one statement or one transaction, durable when it returns; a read-modify-write
 * (`update`) locks its row (`SELECT ... FOR UPDATE` on PostgreSQL; SQLite has one writer). A database failure is the
 * typed `StoreError` of the operation (StoreOutage.ts answers it). The building blocks they share with SqlBoxes.ts
 * and SqlIdempotency.ts are in SqlStatements.ts.
 *
 * Apps are never renamed or removed (spec: apps are found or minted by name), so the apps found are also kept in a
 * map of this process: a repeated find reads no row.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash } from "node:crypto"
import { ModelResponse } from "../../../Domain/ModelResponse.js"
import {
  type ApiKeyRecord,
  type AppRecord,
  Apps,
  type AuditEntry,
  EgressPolicies,
  Identity,
  keyIdOf,
  Logs,
  type PolicyRecord,
  type ResponseRecord,
  responseBytes,
  Responses,
  RuntimeVersion,
  Secrets,
  type StoredBytesUpdate,
  TcpAddresses,
  type WebhookDeliveryEntry
} from "../Repositories.js"
import { flagOf, numberOf, numberOrNull, rowsAffectedOf, textOrNull } from "./Rows.js"
import {
  countOf,
  first,
  forUpdate,
  insertBelowCount,
  lockedStoredBytes,
  modify,
  refail,
  type Row,
  storable
} from "./SqlStatements.js"

/** The stored hash of an API key: its whole SHA-256, hex (the key itself is never stored). */
const keyHashOf = (key: Redacted.Redacted<string>): string =>
  createHash("sha256").update(Redacted.value(key)).digest("hex")

/** Identity in SQL. */
export const identity = Layer.effect(
  Identity,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const organizationOf = (row: Row) => ({
      id: String(row.id),
      credits: flagOf(row.credits),
      createdAtMillis: numberOf(row.created_at_millis)
    })
    return {
      findKey: (key) =>
        refail("Identity.findKey",
          sql`SELECT key_id, org_id, user_id FROM api_keys WHERE key_hash = ${keyHashOf(key)}`).pipe(
          Effect.map((rows) =>
            Option.map(first(rows), (row): ApiKeyRecord => ({
              keyId: String(row.key_id),
              orgId: textOrNull(row.org_id),
              userId: textOrNull(row.user_id)
            }))
          )
        ),
      organization: (id) =>
        refail("Identity.organization",
          sql`SELECT id, credits, created_at_millis FROM organizations WHERE id = ${id}`).pipe(
          Effect.map((rows) => Option.map(first(rows), organizationOf))
        ),
      user: (id) =>
        refail("Identity.user", sql`SELECT id, org_id, admin FROM users WHERE id = ${id}`).pipe(
          Effect.map((rows) =>
            Option.map(first(rows), (row) => ({ id: String(row.id), orgId: String(row.org_id), admin: flagOf(row.admin) }))
          )
        ),
      organizations: refail("Identity.organizations",
        sql`SELECT id, credits, created_at_millis FROM organizations ORDER BY id`).pipe(
        Effect.map((rows) => rows.map(organizationOf))
      ),
      addOrganization: (record) =>
        refail("Identity.addOrganization", sql`INSERT INTO organizations (id, credits, created_at_millis)
          VALUES (${record.id}, ${record.credits ? 1 : 0}, ${record.createdAtMillis})
          ON CONFLICT (id) DO UPDATE SET credits = excluded.credits, created_at_millis = excluded.created_at_millis`),
      addUser: (record) =>
        refail("Identity.addUser",
          sql`INSERT INTO users (id, org_id, admin) VALUES (${record.id}, ${record.orgId}, ${record.admin ? 1 : 0})
          ON CONFLICT (id) DO UPDATE SET org_id = excluded.org_id, admin = excluded.admin`),
      addKey: (key, record) => {
        const full: ApiKeyRecord = { ...record, keyId: keyIdOf(key) }
        return refail("Identity.addKey", sql`INSERT INTO api_keys (key_hash, key_id, org_id, user_id)
          VALUES (${keyHashOf(key)}, ${full.keyId}, ${full.orgId}, ${full.userId})
          ON CONFLICT (key_hash) DO UPDATE SET org_id = excluded.org_id, user_id = excluded.user_id`).pipe(Effect.as(full))
      }
    }
  })
)

/** Apps in SQL, with the apps found kept in this process (they never change). */
export const apps = Layer.effect(
  Apps,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byId = new Map<string, AppRecord>()
    const byName = new Map<string, AppRecord>()
    const nameKey = (orgId: string, name: string) => `${orgId}\u0000${name}`
    const remember = (row: Row): AppRecord => {
      const app: AppRecord = {
        id: String(row.id),
        orgId: String(row.org_id),
        name: String(row.name),
        createdAt: numberOf(row.created_at)
      }
      byId.set(app.id, app)
      byName.set(nameKey(app.orgId, app.name), app)
      return app
    }
    const findByName = (orgId: string, name: string) => {
      const known = byName.get(nameKey(orgId, name))
      if (known !== undefined) return Effect.succeed(Option.some(known))
      if (!storable(name)) return Effect.succeedNone
      return refail("Apps.findByName",
        sql`SELECT id, org_id, name, created_at FROM apps WHERE org_id = ${orgId} AND name = ${name}`).pipe(
        Effect.map((rows) => Option.map(first(rows), remember))
      )
    }
    return {
      findByName,
      get: (orgId, id) => {
        const known = byId.get(id)
        const found = known !== undefined
          ? Effect.succeed(Option.some(known))
          : !storable(id)
          ? Effect.succeedNone
          : refail("Apps.get", sql`SELECT id, org_id, name, created_at FROM apps WHERE id = ${id}`).pipe(
            Effect.map((rows) => Option.map(first(rows), remember))
          )
        return Effect.map(found, Option.filter((app) => app.orgId === orgId))
      },
      findOrCreate: (orgId, name, make) =>
        Effect.flatMap(findByName(orgId, name), (found) => {
          if (Option.isSome(found)) return Effect.succeed(found.value)
          const created = make()
          // One app per name whatever the race (another request, another instance): the row that won is returned.
          return refail("Apps.findOrCreate", sql`INSERT INTO apps (id, org_id, name, created_at)
            VALUES (${created.id}, ${orgId}, ${name}, ${created.createdAt}) ON CONFLICT DO NOTHING`).pipe(
            Effect.zipRight(findByName(orgId, name)),
            Effect.map(Option.getOrElse(() => created))
          )
        }),
      findOrCreateWithinQuota: (orgId, name, make, maxApps) =>
        Effect.flatMap(findByName(orgId, name), (found) => {
          if (Option.isSome(found)) return Effect.succeed(found)
          const created = make()
          // The app that won a race for the name is found whatever the count; refused, none is.
          return refail("Apps.findOrCreateWithinQuota", insertBelowCount(
            sql,
            "apps",
            orgId,
            maxApps,
            sql`INSERT INTO apps (id, org_id, name, created_at)`,
            sql`SELECT ${created.id}, ${orgId}, ${name}, CAST(${created.createdAt} AS BIGINT)`,
            sql`ON CONFLICT DO NOTHING`
          )).pipe(Effect.zipRight(findByName(orgId, name)))
        }),
      count: (orgId) => refail("Apps.count", countOf(sql, "apps", orgId)),
      list: refail("Apps.list", sql`SELECT id, org_id, name, created_at FROM apps ORDER BY created_at, id`).pipe(
        Effect.map((rows) => rows.map(remember))
      )
    }
  })
)

/** Secrets in SQL. The value is stored as it was given (docs/ASSUMPTIONS.md: protect the data directory). */
export const secrets = Layer.effect(
  Secrets,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      get: (orgId, name) =>
        refail("Secrets.get",
          sql`SELECT value, created_at, updated_at FROM secrets WHERE org_id = ${orgId} AND name = ${name}`).pipe(
          Effect.map((rows) =>
            Option.map(first(rows), (row) => ({
              orgId,
              name,
              value: Redacted.make(String(row.value)),
              createdAt: String(row.created_at),
              updatedAt: String(row.updated_at)
            }))
          )
        ),
      put: (orgId, name, value, now) =>
        refail("Secrets.put", sql`INSERT INTO secrets (org_id, name, value, created_at, updated_at)
          VALUES (${orgId}, ${name}, ${Redacted.value(value)}, ${now}, ${now})
          ON CONFLICT (org_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
          RETURNING created_at`).pipe(
          Effect.map((rows) => ({ orgId, name, value, createdAt: String(rows[0]?.created_at ?? now), updatedAt: now }))
        ),
      putWithinQuota: (orgId, name, value, now, maxSecrets) =>
        refail("Secrets.putWithinQuota", Effect.gen(function*() {
          const record = (rows: ReadonlyArray<Row>) =>
            Option.map(first(rows), (row) => ({ orgId, name, value, createdAt: String(row.created_at), updatedAt: now }))
          const written = record(
            yield* insertBelowCount(
              sql,
              "secrets",
              orgId,
              maxSecrets,
              sql`INSERT INTO secrets (org_id, name, value, created_at, updated_at)`,
              sql`SELECT ${orgId}, ${name}, ${Redacted.value(value)}, ${now}, ${now}`,
              sql`ON CONFLICT (org_id, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                RETURNING created_at`
            )
          )
          if (Option.isSome(written)) return written
          // At the quota: a secret of this name (perhaps created meanwhile) is still replaced.
          return record(
            yield* sql`UPDATE secrets SET value = ${Redacted.value(value)}, updated_at = ${now}
              WHERE org_id = ${orgId} AND name = ${name} RETURNING created_at`
          )
        })),
      count: (orgId) => refail("Secrets.count", countOf(sql, "secrets", orgId))
    }
  })
)

/** Egress policies in SQL (the record as JSON). */
export const egressPolicies = Layer.effect(
  EgressPolicies,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decode = (row: Row): PolicyRecord => JSON.parse(String(row.record))
    return {
      get: (orgId, id) =>
        refail("EgressPolicies.get",
          sql`SELECT record FROM egress_policies WHERE id = ${id} AND org_id = ${orgId}`).pipe(
          Effect.map((rows) => Option.map(first(rows), decode))
        ),
      insert: (record) =>
        refail("EgressPolicies.insert", sql`INSERT INTO egress_policies (id, org_id, record)
          VALUES (${record.id}, ${record.orgId}, ${JSON.stringify(record)})
          ON CONFLICT (id) DO UPDATE SET org_id = excluded.org_id, record = excluded.record`),
      insertWithinQuota: (record, maxPolicies) =>
        refail("EgressPolicies.insertWithinQuota", insertBelowCount(
          sql,
          "egress_policies",
          record.orgId,
          maxPolicies,
          sql`INSERT INTO egress_policies (id, org_id, record)`,
          sql`SELECT ${record.id}, ${record.orgId}, ${JSON.stringify(record)}`,
          sql.literal("")
        ).raw).pipe(Effect.map((raw) => rowsAffectedOf(raw) === 1)),
      count: (orgId) => refail("EgressPolicies.count", countOf(sql, "egress_policies", orgId)),
      update: (orgId, id, f) =>
        refail("EgressPolicies.update", modify(
          sql,
          sql`SELECT record FROM egress_policies WHERE id = ${id} AND org_id = ${orgId} ${forUpdate(sql)}`,
          decode,
          f,
          (next) => sql`UPDATE egress_policies SET record = ${JSON.stringify(next)} WHERE id = ${id}`
        )),
      list: refail("EgressPolicies.list",
        sql`SELECT record FROM egress_policies ORDER BY id`).pipe(Effect.map((rows) => rows.map(decode)))
    }
  })
)

/** The runtime version in SQL (`settings.guest_schema_version`). */
export const runtimeVersion = Layer.effect(
  RuntimeVersion,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      get: refail("RuntimeVersion.get", sql`SELECT value FROM settings WHERE name = 'guest_schema_version'`).pipe(
        Effect.map((rows) => Option.map(first(rows), (row) => Number(row.value)))
      ),
      set: (version) =>
        refail("RuntimeVersion.set",
          sql`INSERT INTO settings (name, value) VALUES ('guest_schema_version', ${String(version)})
          ON CONFLICT (name) DO UPDATE SET value = excluded.value`)
    }
  })
)

/** The first port of fresh tcp addresses (`tcp.boxes.localhost:PORT`). */
const firstTcpPort = 20000

/** Tcp addresses in SQL: the pool in `tcp_addresses` (oldest first), fresh ports from the `tcp_port` counter. */
export const tcpAddresses = Layer.effect(
  TcpAddresses,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const fromPool = (orgId: string) =>
      sql.onDialectOrElse({
        pg: () =>
          sql`DELETE FROM tcp_addresses WHERE seq = (SELECT seq FROM tcp_addresses WHERE org_id = ${orgId}
            ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING address`,
        orElse: () =>
          sql`DELETE FROM tcp_addresses WHERE seq = (SELECT seq FROM tcp_addresses WHERE org_id = ${orgId}
            ORDER BY seq LIMIT 1) RETURNING address`
      })
    const freshPort = sql`INSERT INTO counters (name, value) VALUES ('tcp_port', ${firstTcpPort})
      ON CONFLICT (name) DO UPDATE SET value = counters.value + 1 RETURNING value`
    return {
      take: (orgId) =>
        refail("TcpAddresses.take", Effect.gen(function*() {
          const pooled = first(yield* fromPool(orgId))
          if (Option.isSome(pooled)) return String(pooled.value.address)
          const rows = yield* freshPort
          return `tcp.boxes.localhost:${numberOf(rows[0].value)}`
        })),
      release: (orgId, address) =>
        refail("TcpAddresses.release",
          sql`INSERT INTO tcp_addresses (org_id, address) VALUES (${orgId}, ${address}) ON CONFLICT DO NOTHING`),
      pool: (orgId) =>
        refail("TcpAddresses.pool", sql`SELECT address FROM tcp_addresses WHERE org_id = ${orgId} ORDER BY seq`).pipe(
          Effect.map((rows) => rows.map((row) => String(row.address)))
        )
    }
  })
)

/** Model responses in SQL: the object and owner as JSON, the webhook token and the retention clock in columns. */
export const responses = Layer.effect(
  Responses,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decode = (row: Row): ResponseRecord => {
      const record = JSON.parse(String(row.record))
      const token = textOrNull(row.webhook_token)
      return {
        id: String(row.id),
        orgId: String(row.org_id),
        keyId: record.keyId,
        object: new ModelResponse(record.object, true),
        webhookUrl: record.webhookUrl,
        webhookToken: token === null ? null : Redacted.make(token),
        firstDeliveredAtMillis: numberOrNull(row.first_delivered_at_millis)
      }
    }
    const document = (record: ResponseRecord) =>
      JSON.stringify({ keyId: record.keyId, object: record.object, webhookUrl: record.webhookUrl })
    const token = (record: ResponseRecord) => record.webhookToken === null ? null : Redacted.value(record.webhookToken)
    /** Adds to an organization's stored response bytes (`org_usage`), in the transaction of the change. */
    const countBytes = (orgId: string, bytes: number) =>
      bytes === 0
        ? Effect.void
        : sql`INSERT INTO org_usage (org_id, response_bytes) VALUES (${orgId}, ${bytes})
            ON CONFLICT (org_id) DO UPDATE SET response_bytes = org_usage.response_bytes + ${bytes}`
    return {
      get: (id) =>
        !storable(id)
          ? Effect.succeedNone
          : refail("Responses.get",
            sql`SELECT * FROM responses WHERE id = ${id}`).pipe(Effect.map((rows) => Option.map(first(rows), decode))),
      insert: (record) =>
        refail("Responses.insert", sql.withTransaction(Effect.gen(function*() {
          const bytes = responseBytes(record)
          yield* sql`INSERT INTO responses (id, org_id, record, webhook_token, first_delivered_at_millis, bytes)
            VALUES (${record.id}, ${record.orgId}, ${document(record)}, ${token(record)},
              ${record.firstDeliveredAtMillis}, ${bytes})`
          yield* countBytes(record.orgId, bytes)
        }))),
      insertWithinStoredBytes: (record, maxStoredBytes) =>
        refail("Responses.insertWithinStoredBytes", sql.withTransaction(Effect.gen(function*() {
          const stored = yield* lockedStoredBytes(sql, record.orgId)
          const bytes = responseBytes(record)
          if (stored + bytes > maxStoredBytes) {
            return { _tag: "Refused", storedBytes: stored, adding: bytes } satisfies StoredBytesUpdate<ResponseRecord>
          }
          yield* sql`INSERT INTO responses (id, org_id, record, webhook_token, first_delivered_at_millis, bytes)
            VALUES (${record.id}, ${record.orgId}, ${document(record)}, ${token(record)},
              ${record.firstDeliveredAtMillis}, ${bytes})`
          yield* countBytes(record.orgId, bytes)
          return { _tag: "Written", record } satisfies StoredBytesUpdate<ResponseRecord>
        }))),
      update: (id, f) =>
        refail("Responses.update",
          modify(sql, sql`SELECT * FROM responses WHERE id = ${id} ${forUpdate(sql)}`, decode, f, (next, current) =>
          Effect.gen(function*() {
            const bytes = next.object === current.object ? undefined : responseBytes(next)
            if (bytes !== undefined) {
              yield* countBytes(next.orgId, bytes - responseBytes(current))
            }
            yield* sql`UPDATE responses SET record = ${document(next)}, webhook_token = ${token(next)},
              first_delivered_at_millis = ${next.firstDeliveredAtMillis}, bytes = ${bytes ?? responseBytes(current)}
              WHERE id = ${id}`
          }))),
      remove: (id) =>
        refail("Responses.remove", sql.withTransaction(Effect.gen(function*() {
          const removed = yield* sql`DELETE FROM responses WHERE id = ${id} RETURNING org_id, bytes`
          if (removed.length === 1) yield* countBytes(String(removed[0].org_id), -numberOf(removed[0].bytes))
        }))),
      storedBytes: (orgId) =>
        refail("Responses.storedBytes", sql`SELECT response_bytes FROM org_usage WHERE org_id = ${orgId}`).pipe(
          Effect.map((rows) => rows.length === 0 ? 0 : numberOf(rows[0].response_bytes))
        ),
      list: refail("Responses.list",
        sql`SELECT * FROM responses ORDER BY id`).pipe(Effect.map((rows) => rows.map(decode)))
    }
  })
)

/** The audit log and the webhook delivery log in SQL, in the order written. */
export const logs = Layer.effect(
  Logs,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      audit: (entry) => refail("Logs.audit", sql`INSERT INTO audit_log (entry) VALUES (${JSON.stringify(entry)})`),
      auditLog: refail("Logs.auditLog", sql`SELECT entry FROM audit_log ORDER BY seq`).pipe(
        Effect.map((rows) => rows.map((row): AuditEntry => JSON.parse(String(row.entry))))
      ),
      delivery: (entry) =>
        refail("Logs.delivery", sql`INSERT INTO webhook_deliveries (response_id, at_millis, entry)
          VALUES (${entry.response_id}, ${Date.parse(entry.at)}, ${JSON.stringify(entry)})`),
      pruneDeliveries: (beforeMillis) => refail("Logs.pruneDeliveries",
        sql`DELETE FROM webhook_deliveries WHERE at_millis < ${beforeMillis}`),
      deliveries: refail("Logs.deliveries", sql`SELECT entry FROM webhook_deliveries ORDER BY seq`).pipe(
        Effect.map((rows) => rows.map((row): WebhookDeliveryEntry => JSON.parse(String(row.entry))))
      )
    }
  })
)
