/**
 * The reaper: terminates the boxes of the ownership ledger (Ledger.ts) whose workflow has ended (its result is
 * stored: succeeded, failed or interrupted) or vanished (the engine holds no run of that execution), and marks them
 * terminated. Boxes of running workflows are left alone, and so are the boxes of workflows this process does not
 * know (pass every workflow whose boxes it should judge).
 *
 * {@link reap} is one pass; {@link layerCron} runs it as a `ClusterCron` job (one run per schedule in the whole
 * cluster, whichever runner holds it; on a single runner, that runner).
 *
 * Source: docs/decisions/0004-durable-orchestration.md (a periodic job terminates boxes whose workflow has ended or
 * vanished).
 *
 * @since 0.1.0
 */
import * as ClusterCron from "@effect/cluster/ClusterCron"
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import { EntityAddress } from "@effect/cluster/EntityAddress"
import { EntityId } from "@effect/cluster/EntityId"
import { EntityType } from "@effect/cluster/EntityType"
import { MessageStorage } from "@effect/cluster/MessageStorage"
import { Sharding } from "@effect/cluster/Sharding"
import type * as Workflow from "@effect/workflow/Workflow"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import { Context, type Cron, Effect, Option } from "effect"
import { terminateNow } from "./BoxActivities.js"
import { Ledger } from "./Ledger.js"

/**
 * A workflow whose boxes the reaper judges (any workflow whose schemas need no services).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ReapedWorkflow {
  readonly name: string
  readonly annotations: Context.Context<never>
  readonly poll: (executionId: string) => Effect.Effect<Workflow.Result<unknown, unknown> | undefined, never, WorkflowEngine>
}

/** Whether the engine holds a run of `executionId` of `workflow` (the address as ClusterWorkflowEngine makes it). */
const runExists = (workflow: ReapedWorkflow, executionId: string) =>
  Effect.gen(function*() {
    const sharding = yield* Sharding
    const storage = yield* MessageStorage
    const entityId = EntityId.make(executionId)
    const group = Context.get(workflow.annotations, ClusterSchema.ShardGroup)(entityId)
    const address = new EntityAddress({
      entityType: EntityType.make(`Workflow/${workflow.name}`),
      entityId,
      shardId: sharding.getShardId(entityId, group)
    })
    return Option.isSome(yield* storage.requestIdForPrimaryKey({ address, tag: "run", id: "" }))
  })

/**
 * One pass of the reaper over `workflows`: returns the ids of the boxes it judged ended. A box whose terminate
 * call fails is logged and stays live in the ledger for the next pass.
 *
 * @since 0.1.0
 * @category Reaping
 */
export const reap = (workflows: ReadonlyArray<ReapedWorkflow>) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const byName = new Map(workflows.map((workflow) => [workflow.name, workflow]))
    const live = yield* Effect.orDie(ledger.liveBoxes)
    const reaped: Array<string> = []
    for (const box of live) {
      const workflow = byName.get(box.workflow_name)
      if (workflow === undefined) continue
      const exists = yield* Effect.orDie(runExists(workflow, box.execution_id))
      // A suspended workflow has a stored result too (Suspended): it is waiting, not ended.
      const result = exists ? yield* workflow.poll(box.execution_id) : undefined
      if (!exists || (result !== undefined && result._tag === "Complete")) {
        yield* terminateNow(box.box_id)
        reaped.push(box.box_id)
      }
    }
    return reaped
  })

/**
 * {@link reap} as a `ClusterCron` job named `boxkit/reaper` on `cron` (e.g. `Cron.unsafeParse("* * * * *")`, every
 * minute), with its count logged.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerCron = (workflows: ReadonlyArray<ReapedWorkflow>, cron: Cron.Cron) =>
  ClusterCron.make({
    name: "boxkit/reaper",
    cron,
    execute: Effect.flatMap(reap(workflows), (reaped) =>
      reaped.length > 0 ? Effect.logInfo(`reaper terminated ${reaped.length} boxes`) : Effect.void)
  })
