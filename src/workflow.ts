/**
 * boxkit/workflow: crash-safe orchestration on Effect's workflow engine (`@effect/workflow` on `@effect/cluster`).
 * A daemon that creates boxes, waits for them, collects model responses and terminates boxes can be killed at any
 * point and started again: the workflow resumes where it stopped, a replayed step sends the same idempotency key
 * (derived from the workflow execution and the step), and the service answers the first result instead of making a
 * second box.
 *
 * ```ts
 * import { Workflow } from "@effect/workflow"
 * import { BoxActivities, Ledger, ResponseActivities, Runner } from "boxkit/workflow"
 *
 * const Job = Workflow.make({ name: "my-job", payload: { namespace: Schema.String, index: Schema.Int }, ... })
 * const JobLayer = Job.toLayer(({ index }) => Effect.gen(function*() {
 *   const box = yield* BoxActivities.createBoxCompensated({ name: `job-${index}`, app_id, image: { base: "debian" } })
 *   yield* BoxActivities.awaitStatus(box.box_id)
 *   const answer = yield* ResponseActivities.submitAndAwait({ model, input: "..." })
 *   yield* BoxActivities.terminate(box.box_id)
 * }))
 * // provide Boxkit.layer(...) and Runner.layerSqlite("./data") (or Runner.layerPostgres(url))
 * ```
 *
 * The engine packages are optional peer dependencies: install `@effect/workflow`, `@effect/cluster`, `@effect/rpc`,
 * `@effect/sql` and `@effect/sql-libsql` (SQLite) or `@effect/sql-pg` (PostgreSQL). Keep the activities of one
 * workflow sequential (upstream Effect-TS/effect#6014) and run many workflows at once.
 *
 * Source: docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */

/**
 * Box operations as Activities with execution-derived idempotency keys; compensation.
 *
 * @since 0.1.0
 * @category Activities
 */
export * as BoxActivities from "./Workflow/BoxActivities.js"
/**
 * Background responses awaited as a DurableDeferred: webhook handler and polling fallback.
 *
 * @since 0.1.0
 * @category Activities
 */
export * as ResponseActivities from "./Workflow/ResponseActivities.js"
/** The ownership ledger of boxes and awaited responses. @since 0.1.0 @category Workflows */
export * as Ledger from "./Workflow/Ledger.js"
/** The reaper of boxes whose workflow ended or vanished. @since 0.1.0 @category Workflows */
export * as Reaper from "./Workflow/Reaper.js"
/** Runners: a single runner on SQLite, runners on PostgreSQL. @since 0.1.0 @category Runners */
export * as Runner from "./Workflow/Runner.js"
/** The orchestration of `boxkit orchestrate`, a template. @since 0.1.0 @category Workflows */
export * as Orchestration from "./Workflow/Orchestration.js"
