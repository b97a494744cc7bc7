/**
 * The instances sharing a SQL store, the work they owe (DurableWork.ts) and units of work (Transactions.ts).
 *
 * Each serving process is an instance with a random id and a heartbeat row in `instances`, refreshed four times per
 * `instanceTimeout`; an instance whose heartbeat is older than that is gone, and its running idempotency keys,
 * background jobs and webhook deliveries are taken over by the next live instance that looks (a claim is one
 * `UPDATE ... RETURNING`, so two instances never take the same row). With `sole` (SQLite: one process per data
 * directory) every other instance row is a previous run of this service and is removed at start, so its work is
 * taken over at once.
 *
 * Heartbeats are about processes, not the simulated world: they are stamped, spaced and judged by the real time of the
 * process (ServiceClock.ts `realClock`), never by the service's clock, which an advance of the virtual clock moves on
 * one instance at once and on the others only when they next read the stored offset.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state", "The virtual clock"; docs/decisions/0007-virtual-clock.md.
 *
 * @since 0.1.0
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import * as ServiceClock from "../../clock/ServiceClock.js"
import type { Prepared } from "../../responses/ResponseRequest.js"
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import { DurableWork, type StoredDelivery, type StoredJob } from "../DurableWork.js"
import { StoreError } from "../StoreError.js"
import { Transactions } from "../Transactions.js"
import { numberOf } from "./Rows.js"

/** This instance of the service among those sharing the store. */
export class Instances extends Context.Tag("boxkit/server/sql/Instances")<Instances, {
  /** This instance's id. */
  readonly id: string
  /** True when a heartbeat stamped `heartbeatAtMillis` (real time, Unix ms; null: no row) is of an instance alive now. */
  readonly isAlive: (heartbeatAtMillis: number | null) => Effect.Effect<boolean>
  /** The oldest heartbeat (real time, Unix ms) of an instance alive now. */
  readonly aliveSince: Effect.Effect<number>
}>() {}

/**
 * The registry: this instance's row, its heartbeat fiber (every quarter of `LocalServiceConfig.instanceTimeout` of
 * real time, stamped with the real time), and its row removed when the layer closes. `sole`: no other process uses the
 * store (SQLite), so earlier instances are gone at start.
 */
export const layerInstances = (options: { readonly sole: boolean }) =>
  Layer.scoped(
    Instances,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const id = crypto.randomUUID()
      const timeoutMillis = Duration.toMillis((yield* LocalServiceConfig).instanceTimeout)
      const beat = Effect.flatMap(ServiceClock.realTimeMillis, (now) =>
        sql`INSERT INTO instances (id, heartbeat_at_millis) VALUES (${id}, ${now})
          ON CONFLICT (id) DO UPDATE SET heartbeat_at_millis = excluded.heartbeat_at_millis`)
      if (options.sole) yield* sql`DELETE FROM instances`
      yield* beat
      yield* beat.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("instance heartbeat failed", cause)),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(1, Math.floor(timeoutMillis / 4))))),
        Effect.withClock(ServiceClock.realClock),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => Effect.ignore(sql`DELETE FROM instances WHERE id = ${id}`))
      const aliveSince = Effect.map(ServiceClock.realTimeMillis, (now) => now - timeoutMillis)
      return {
        id,
        isAlive: (heartbeatAtMillis) =>
          Effect.map(aliveSince, (since) => heartbeatAtMillis !== null && heartbeatAtMillis > since),
        aliveSince
      }
    })
  )

type Row = Record<string, unknown>

const jobOf = (row: Row): StoredJob => ({
  responseId: String(row.response_id),
  orgId: String(row.org_id),
  prepared: { ...(JSON.parse(String(row.prepared)) as Omit<Prepared, "webhookToken">), webhookToken: null },
  notBeforeMillis: numberOf(row.not_before_millis)
})

