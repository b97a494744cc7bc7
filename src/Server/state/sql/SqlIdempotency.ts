/**
 * Idempotency keys in SQL (`idempotency_keys`): the same claims as the in-memory store (Idempotency.ts), shared by
 * every instance on the database and kept across restarts.
 *
 * A claim inserts the key as running, owned by this instance, with a fresh `token`; only the holder of the token
 * settles (stores the answer) or releases (deletes) it. A key whose running owner is gone (a restart, or an instance
 * whose heartbeat stopped: SqlWork.ts) or whose answer expired is taken over by the next claim, compare-and-set on
 * the token, so two claimers never both run the request. Settled keys expire `idempotencyRetention` after they were
 * settled and are deleted once a minute.
 *
 * A claim made in the request's unit of work on a store with one writer (`InUnitOfWork`, SQLite: Transactions.ts
 * `claimsInUnit`) reads the key instead: a first use writes nothing until it settles, and then inserts the key
 * settled (one write per request instead of two; nobody else can present the key before the unit ends, and a crash
 * before its commit keeps neither the key nor what the request made).
 *
 * Bounded as the in-memory store is (Quotas.ts): per API key at most `idempotencyKeys` keys and `idempotencyBytes`
 * bytes of answer bodies, kept in `idempotency_usage` by triggers (Migrations.ts migration 4). The statement that
 * inserts a new key checks them (on PostgreSQL it first locks the API key's usage row with an upsert, so claims on
 * any instance take turns), and a new key past them is refused (`Full`) once the API key's expired keys are deleted.
 * Answer bodies count in the organization's stored bytes (`org_usage.answer_bytes`): a settle locks the
 * organization's usage row, then the API key's, and records nothing (releasing the key) when the answer would pass
 * either bound.
 *
 * Source: spec "Limits / Idempotency rules", "Errors" rules 3-4; docs/ASSUMPTIONS.md "Durable state", "Quotas".
 *
 * @since 0.1.0
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import * as ServiceClock from "../../clock/ServiceClock.js"
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import {
  type Claim,
  type ClaimUnit,
  IdempotencyStore,
  IdempotencyStoreError,
  type KeyHolder,
  type RememberedAnswer
} from "../../pipeline/Idempotency.js"
import { defaultIdempotencyBytes, defaultIdempotencyKeys } from "../../Quotas.js"
import { StoreError } from "../StoreError.js"
import { bytesOf, flagOf, numberOf, numberOrNull, rowsAffectedOf } from "./Rows.js"
import { lockedStoredBytes, unitStatements, type UnitStatements } from "./SqlStatements.js"
import { Instances } from "./SqlWork.js"

/** The idempotency store's failure, with the database's as a `StoreError` (StoreOutage.ts answers it). */
const storeError = (error: SqlError.SqlError) =>
  new IdempotencyStoreError({ reason: error.message, cause: StoreError.fromError("IdempotencyStore", error) })

type Row = Record<string, unknown>

/** The bounds of the store, from Quotas.ts settings. */
interface Bounds {
  readonly retentionMillis: number
  /** Keys per API key. */
  readonly maxKeys: number
  /** Answer body bytes per API key. */
  readonly maxBytes: number
  /** The organization's stored-bytes quota. */
  readonly maxStoredBytes: number
}

/** What a new key needs to be written: its holder, key, fingerprint and token. */
interface NewKey {
  readonly holder: KeyHolder
  readonly key: string
  readonly fingerprint: string
  readonly token: string
}

/**
 * The statements of the store that write keys, over `sql`. Bound values in an `INSERT ... SELECT` are text to
 * PostgreSQL: the number columns are cast.
 */
