/**
 * The ownership ledger of durable workflows, in the workflow engine's own SQL database (SQLite or PostgreSQL): every
 * box a workflow created, with the workflow and execution that own it and when it was terminated, and every
 * background response a workflow awaits, with the `DurableDeferred` token that completes it and when it completed.
 *
 * The reaper (Reaper.ts) reads the boxes; the polling fallback of responses (Responses.ts) reads the responses. Rows
 * are written inside the activity that made the box or the response, after the service answered and before the
 * activity's result is stored: a crash in between replays the activity, which sends the same idempotency key, gets the
 * same box or response back, and writes the same row again (an upsert), so the ledger never misses one.
 *
 * It also keeps the webhook URL each submit sent (so that a submit run again sends the same body) and how each
 * workflow that records it ended (so that every runner on the database sees which of its N are done, and the process
 * that ran one learns it at once).
 *
 * Tables: `boxkit_workflow_boxes` (primary key `box_id`), `boxkit_workflow_responses` (primary key `response_id`),
 * `boxkit_workflow_webhook_urls` (primary key `execution_id`, `activity`), `boxkit_workflow_finished` (primary key
 * `execution_id`) and `boxkit_workflow_settings` (the database's `namespace`), created at start when missing. Times
 * are epoch milliseconds.
 *
 * Source: docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import { Cause, Clock, Effect, Exit, Layer, Option, PubSub } from "effect"

/**
 * A box a workflow owns: `box_id`, the owner's `workflow_name` and `execution_id`, `created_at` and `terminated_at`
 * (epoch milliseconds; `terminated_at` null while the box may still run).
 *
 * @since 0.1.0
 * @category Models
 */
export interface OwnedBox {
  readonly box_id: string
  readonly workflow_name: string
  readonly execution_id: string
  readonly created_at: number
  readonly terminated_at: number | null
}

/**
 * A background response a workflow awaits: `response_id`, the owner's `workflow_name` and `execution_id`, the
 * `DurableDeferred` `token` that completes the wait, `submitted_at` and `completed_at` (epoch milliseconds;
 * `completed_at` null while it is awaited).
 *
 * @since 0.1.0
 * @category Models
 */
export interface AwaitedResponse {
  readonly response_id: string
  readonly workflow_name: string
  readonly execution_id: string
  readonly token: string
  readonly submitted_at: number
  readonly completed_at: number | null
}

/**
 * How a workflow ended, as its last step recorded it ({@link Ledger} `recordFinished`): `outcome` `success` or
 * `failure` (with the error's `message`), `finished_at` in epoch milliseconds.
 *
 * @since 0.1.0
 * @category Models
 */
export interface FinishedWorkflow {
  readonly execution_id: string
  readonly workflow_name: string
  readonly outcome: "success" | "failure"
  readonly message: string | null
  readonly finished_at: number
}

const numberOf = (value: unknown): number => (typeof value === "bigint" ? Number(value) : Number(value))
const nullableNumber = (value: unknown): number | null => (value === null || value === undefined ? null : numberOf(value))

const toOwnedBox = (row: any): OwnedBox => ({
  box_id: String(row.box_id),
  workflow_name: String(row.workflow_name),
  execution_id: String(row.execution_id),
  created_at: numberOf(row.created_at),
  terminated_at: nullableNumber(row.terminated_at)
})

const toFinishedWorkflow = (row: any): FinishedWorkflow => ({
  execution_id: String(row.execution_id),
  workflow_name: String(row.workflow_name),
  outcome: row.outcome === "success" ? "success" : "failure",
  message: row.message === null || row.message === undefined ? null : String(row.message),
  finished_at: numberOf(row.finished_at)
})

const toAwaitedResponse = (row: any): AwaitedResponse => ({
  response_id: String(row.response_id),
  workflow_name: String(row.workflow_name),
  execution_id: String(row.execution_id),
  token: String(row.token),
  submitted_at: numberOf(row.submitted_at),
  completed_at: nullableNumber(row.completed_at)
})

/**
 * Creates the ledger's tables when missing (`boxkit_workflow_boxes`, `_settings`, `_finished`, `_webhook_urls`,
 * `_responses`), then answers the database's `namespace`: made at random the first time, the stored one after.
 */
