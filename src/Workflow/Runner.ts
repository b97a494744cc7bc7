/**
 * Where durable workflows run: the workflow engine of `@effect/cluster` (`ClusterWorkflowEngine`) with its messages,
 * replies and shard locks in SQL, and boxkit's ownership ledger (Ledger.ts) in the same database.
 *
 * - {@link layerSqlite}: one machine, one process: `SingleRunner`'s layers over a SQLite file (libsql) in a data
 *   directory, reads of unprocessed messages batched (StorageReadWindow.ts).
 * - {@link layerPostgres}: a runner on PostgreSQL that joins the other runners on the same database (socket runners
 *   that send each other the messages of the shards they hold); when a runner dies, its shard locks expire and the
 *   others take over its workflows.
 *
 * Both provide `WorkflowEngine`, `Sharding`, `MessageStorage`, the `SqlClient` and the `Ledger`.
 *
 * Source: docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import type { MessageStorage } from "@effect/cluster/MessageStorage"
import * as Runners from "@effect/cluster/Runners"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { SocketServerError } from "@effect/platform/SocketServer"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import { type ConfigError, Duration, Effect, Exit, Layer, Option, type Redacted, Schedule, Scope } from "effect"
import { mkdirSync } from "node:fs"
import { createServer } from "node:net"
import { join, resolve } from "node:path"
import * as SqlDriver from "../Sql/SqlDriver.js"
import * as Ledger from "./Ledger.js"
import * as StorageReadWindow from "./StorageReadWindow.js"

/**
 * What a runner provides: the workflow engine, the cluster's sharding and message storage, the SQL client and the
 * ownership ledger.
 *
 * @since 0.1.0
 * @category Models
 */
export type RunnerServices = WorkflowEngine | Sharding.Sharding | MessageStorage | SqlClient.SqlClient | Ledger.Ledger

/** The file of the workflow database in a data directory. @since 0.1.0 @category Constants */
export const sqliteFileName = "workflows.db"

/**
 * How often a runner looks in storage for messages it has not been told about (resumed workflows after a restart,
 * durable clocks, webhook completions sent by another runner): 1 s (the engine's default is 10 s).
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultMessagePollInterval = Duration.seconds(1)

/** The engine and the ledger over a `Sharding`, `MessageStorage` and `SqlClient`. */
const engineAndLedger = Layer.merge(ClusterWorkflowEngine.layer, Ledger.layer)

/**
 * One runner on one machine: `SingleRunner`'s layers with SQL runner storage over SQLite at `directory/workflows.db`
 * (the directory is created if missing), the message storage's reads of unprocessed messages batched over
 * `StorageReadWindow.defaultWindow`. `shardingConfig` overrides the cluster's settings (default: messages polled every
 * second; messages between entities of this process are not serialized, `simulateRemoteSerialization: false`: it
 * cost about a third of the CPU of `boxkit orchestrate`). Fails with `SqlDriverError` when libsql is not installed or the file cannot be opened, or with the SQL or
 * configuration error of the engine's start.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqlite = (
  directory: string,
  options: { readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined } = {}
) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    yield* Effect.try({
      try: () => mkdirSync(resolve(directory), { recursive: true, mode: 0o700 }),
      catch: (error) => new SqlDriver.SqlDriverError({ message: `cannot create ${directory}: ${SqlDriver.messageOf(error)}` })
    })
    // SingleRunner.layer's composition, with the message storage's reads batched (StorageReadWindow.ts).
    const runner = Sharding.layer.pipe(
      Layer.provideMerge(Runners.layerNoop),
      Layer.provideMerge(StorageReadWindow.layerSql()),
      Layer.provide([Layer.orDie(SqlRunnerStorage.layer), RunnerHealth.layerNoop]),
      Layer.provide(ShardingConfig.layerFromEnv({
        entityMessagePollInterval: defaultMessagePollInterval,
        simulateRemoteSerialization: false,
        ...options.shardingConfig
      }))
    )
    return engineAndLedger.pipe(
      Layer.provideMerge(runner),
      Layer.provideMerge(SqlDriver.layerSqliteFile(join(resolve(directory), sqliteFileName), { intMode: "bigint" }))
    )
  }))

/**
 * A free TCP port on `host` (the system's choice; another process may take it before it is used). Fails with
 * `SqlDriverError` when no port can be opened on `host`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const freePort = (host: string): Effect.Effect<number, SqlDriver.SqlDriverError> =>
  Effect.async((resume) => {
    const server = createServer()
    server.once("error", (error) =>
      resume(Effect.fail(new SqlDriver.SqlDriverError({ message: `no free port on ${host}: ${error.message}` }))))
    server.listen(0, host, () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resume(Effect.succeed(port)))
    })
  })

/**
 * The cluster settings of a PostgreSQL runner: messages polled every second, local messages not serialized; shard locks refreshed every 2 s and
 * expired after 8 s (the engine's defaults: 10 s and 35 s), runners pinged every 5 s, assignments read every second,
 * so that the shards of a killed runner go to the others within seconds; a shard handed to a runner that joins waits
 * at most 2 s for the workflows on it (default 15 s): they are interrupted and resume on the new owner.
 *
 * @since 0.1.0
 * @category Constants
 */