const writeStatements = (sql: SqlClient.SqlClient, unit: UnitStatements, bounds: Bounds, owner: string) => {
  const { maxBytes, maxKeys, maxStoredBytes, retentionMillis } = bounds
  /**
   * Inserts `fresh` as running, owned by this instance, unless the key exists or its API key holds its bounds: one
   * statement. PostgreSQL first locks the API key's usage row (created if missing) with an upsert that returns its
   * latest values, so inserts of one API key on any instance take turns; SQLite has one writer.
   */
  const insertRunning = (fresh: NewKey, now: number) => {
    const { fingerprint, holder, key, token } = fresh
    const values = sql`SELECT ${holder.scope}, ${key}, ${fingerprint}, ${token}, ${owner}, 0,
      CAST(${now + retentionMillis} AS BIGINT), ${holder.orgId}`
    const into = sql.literal(`INSERT INTO idempotency_keys
      (scope, key, fingerprint, token, owner, settled, expires_at_millis, org_id)`)
    return sql.onDialectOrElse({
      pg: () =>
        sql`WITH usage AS (INSERT INTO idempotency_usage (scope) VALUES (${holder.scope})
            ON CONFLICT (scope) DO UPDATE SET held_keys = idempotency_usage.held_keys RETURNING held_keys, answer_bytes)
          ${into} ${values} FROM usage WHERE usage.held_keys < ${maxKeys} AND usage.answer_bytes < ${maxBytes}
          ON CONFLICT (scope, key) DO NOTHING`,
      orElse: () =>
        sql`${into} ${values} WHERE NOT EXISTS (SELECT 1 FROM idempotency_usage WHERE scope = ${holder.scope}
            AND (held_keys >= ${maxKeys} OR answer_bytes >= ${maxBytes}))
          ON CONFLICT (scope, key) DO NOTHING`
    }).raw
  }

  /**
   * Inserts `fresh` settled with `answer`, unless it would pass its API key's bounds or its organization's stored
   * bytes: one statement, for a unit of work of the one writer (SQLite), where nothing else writes in between.
   */
  const insertSettled = (fresh: NewKey, answer: RememberedAnswer, now: number) => {
    const { fingerprint, holder, key, token } = fresh
    const adding = answer.body.byteLength
    const organization = holder.orgId === null ? sql.literal("") : sql`AND COALESCE((SELECT
        clipboard_bytes + response_bytes + answer_bytes FROM org_usage WHERE org_id = ${holder.orgId}), 0)
        + ${adding} <= ${maxStoredBytes}`
    return unit.raw(sql`INSERT INTO idempotency_keys
        (scope, key, fingerprint, token, owner, settled, expires_at_millis, status, headers, body, org_id)
      SELECT ${holder.scope}, ${key}, ${fingerprint}, ${token}, NULL, 1, CAST(${now + retentionMillis} AS BIGINT),
        CAST(${answer.status} AS INTEGER), ${JSON.stringify(answer.headers)}, ${answer.body}, ${holder.orgId}
      WHERE NOT EXISTS (SELECT 1 FROM idempotency_usage WHERE scope = ${holder.scope}
        AND (held_keys >= ${maxKeys} OR answer_bytes + ${adding} > ${maxBytes})) ${organization}`)
  }

  /**
   * True when `adding` more answer bytes fit both the organization's stored bytes and the API key's answer bytes,
   * read with their usage rows locked until the transaction ends, the organization's first (the order of the usage
   * triggers): on PostgreSQL an upsert locks each; SQLite has one writer.
   */
  const fits = (holder: KeyHolder, adding: number) =>
    Effect.gen(function*() {
      if (adding > maxBytes) return false
      if (holder.orgId !== null && (yield* lockedStoredBytes(sql, holder.orgId)) + adding > maxStoredBytes) return false
      const held = yield* sql.onDialectOrElse({
        pg: () =>
          sql`INSERT INTO idempotency_usage (scope) VALUES (${holder.scope})
            ON CONFLICT (scope) DO UPDATE SET held_keys = idempotency_usage.held_keys RETURNING answer_bytes`,
        orElse: () => sql`SELECT answer_bytes FROM idempotency_usage WHERE scope = ${holder.scope}`
      })
      return (held.length === 0 ? 0 : numberOf(held[0].answer_bytes)) + adding <= maxBytes
    })

  return { insertRunning, insertSettled, fits }
}