const createTablesAndReadNamespace = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* sql`CREATE TABLE IF NOT EXISTS boxkit_workflow_boxes (
      box_id TEXT PRIMARY KEY,
      workflow_name TEXT NOT NULL,
      execution_id TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      terminated_at BIGINT
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS boxkit_workflow_settings (
      name TEXT PRIMARY KEY,
      value TEXT NOT NULL
    )`
    yield* sql`INSERT INTO boxkit_workflow_settings (name, value) VALUES ('namespace', ${crypto.randomUUID()})
      ON CONFLICT (name) DO NOTHING`
    const namespaceRows = yield* sql`SELECT value FROM boxkit_workflow_settings WHERE name = 'namespace'`
    const namespace = String(namespaceRows[0].value)
    yield* sql`CREATE TABLE IF NOT EXISTS boxkit_workflow_finished (
      execution_id TEXT PRIMARY KEY,
      workflow_name TEXT NOT NULL,
      outcome TEXT NOT NULL,
      message TEXT,
      finished_at BIGINT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS boxkit_workflow_webhook_urls (
      execution_id TEXT NOT NULL,
      activity TEXT NOT NULL,
      url TEXT,
      PRIMARY KEY (execution_id, activity)
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS boxkit_workflow_responses (
      response_id TEXT PRIMARY KEY,
      workflow_name TEXT NOT NULL,
      execution_id TEXT NOT NULL,
      token TEXT NOT NULL,
      submitted_at BIGINT NOT NULL,
      completed_at BIGINT
    )`
    return namespace
  })

/** The ledger's methods on owned boxes (`boxkit_workflow_boxes`), over `sql`. */
const ownedBoxesOf = (sql: SqlClient.SqlClient) => ({
  /** Records that the execution owns `boxId` (again: a no-op). */
  recordBox: (owner: { readonly workflowName: string; readonly executionId: string }, boxId: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`INSERT INTO boxkit_workflow_boxes (box_id, workflow_name, execution_id, created_at, terminated_at)
        VALUES (${boxId}, ${owner.workflowName}, ${owner.executionId}, ${now}, NULL)
        ON CONFLICT (box_id) DO NOTHING`.pipe(Effect.asVoid)),
  /** Marks `boxId` terminated (keeps the first time). */
  markTerminated: (boxId: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`UPDATE boxkit_workflow_boxes SET terminated_at = ${now}
        WHERE box_id = ${boxId} AND terminated_at IS NULL`.pipe(Effect.asVoid)),
  /** Every owned box not yet terminated. */
  liveBoxes: Effect.map(
    sql`SELECT * FROM boxkit_workflow_boxes WHERE terminated_at IS NULL ORDER BY created_at`,
    (rows) => rows.map(toOwnedBox)
  ),
  /** Every owned box. */
  boxes: Effect.map(sql`SELECT * FROM boxkit_workflow_boxes ORDER BY created_at`, (rows) => rows.map(toOwnedBox))
})

/**
 * The ledger's methods on finished workflows (`boxkit_workflow_finished`), over `sql`; `finishedHere` hears each
 * end this process records.
 */
const finishedWorkflowsOf = (sql: SqlClient.SqlClient, finishedHere: PubSub.PubSub<FinishedWorkflow>) => ({
  /**
   * Records how the execution ended (again: a no-op, the first record stays), then tells this process
   * (`finishedHere`). Written by the workflow's last step ({@link recordingOutcome}), after everything else it
   * does.
   */
  recordFinished: (
    owner: { readonly workflowName: string; readonly executionId: string },
    outcome: "success" | "failure",
    message: string | null
  ) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`INSERT INTO boxkit_workflow_finished (execution_id, workflow_name, outcome, message, finished_at)
        VALUES (${owner.executionId}, ${owner.workflowName}, ${outcome}, ${message}, ${now})
        ON CONFLICT (execution_id) DO NOTHING`.pipe(
        Effect.zipRight(PubSub.publish(finishedHere, {
          execution_id: owner.executionId,
          workflow_name: owner.workflowName,
          outcome,
          message,
          finished_at: now
        })),
        Effect.asVoid
      )),
  /** Every finished execution of `workflowName`, as recorded by any runner on this database. */
  finished: (workflowName: string) =>
    Effect.map(
      sql`SELECT * FROM boxkit_workflow_finished WHERE workflow_name = ${workflowName}`,
      (rows) => rows.map(toFinishedWorkflow)
    ),
  /**
   * The executions recorded finished by this process, as they are recorded (subscribe before you read
   * `finished`, so that none falls between the two).
   */
  finishedHere
})

/**
 * The ledger's methods on awaited responses (`boxkit_workflow_responses`) and the webhook URLs their submits sent
 * (`boxkit_workflow_webhook_urls`), over `sql`.
 */