const deliveryOf = (row: Row): StoredDelivery => ({
  responseId: String(row.response_id),
  url: String(row.url),
  body: JSON.parse(String(row.body)),
  position: {
    round: numberOf(row.round),
    attempt: numberOf(row.attempt),
    roundStartedAtMillis: numberOf(row.round_started_at_millis)
  }
})

/** The work store in SQL (`background_jobs`, `webhook_outbox`), owned by instances; fails with `StoreError`. */
export const layerDurableWork = Layer.effect(
  DurableWork,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const instances = yield* Instances
    const orphaned = (table: "background_jobs" | "webhook_outbox") =>
      Effect.flatMap(instances.aliveSince, (since) =>
        sql`UPDATE ${sql(table)} SET owner = ${instances.id} WHERE owner IS NULL OR (owner <> ${instances.id} AND owner
          NOT IN (SELECT id FROM instances WHERE heartbeat_at_millis > ${since})) RETURNING *`)
    return {
      resumable: true,
      addJob: (job) => {
        // The webhook token stays with the response record; it is not copied here.
        const { webhookToken: _token, ...prepared } = job.prepared
        return StoreError.refail("DurableWork.addJob")(
          sql`INSERT INTO background_jobs (response_id, org_id, prepared, not_before_millis, owner)
          VALUES (${job.responseId}, ${job.orgId}, ${JSON.stringify(prepared)}, ${job.notBeforeMillis}, ${instances.id})`)
      },
      finishJob: (responseId) => StoreError.refail("DurableWork.finishJob")(
        sql`DELETE FROM background_jobs WHERE response_id = ${responseId}`),
      addDelivery: (delivery) =>
        StoreError.refail("DurableWork.addDelivery")(
          sql`INSERT INTO webhook_outbox (response_id, url, body, round, attempt, round_started_at_millis, owner)
          VALUES (${delivery.responseId}, ${delivery.url}, ${JSON.stringify(delivery.body)}, ${delivery.position.round},
            ${delivery.position.attempt}, ${delivery.position.roundStartedAtMillis}, ${instances.id})
          ON CONFLICT (response_id) DO UPDATE SET url = excluded.url, body = excluded.body, round = excluded.round,
            attempt = excluded.attempt, round_started_at_millis = excluded.round_started_at_millis,
            owner = excluded.owner`),
      progressDelivery: (responseId, position) =>
        StoreError.refail("DurableWork.progressDelivery")(
          sql`UPDATE webhook_outbox SET round = ${position.round}, attempt = ${position.attempt},
          round_started_at_millis = ${position.roundStartedAtMillis} WHERE response_id = ${responseId}`),
      finishDelivery: (responseId) => StoreError.refail("DurableWork.finishDelivery")(
        sql`DELETE FROM webhook_outbox WHERE response_id = ${responseId}`),
      claimJobs: StoreError.refail("DurableWork.claimJobs")(
        Effect.map(orphaned("background_jobs"), (rows) => rows.map(jobOf))),
      claimDeliveries: StoreError.refail("DurableWork.claimDeliveries")(
        Effect.map(orphaned("webhook_outbox"), (rows) => rows.map(deliveryOf)))
    }
  })
)

/**
 * Units of work as SQL transactions (nested ones are savepoints); a failed commit is a defect, the `StoreError` of
 * `Transactions.atomically` (the unit's type keeps its effect's errors; StoreOutage.ts answers it). `sole`: this
 * instance is the store's only writer (SQLite), so claims may be made in a request's unit of work (`claimsInUnit`).
 */
export const layerTransactions = (options: { readonly sole: boolean }) =>
  Layer.effect(
    Transactions,
    Effect.map(SqlClient.SqlClient, (sql) => ({
      atomically: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
        Effect.catchIf(
          sql.withTransaction(effect),
          (error): error is SqlError.SqlError & E => error instanceof SqlError.SqlError,
          (error) => Effect.die(StoreError.fromError("Transactions.atomically", error))
        ) as Effect.Effect<A, E, R>,
      claimsInUnit: options.sole
    }))
  )