/** The statements of the store that read keys and delete expired ones, over `sql`. */
const readStatements = (sql: SqlClient.SqlClient, unit: UnitStatements, bounds: Bounds) => {
  const { maxBytes, maxKeys } = bounds
  /** The key's row (no key: null columns), its owner's heartbeat, and its API key's usage: one row, always. */
  const read = (scope: string, key: string) =>
    Effect.map(
      unit.rows(sql`SELECT k.fingerprint, k.token, k.owner, k.settled, k.expires_at_millis, k.status, k.headers, k.body,
          i.heartbeat_at_millis, u.held_keys, u.answer_bytes AS held_bytes
        FROM (SELECT 1 AS one) AS probe
        LEFT JOIN idempotency_keys k ON k.scope = ${scope} AND k.key = ${key}
        LEFT JOIN instances i ON i.id = k.owner
        LEFT JOIN idempotency_usage u ON u.scope = ${scope}`),
      (rows): Row => rows[0]
    )

  /**
   * Deletes the expired settled keys of API key `scope` (their usage follows by trigger); how many. Run for every
   * new key of a full API key, so it reads the expiry index (settled keys, expired ones first: few, as the sweep
   * deletes them every interval); SQLite would search by the primary key, all the API key's keys (74 ms for 50,000),
   * unless the `+` takes its scope term off the index.
   */
  const deleteExpired = (scope: string, now: number) => {
    const ofScope = sql.onDialectOrElse({ pg: () => sql`scope = ${scope}`, orElse: () => sql`+scope = ${scope}` })
    return Effect.map(
      sql`DELETE FROM idempotency_keys WHERE settled = 1 AND expires_at_millis <= ${now} AND ${ofScope}`.raw,
      rowsAffectedOf
    )
  }

  /** True when the API key of a {@link read} row holds its quota of keys or answer bytes. */
  const full = (row: Row) =>
    row.held_keys !== null && row.held_keys !== undefined &&
    (numberOf(row.held_keys) >= maxKeys || numberOf(row.held_bytes) >= maxBytes)

  return { read, deleteExpired, full }
}

/**
 * Every statement of the store; the read of a key and the insert of a settled one run as `unit` runs a create's
 * statements (SqlStatements.ts `unitStatements`).
 */
const statements = (sql: SqlClient.SqlClient, unit: UnitStatements, bounds: Bounds, owner: string) => ({
  ...writeStatements(sql, unit, bounds, owner),
  ...readStatements(sql, unit, bounds)
})

type Statements = ReturnType<typeof statements>

/** The `Started` claim of a running key written with `fresh.token`: only its holder settles or releases it. */
const started = (sql: SqlClient.SqlClient, run: Statements, fresh: NewKey, retentionMillis: number): Claim => {
  const { holder, key, token } = fresh
  const release = sql`DELETE FROM idempotency_keys WHERE scope = ${holder.scope} AND key = ${key} AND token = ${token}`
  return {
    _tag: "Started",
    settle: (answer: RememberedAnswer) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql.withTransaction(Effect.gen(function*() {
          // An answer that would pass a bound is not recorded: the key is released (a retry runs again).
          if (!(yield* run.fits(holder, answer.body.byteLength))) return yield* release
          yield* sql`UPDATE idempotency_keys SET settled = 1, owner = NULL, expires_at_millis = ${now + retentionMillis},
            status = ${answer.status}, headers = ${JSON.stringify(answer.headers)}, body = ${answer.body}
            WHERE scope = ${holder.scope} AND key = ${key} AND token = ${token}`
        }))).pipe(Effect.asVoid, Effect.mapError(storeError)),
    release: release.pipe(
      Effect.asVoid,
      Effect.catchAllCause((cause) => Effect.logWarning("releasing an idempotency key failed", cause))
    )
  }
}

/**
 * A first use claimed in a unit of work of the one writer (`InUnitOfWork`): the key is written only when it settles,
 * settled at once (one insert instead of an insert and an update), and only within its bounds; nothing is written
 * when it is released or its answer does not fit.
 */
const startedInUnit = (run: Statements, fresh: NewKey): Claim => ({
  _tag: "Started",
  settle: (answer: RememberedAnswer) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => run.insertSettled(fresh, answer, now)).pipe(
      Effect.asVoid,
      Effect.mapError(storeError)
    ),
  release: Effect.void
})

