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
 * A claim made in the request's unit of work on a store with one writer (`inUnit`, SQLite: Transactions.ts
 * `claimsInUnit`) reads the key instead: a first use writes nothing until it settles, and then inserts the key
 * settled (one write per request instead of two; nobody else can present the key before the unit ends, and a crash
 * before its commit keeps neither the key nor what the request made).
 *
 * Source: spec "Limits / Idempotency rules", "Errors" rules 3-4; docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Option, Schedule } from "effect"
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import { type Claim, IdempotencyStore, IdempotencyStoreError, type RememberedAnswer } from "../../pipeline/Idempotency.js"
import { bytesOf, flagOf, numberOf, numberOrNull, rowsAffectedOf } from "./Rows.js"
import { Instances } from "./SqlWork.js"

const storeError = (error: SqlError.SqlError) => new IdempotencyStoreError({ reason: error.message, cause: error })

/** Idempotency keys in SQL; needs the instance registry (SqlWork.ts). */
export const layer = Layer.scoped(
  IdempotencyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* LocalServiceConfig
    const instances = yield* Instances
    const retentionMillis = Duration.toMillis(config.idempotencyRetention)

    yield* Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`DELETE FROM idempotency_keys WHERE settled = 1 AND expires_at_millis <= ${now}`).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("deleting expired idempotency keys failed", cause)),
        Effect.repeat(Schedule.spaced(config.sweepInterval)),
        Effect.forkScoped
      )

    const started = (scope: string, key: string, token: string): Claim => ({
      _tag: "Started",
      settle: (answer: RememberedAnswer) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          sql`UPDATE idempotency_keys SET settled = 1, owner = NULL, expires_at_millis = ${now + retentionMillis},
            status = ${answer.status}, headers = ${JSON.stringify(answer.headers)}, body = ${answer.body}
            WHERE scope = ${scope} AND key = ${key} AND token = ${token}`).pipe(Effect.asVoid, Effect.mapError(storeError)),
      release: sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND key = ${key} AND token = ${token}`.pipe(
        Effect.asVoid,
        Effect.catchAllCause((cause) => Effect.logWarning("releasing an idempotency key failed", cause))
      )
    })

    /**
     * A first use claimed in a unit of work of the one writer (`inUnit`): the key is written only when it settles,
     * settled at once (one insert instead of an insert and an update); nothing is written when it is released.
     */
    const startedInUnit = (scope: string, key: string, fingerprint: string, token: string): Claim => ({
      _tag: "Started",
      settle: (answer: RememberedAnswer) =>
        Effect.flatMap(Clock.currentTimeMillis, (settledAt) =>
          sql`INSERT INTO idempotency_keys
            (scope, key, fingerprint, token, owner, settled, expires_at_millis, status, headers, body)
            VALUES (${scope}, ${key}, ${fingerprint}, ${token}, NULL, 1, ${settledAt + retentionMillis},
              ${answer.status}, ${JSON.stringify(answer.headers)}, ${answer.body})`).pipe(
            Effect.asVoid,
            Effect.mapError(storeError)
          ),
      release: Effect.void
    })

    /** The key's row, with the heartbeat of its owner (if any). */
    const read = (scope: string, key: string) =>
      Effect.map(
        sql`SELECT k.fingerprint, k.token, k.owner, k.settled, k.expires_at_millis, k.status,
            k.headers, k.body, i.heartbeat_at_millis
          FROM idempotency_keys k LEFT JOIN instances i ON i.id = k.owner
          WHERE k.scope = ${scope} AND k.key = ${key}`,
        (rows) => rows[0]
      )

    /** One attempt at a claim; None when the row changed under it (try again). */
    const attempt = (scope: string, key: string, fingerprint: string, now: number, inUnit: boolean) =>
      Effect.gen(function*() {
        const token = crypto.randomUUID()
        let row: Record<string, unknown> | undefined
        if (inUnit) {
          row = yield* read(scope, key)
          if (row === undefined) return Option.some(startedInUnit(scope, key, fingerprint, token))
        } else {
          // The count of inserted rows, not RETURNING: SQLite runs a RETURNING clause as a program of its own (the
          // dearest statement of a create, docs/decisions/0003-sqlite-client.md).
          const inserted = yield* sql`INSERT INTO idempotency_keys
            (scope, key, fingerprint, token, owner, settled, expires_at_millis)
            VALUES (${scope}, ${key}, ${fingerprint}, ${token}, ${instances.id}, 0, ${now + retentionMillis})
            ON CONFLICT (scope, key) DO NOTHING`.raw
          if (rowsAffectedOf(inserted) === 1) return Option.some(started(scope, key, token))
          row = yield* read(scope, key)
          if (row === undefined) return Option.none<Claim>()
        }
        const settled = flagOf(row.settled)
        const live = settled
          ? numberOf(row.expires_at_millis) > now
          : row.owner === instances.id || instances.isAlive(numberOrNull(row.heartbeat_at_millis), now)
        if (live) {
          if (row.fingerprint !== fingerprint) return Option.some<Claim>({ _tag: "Mismatch" })
          if (!settled) return Option.some<Claim>({ _tag: "InFlight" })
          return Option.some<Claim>({
            _tag: "Replay",
            answer: {
              status: numberOf(row.status),
              headers: JSON.parse(String(row.headers)),
              body: bytesOf(row.body)
            }
          })
        }
        // Expired, or its owner is gone: taken over, if nobody took it first.
        const taken = yield* sql`UPDATE idempotency_keys SET fingerprint = ${fingerprint}, token = ${token},
            owner = ${instances.id}, settled = 0, expires_at_millis = ${now + retentionMillis}, status = NULL,
            headers = NULL, body = NULL
          WHERE scope = ${scope} AND key = ${key} AND token = ${String(row.token)} RETURNING token`
        return taken.length === 1 ? Option.some(started(scope, key, token)) : Option.none<Claim>()
      })

    return {
      claim: (scope, key, fingerprint, inUnit = false) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          for (let round = 0; round < 8; round++) {
            const claim = yield* attempt(scope, key, fingerprint, now, inUnit)
            if (Option.isSome(claim)) return claim.value
          }
          return yield* Effect.fail(new IdempotencyStoreError({ reason: "the key kept changing while it was claimed" }))
        }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(storeError(error)))),
      size: Effect.orDie(Effect.map(sql`SELECT count(*) AS count FROM idempotency_keys`, (rows) => numberOf(rows[0].count)))
    }
  })
)