export const postgresShardingDefaults = {
  entityMessagePollInterval: defaultMessagePollInterval,
  simulateRemoteSerialization: false,
  shardLockRefreshInterval: Duration.seconds(2),
  shardLockExpiration: Duration.seconds(8),
  runnerHealthCheckInterval: Duration.seconds(5),
  refreshAssignmentsInterval: Duration.seconds(1),
  entityTerminationTimeout: Duration.seconds(2)
} as const

/**
 * How long an unprocessed workflow message may stay claimed (`last_read`) before {@link layerStallWatchdog} releases
 * it for the next storage read.
 *
 * @since 0.1.0
 * @category Constants
 */
export const stallThreshold = Duration.seconds(15)

/**
 * A workaround for an upstream bug of `@effect/cluster` on PostgreSQL (Effect-TS/effect#8312): a workflow's `run`
 * request reset by a deferred completion (the wake-up of a suspended workflow) can be claimed by a storage read
 * (`last_read` set) and then skipped, and is read again only when `last_read` is ten minutes old: the workflow stalls
 * for ten minutes (seen here in the two-runner kill test, about one run in five). Every 5 s this releases the
 * unprocessed messages of workflow entities claimed more than {@link stallThreshold} ago (`last_read` back to NULL)
 * and asks for a storage read: a message its runner is still processing is recognised as such and skipped, a stalled
 * one is delivered. Failures are logged, not raised.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerStallWatchdog = Layer.scopedDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const sharding = yield* Sharding.Sharding
  const seconds = Math.ceil(Duration.toSeconds(stallThreshold))
  const release = Effect.gen(function*() {
    const released = yield* sql`UPDATE cluster_messages SET last_read = NULL
      WHERE processed = false AND entity_type LIKE 'Workflow/%'
        AND last_read < NOW() - ${sql.literal(`INTERVAL '${seconds} seconds'`)}
      RETURNING id`
    if (released.length === 0) return
    yield* Effect.logInfo(`released ${released.length} workflow messages claimed and not processed (Effect-TS/effect#8312)`)
    yield* sharding.pollStorage
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("stall watchdog", cause)))
  yield* Effect.forkScoped(Effect.repeat(release, Schedule.spaced(Duration.seconds(5))))
}))

/** The advisory lock key of a runner's start ("boxkitw" in ASCII, truncated to 48 bits). */
const startLockKey = "108243394807927"

/**
 * `layer` built under a PostgreSQL advisory lock on one reserved connection, released once it is built: runners
 * starting together on a new database would otherwise create the engine's and the ledger's tables at the same time,
 * and one of them fail (`CREATE TABLE IF NOT EXISTS` races in PostgreSQL).
 */
const oneStartAtATime = <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>) =>
  Layer.scopedContext(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lockScope = yield* Scope.make()
    const unlocked = Scope.close(lockScope, Exit.void)
    const connection = yield* Effect.onError(Scope.extend(sql.reserve, lockScope), () => unlocked)
    yield* Effect.onError(connection.executeRaw(`SELECT pg_advisory_lock(${startLockKey})`, []), () => unlocked)
    return yield* Layer.build(layer).pipe(
      Effect.ensuring(
        connection.executeRaw(`SELECT pg_advisory_unlock(${startLockKey})`, []).pipe(Effect.ignore, Effect.zipRight(unlocked))
      )
    )
  }))

/**
 * A runner on PostgreSQL at `url` (the database must exist): the engine's tables and the ledger there, socket runners
 * (`@effect/platform-node` NodeClusterSocket) that reach each other at their `runnerAddress` (default: 127.0.0.1 and a
 * free port). Every runner on one database is one cluster: a workflow runs on the runner that holds its shard, and
 * when a runner dies, the others take its shards and resume its workflows from storage. Fails with `SqlDriverError`
 * when `@effect/sql-pg` is not installed, or with the SQL, socket or configuration error of the start.
 *
 * Its type names no `@effect/sql-pg` module (the `PgClient` it builds is provided as the generic `SqlClient`), so a
 * program that type-checks `boxkit/workflow` with `skipLibCheck: false` needs `@effect/sql-pg` only when it runs this
 * layer (docs/ASSUMPTIONS.md "The package").
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerPostgres = (
  url: Redacted.Redacted<string>,
  options: {
    readonly runnerAddress?: { readonly host: string; readonly port: number } | undefined
    readonly maxConnections?: number | undefined
    readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
  } = {}
): Layer.Layer<
  RunnerServices | Runners.Runners,
  ConfigError.ConfigError | SqlError | SqlDriver.SqlDriverError | SocketServerError
> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const { PgClient } = yield* SqlDriver.load("PostgreSQL", () => import("@effect/sql-pg"))
    const NodeClusterSocket = yield* Effect.promise(() => import("@effect/platform-node/NodeClusterSocket"))
    const address = options.runnerAddress ?? { host: "127.0.0.1", port: yield* freePort("127.0.0.1") }
    const cluster = NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: {
        ...postgresShardingDefaults,
        runnerAddress: Option.some(RunnerAddress.make(address.host, address.port)),
        ...options.shardingConfig
      }
    })
    const client = PgClient.layer({ url, maxConnections: options.maxConnections ?? 10, applicationName: "boxkit-workflow" })
    return layerStallWatchdog.pipe(
      Layer.provideMerge(oneStartAtATime(engineAndLedger.pipe(Layer.provideMerge(cluster)))),
      Layer.provideMerge(client)
    )
  }))
