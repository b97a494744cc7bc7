/**
 * Where durable workflows run: the workflow engine of `@effect/cluster` (`ClusterWorkflowEngine`) with its messages,
 * replies and shard locks in SQL, and boxkit's ownership ledger (Ledger.ts) in the same database.
 *
 * - {@link layerSqlite}: one machine, one process: `SingleRunner` over a SQLite file (libsql) in a data directory.
 * - {@link layerPostgres}: a runner on PostgreSQL that joins the other runners on the same database (socket runners
 *   that send each other the messages of the shards they hold); when a runner dies, its shard locks expire and the
 *   others take over its workflows.
 *
 * Both provide `WorkflowEngine`, `Sharding`, `MessageStorage`, the `SqlClient` and the `Ledger`.
 *
 * Source: issue 14; docs/decisions/0003-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import type { MessageStorage } from "@effect/cluster/MessageStorage"
import type { Sharding } from "@effect/cluster/Sharding"
import type { ShardingConfig } from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import type { SqlClient } from "@effect/sql"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import { Duration, Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import * as SqlDriver from "../Sql/SqlDriver.js"
import * as Ledger from "./Ledger.js"

/**
 * What a runner provides: the workflow engine, the cluster's sharding and message storage, the SQL client and the
 * ownership ledger.
 *
 * @since 0.1.0
 * @category Models
 */
export type RunnerServices = WorkflowEngine | Sharding | MessageStorage | SqlClient.SqlClient | Ledger.Ledger

/** The file of the workflow database in a data directory. */
export const sqliteFileName = "workflows.db"

/**
 * How often a runner looks in storage for messages it has not been told about (resumed workflows after a restart,
 * durable clocks, webhook completions sent by another runner): 1 s (the engine's default is 10 s).
 */
export const defaultMessagePollInterval = Duration.seconds(1)

/** The engine and the ledger over a `Sharding`, `MessageStorage` and `SqlClient`. */
const engineAndLedger = Layer.merge(ClusterWorkflowEngine.layer, Ledger.layer)

/**
 * One runner on one machine: `SingleRunner` with SQL runner storage over SQLite at `directory/workflows.db` (the
 * directory is created if missing). `shardingConfig` overrides the cluster's settings (default: messages polled every
 * second). Fails with `SqlDriverError` when libsql is not installed or the file cannot be opened, or with the SQL or
 * configuration error of the engine's start.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerSqlite = (
  directory: string,
  options: { readonly shardingConfig?: Partial<ShardingConfig["Type"]> } = {}
) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    yield* Effect.try({
      try: () => mkdirSync(resolve(directory), { recursive: true, mode: 0o700 }),
      catch: (error) => new SqlDriver.SqlDriverError({ message: `cannot create ${directory}: ${SqlDriver.messageOf(error)}` })
    })
    const runner = SingleRunner.layer({
      runnerStorage: "sql",
      shardingConfig: { entityMessagePollInterval: defaultMessagePollInterval, ...options.shardingConfig }
    })
    return engineAndLedger.pipe(
      Layer.provideMerge(runner),
      Layer.provideMerge(SqlDriver.layerSqliteFile(join(resolve(directory), sqliteFileName), { intMode: "bigint" }))
    )
  }))