/** Idempotency keys in SQL; needs the instance registry (SqlWork.ts). */
export const layer = Layer.scoped(
  IdempotencyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* LocalServiceConfig
    const instances = yield* Instances
    const retentionMillis = Duration.toMillis(config.idempotencyRetention)
    const run = statements(sql, unitStatements(config.requestTracing), {
      retentionMillis,
      maxKeys: config.quotas.idempotencyKeys ?? defaultIdempotencyKeys,
      maxBytes: config.quotas.idempotencyBytes ?? defaultIdempotencyBytes,
      maxStoredBytes: config.quotas.storedBytes
    }, instances.id)

    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`DELETE FROM idempotency_keys WHERE settled = 1 AND expires_at_millis <= ${now}`)
    // Also when an advance of the virtual clock ends (ServiceClock.ts).
    yield* ServiceClock.registerDue({
      name: "idempotency key expiry",
      runDue: StoreError.refail("IdempotencyStore.sweep")(sweep)
    })
    yield* sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("deleting expired idempotency keys failed", cause)),
      Effect.repeat(Schedule.spaced(config.sweepInterval)),
      Effect.forkScoped
    )

    /** The claim of the existing key of a {@link read} row: replay, mismatch, in flight, or taken over. */
    const existing = (fresh: NewKey, row: Row, now: number) =>
      Effect.gen(function*() {
        const settled = flagOf(row.settled)
        // A running key lives as long as its owner: judged by the real time, as heartbeats are (SqlWork.ts).
        const live = settled
          ? numberOf(row.expires_at_millis) > now
          : row.owner === instances.id || (yield* instances.isAlive(numberOrNull(row.heartbeat_at_millis)))
        if (live) {
          if (row.fingerprint !== fresh.fingerprint) return { _tag: "Mismatch" } satisfies Claim
          if (!settled) return { _tag: "InFlight" } satisfies Claim
          return {
            _tag: "Replay",
            answer: { status: numberOf(row.status), headers: JSON.parse(String(row.headers)), body: bytesOf(row.body) }
          } satisfies Claim
        }
        // Expired, or its owner is gone: taken over, if nobody took it first (it keeps its place in the key count).
        const taken = yield* sql`UPDATE idempotency_keys SET fingerprint = ${fresh.fingerprint}, token = ${fresh.token},
            owner = ${instances.id}, settled = 0, expires_at_millis = ${now + retentionMillis}, status = NULL,
            headers = NULL, body = NULL, org_id = ${fresh.holder.orgId}
          WHERE scope = ${fresh.holder.scope} AND key = ${fresh.key} AND token = ${String(row.token)} RETURNING token`
        return taken.length === 1 ? started(sql, run, fresh, retentionMillis) : undefined
      })

    /** One attempt at a claim; undefined when the row changed under it (try again). */
    const attempt = (fresh: NewKey, now: number, unit: ClaimUnit) =>
      Effect.gen(function*() {
        // The count of inserted rows, not RETURNING: SQLite runs a RETURNING clause as a program of its own (the
        // dearest statement of a create, docs/decisions/0003-sqlite-client.md).
        if (unit === "Standalone" && rowsAffectedOf(yield* run.insertRunning(fresh, now)) === 1) {
          return started(sql, run, fresh, retentionMillis)
        }
        const row = yield* run.read(fresh.holder.scope, fresh.key)
        if (row.token === null || row.token === undefined) {
          if (run.full(row)) return { _tag: "Full" } satisfies Claim
          return unit === "InUnitOfWork" ? startedInUnit(run, fresh) : undefined
        }
        return yield* existing(fresh, row, now)
      })

    return {
      claim: (holder, key, fingerprint, unit = "Standalone") =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          let swept = false
          for (let round = 0; round < 8; round++) {
            const claim = yield* attempt({ holder, key, fingerprint, token: crypto.randomUUID() }, now, unit)
            if (claim === undefined) continue
            // Full: the API key's expired keys are deleted first (the periodic sweep may not have run yet).
            if (claim._tag === "Full" && !swept) {
              swept = true
              if ((yield* run.deleteExpired(holder.scope, now)) > 0) continue
            }
            return claim
          }
          return yield* Effect.fail(new IdempotencyStoreError({ reason: "the key kept changing while it was claimed" }))
        }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(storeError(error)))),
      size: StoreError.refail("IdempotencyStore.size")(Effect.map(sql`SELECT count(*) AS count FROM idempotency_keys`, (rows) => numberOf(rows[0].count))),
      storedBytes: (orgId) =>
        StoreError.refail("IdempotencyStore.storedBytes")(Effect.map(
          sql`SELECT answer_bytes FROM org_usage WHERE org_id = ${orgId}`,
          (rows) => rows.length === 0 ? 0 : numberOf(rows[0].answer_bytes)
        ))
    }
  })
)