const awaitedResponsesOf = (sql: SqlClient.SqlClient) => ({
  /** Records that the execution awaits `responseId` through `token` (again: a no-op). */
  recordResponse: (
    owner: { readonly workflowName: string; readonly executionId: string },
    responseId: string,
    token: string
  ) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`INSERT INTO boxkit_workflow_responses
        (response_id, workflow_name, execution_id, token, submitted_at, completed_at)
        VALUES (${responseId}, ${owner.workflowName}, ${owner.executionId}, ${token}, ${now}, NULL)
        ON CONFLICT (response_id) DO NOTHING`.pipe(Effect.asVoid)),
  /**
   * The webhook URL the submit activity `activity` of the execution sends: `url` (null: none) the first time, the
   * URL stored then on every later run (a request sent again with its key must have the same body).
   */
  webhookUrl: (
    owner: { readonly workflowName: string; readonly executionId: string },
    activity: string,
    url: string | null
  ) =>
    // One statement: on a conflict the row is "updated" to itself, so that RETURNING gives the stored URL.
    Effect.map(
      sql`INSERT INTO boxkit_workflow_webhook_urls (execution_id, activity, url)
        VALUES (${owner.executionId}, ${activity}, ${url})
        ON CONFLICT (execution_id, activity) DO UPDATE SET url = boxkit_workflow_webhook_urls.url
        RETURNING url`,
      (rows) => (rows[0]?.url === null || rows[0]?.url === undefined ? null : String(rows[0].url))
    ),
  /** Marks `responseId` completed (keeps the first time). */
  markCompleted: (responseId: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`UPDATE boxkit_workflow_responses SET completed_at = ${now}
        WHERE response_id = ${responseId} AND completed_at IS NULL`.pipe(Effect.asVoid)),
  /** Marks the response awaited through `token` completed (keeps the first time). */
  markCompletedByToken: (token: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      sql`UPDATE boxkit_workflow_responses SET completed_at = ${now}
        WHERE token = ${token} AND completed_at IS NULL`.pipe(Effect.asVoid)),
  /** The awaited responses submitted at or before `submittedBefore` (epoch ms) and not completed. */
  pendingResponses: (submittedBefore: number) =>
    Effect.map(
      sql`SELECT * FROM boxkit_workflow_responses
        WHERE completed_at IS NULL AND submitted_at <= ${submittedBefore} ORDER BY submitted_at`,
      (rows) => rows.map(toAwaitedResponse)
    ),
  /** Every awaited response. */
  responses: Effect.map(
    sql`SELECT * FROM boxkit_workflow_responses ORDER BY submitted_at`,
    (rows) => rows.map(toAwaitedResponse)
  )
})

/**
 * The ledger over the `SqlClient` in context: its tables created when missing, the database's `namespace`, and the
 * methods on owned boxes, finished workflows and awaited responses. Every method fails with `SqlError` when the
 * database does.
 *
 * @since 0.1.0
 * @category Services
 */
export class Ledger extends Effect.Service<Ledger>()("boxkit/workflow/Ledger", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const namespace = yield* createTablesAndReadNamespace(sql)
    const finishedHere = yield* PubSub.unbounded<FinishedWorkflow>()
    return {
      /**
       * A random id of this database, made when its ledger is first created (the same for every runner on it).
       * Put it in the idempotency key of your workflows (`Workflow.make({ idempotencyKey })`): the keys the
       * activities send derive from the execution id, and two databases used with one API key must not send the
       * same keys (the service remembers a key for at least 24 hours and would replay the other's answers).
       */
      namespace,
      ...ownedBoxesOf(sql),
      ...finishedWorkflowsOf(sql, finishedHere),
      ...awaitedResponsesOf(sql)
    }
  })
}) {}

/**
 * The ledger's layer (creates its tables when missing); needs the `SqlClient`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer: Layer.Layer<Ledger, SqlError, SqlClient.SqlClient> = Ledger.Default

/**
 * `body` (a workflow's steps) with its end recorded in the ledger as its last step (`recordFinished`): `success`, or
 * `failure` with the error's message (a typed error's `message`, else the cause). A run that only stops here (it
 * suspends to wait, or the runner stops it) records nothing; it ends later. Every runner on the database then sees
 * that the execution ended (`finished`), and this process learns it at once (`finishedHere`).
 *
 * @since 0.1.0
 * @category Workflows
 */
export const recordingOutcome = <A, E, R>(
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | Ledger | WorkflowInstance> =>
  Effect.flatMap(WorkflowInstance, (instance) =>
    Effect.onExit(body, (exit) => {
      if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return Effect.void
      const owner = { workflowName: instance.workflow.name, executionId: instance.executionId }
      const message = Exit.isSuccess(exit) ? null : failureMessage(exit.cause)
      return Effect.flatMap(Ledger, (ledger) =>
        Effect.orDie(ledger.recordFinished(owner, Exit.isSuccess(exit) ? "success" : "failure", message)))
    }))

/**
 * The `message` a failed workflow's end is recorded with: its typed error's `message` (or the error as text), else
 * the whole cause (a defect), pretty-printed.
 *
 * @since 0.1.0
 * @category Workflows
 */
export const failureMessage = (cause: Cause.Cause<unknown>): string =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => Cause.pretty(cause),
    onSome: (error) =>
      typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)
  })
