/**
 * The box operations that change state, as `@effect/workflow` Activities: create a box (with compensation), wait for
 * a status, upgrade, clipboard write, publish and unpublish a port, pause / resume / sleep, terminate.
 *
 * Each activity's `Idempotency-Key` is derived from the workflow execution and the activity's name
 * (`Activity.idempotencyKey`, a hash of both): a workflow replayed after a crash sends the same key, and the service
 * answers the first result instead of making a second box. Operations the spec gives no key (publish, unpublish,
 * lifecycle moves, terminate, clipboard) are made safe to replay here: a publish that finds its port already published
 * reads the listener back, an unpublish that finds no listener is done, the others are safe to repeat.
 *
 * Activity names must be unique within one workflow: the defaults (`boxkit/create-box`, ...) fit one box per
 * workflow; give `name` for a second call of the same operation. Run activities of one workflow one after the other
 * (upstream bug Effect-TS/effect#6014: replay can deadlock with concurrent activities); run many workflows at once.
 *
 * Failures are stored with the workflow as one serializable {@link ActivityError} (the client already retried what
 * was transient).
 *
 * Source: spec "Create a box", "Idempotency-Key" (Limits); docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import * as Activity from "@effect/workflow/Activity"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as Workflow from "@effect/workflow/Workflow"
import { WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import { Cause, Duration, Effect, Metric, Schema } from "effect"
import { Boxes } from "../Client/Boxes.js"
import { Clipboard } from "../Client/Clipboard.js"
import { Listeners } from "../Client/Listeners.js"
import * as Box from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import * as ActivityTemplate from "./ActivityTemplate.js"
import { Ledger } from "./Ledger.js"

/**
 * A box operation of a workflow failed for good: the `operation` (activity name), the client error's tag as `type`
 * (`ConflictError`, `BoxFailedError`, `TransportError`, ...), its HTTP `status` and `code` when it has them, and its
 * `message`.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ActivityError extends Schema.TaggedError<ActivityError>()("ActivityError", {
  operation: Schema.String,
  type: Schema.String,
  status: Schema.optional(Schema.Number),
  code: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Number))),
  message: Schema.String
}) {}

/**
 * The {@link ActivityError} of `operation` for any failure of the client.
 *
 * @since 0.1.0
 * @category Errors
 */
export const toActivityError = (operation: string) => (error: unknown): ActivityError => {
  const fields = (typeof error === "object" && error !== null ? error : {}) as Record<string, unknown>
  return new ActivityError({
    operation,
    type: typeof fields._tag === "string" ? fields._tag : "UnknownError",
    status: typeof fields.status === "number" ? fields.status : undefined,
    code: typeof fields.code === "string" || typeof fields.code === "number" ? fields.code : undefined,
    message: typeof fields.message === "string" ? fields.message : String(error)
  })
}

/**
 * The idempotency key of activity `name` in the current workflow execution: `boxkit-` and a hash of the execution id
 * and the name (the same on every replay).
 *
 * @since 0.1.0
 * @category Keys
 */
export const idempotencyKey = (name: string): Effect.Effect<string, never, WorkflowInstance> =>
  Effect.map(Activity.idempotencyKey(name), (hash) => `boxkit-${hash}`)

/**
 * Counts the answers the service replayed for a key sent again (`Idempotent-Replayed: true`): each is a create,
 * upgrade or submit repeated after a crash or a lost answer that did not happen twice.
 *
 * @since 0.1.0
 * @category Metrics
 */
export const replayedAnswers = Metric.counter("boxkit_workflow_replayed_answers", {
  description: "Answers the service replayed for an idempotency key sent again by a workflow activity",
  incremental: true
})

/**
 * Counts `answer` in {@link replayedAnswers} when the service replayed it.
 *
 * @since 0.1.0
 * @category Metrics
 */
export const countReplayed = <A extends { readonly replayed: boolean }>(answer: A): Effect.Effect<A> =>
  answer.replayed ? Effect.as(Metric.increment(replayedAnswers), answer) : Effect.succeed(answer)

/**
 * The workflow name and execution id of the current workflow (the owner recorded in the ledger).
 *
 * @since 0.1.0
 * @category Utils
 */
export const currentOwner = Effect.map(WorkflowInstance, (instance) => ({
  workflowName: instance.workflow.name,
  executionId: instance.executionId
}))

/**
 * Options of every activity: its `name`, unique within the workflow (each activity has a default).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ActivityOptions {
  readonly name?: string | undefined
}

/**
 * Creates a box with the execution-derived key and records it in the ledger as owned by the execution. Succeeds with
 * `{ box_id, status, error_message? }`; fails with {@link ActivityError}. Prefer {@link createBoxCompensated} in a
 * workflow, so that the box is terminated when the workflow fails.
 *
 * With `awaitRunning`, the same activity then waits until the box is `running` (as {@link awaitStatus}; `timeout`
 * default 60 s) and succeeds with that status, and runs `setUp` with the box's id (for example a clipboard write;
 * it must be safe to repeat: a crash before the activity's result is stored runs it again): one step of the
 * workflow instead of several. Each step is a message the engine stores, and every step before a durable wait is
 * replayed after it. A box that fails to start (or does not within the timeout), or whose `setUp` fails, is
 * terminated and marked in the ledger before the activity fails with {@link ActivityError} (`BoxFailedError`,
 * `WaitTimeoutError`, or the `setUp` error's tag): no compensation exists yet for a box whose activity failed.
 *
 * @since 0.1.0
 * @category Activities
 */
export const createBox = <R = never>(request: Box.CreateBoxRequest, options: CreateBoxOptions<R> = {}) =>
  createBoxTemplate(
    options.name ?? (options.awaitRunning ? "boxkit/create-box-running" : "boxkit/create-box"),
    { request, options: options as CreateBoxOptions<unknown> }
  ) as Effect.Effect<Box.CreateBoxResponse, ActivityError, R | Boxes | Ledger | WorkflowEngine | WorkflowInstance>

const createBoxTemplate = ActivityTemplate.make({
  key: "create-box",
  success: Box.CreateBoxResponse,
  error: ActivityError,
  execute: (
    { options, request }: { readonly request: Box.CreateBoxRequest; readonly options: CreateBoxOptions<unknown> },
    name
  ) =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const ledger = yield* Ledger
      const key = yield* idempotencyKey(name)
      const created = yield* boxes.create(request, { idempotencyKey: key }).pipe(
        Effect.mapError(toActivityError(name)),
        Effect.flatMap(countReplayed)
      )
      yield* Effect.orDie(ledger.recordBox(yield* currentOwner, created.value.box_id))
      if (!options.awaitRunning) return created.value
      const running = yield* boxes.awaitStatus(created.value.box_id, "running", { timeout: options.timeout }).pipe(
        Effect.tap((box) => options.setUp === undefined ? Effect.void : options.setUp(box.box_id)),
        Effect.mapError(toActivityError(name)),
        Effect.tapError(() => terminateNow(created.value.box_id))
      )
      return { box_id: running.box_id, status: running.status }
    }) as Effect.Effect<Box.CreateBoxResponse, ActivityError, Boxes | Ledger | WorkflowInstance>
})

/**
 * Options of {@link createBox}: the activity's `name` (default `boxkit/create-box`, or `boxkit/create-box-running`
 * with `awaitRunning`), whether to wait until the box is `running` in the same activity, that wait's `timeout`
 * (default 60 s), and `setUp`, run in the same activity once the box runs (only with `awaitRunning`; safe to repeat).
 *
 * @since 0.1.0
 * @category Activities
 */
export interface CreateBoxOptions<R = never> extends ActivityOptions {
  readonly awaitRunning?: boolean | undefined
  readonly timeout?: Duration.Duration | undefined
  readonly setUp?: ((boxId: BoxId) => Effect.Effect<unknown, { readonly _tag: string; readonly message: string }, R>) | undefined
}

/**
 * Terminates `boxId` now (not as an activity) and marks it terminated in the ledger; a failure is logged, not
 * raised. The compensation of {@link createBoxCompensated} and the reaper's action.
 *
 * @since 0.1.0
 * @category Activities
 */
export const terminateNow = (boxId: string) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    const ledger = yield* Ledger
    yield* boxes.terminate(boxId as BoxId)
    yield* ledger.markTerminated(boxId)
  }).pipe(Effect.catchAll((error) => Effect.logWarning(`could not terminate box ${boxId}: ${String(error)}`)))

/**
 * {@link createBox} with compensation: when the workflow fails for good or is interrupted by `Workflow.interrupt`,
 * the box is terminated (as the workflow's scope closes). A workflow only stopped on this runner (the process shuts
 * down, or its shard moves to another runner) closes its scope with an interruption too, but it goes on elsewhere:
 * then nothing is compensated.
 *
 * @since 0.1.0
 * @category Activities
 */
export const createBoxCompensated = <R = never>(request: Box.CreateBoxRequest, options: CreateBoxOptions<R> = {}) =>
  Effect.flatMap(WorkflowInstance, (instance) =>
    Workflow.withCompensation(
      createBox(request, options),
      (created, cause) => isStopOnly(cause, instance) ? Effect.void : terminateNow(created.box_id)
    ))

/**
 * True when `cause` only stops the workflow on this runner: an interruption that is not the workflow's own
 * (`Workflow.interrupt` sets `instance.interrupted`). The engine closes the workflow's scope with it when the runner
 * shuts down or the workflow's shard moves; the workflow then resumes from storage.
 *
 * @since 0.1.0
 * @category Activities
 */
export const isStopOnly = (cause: Cause.Cause<unknown>, instance: WorkflowInstance["Type"]): boolean =>
  Cause.isInterruptedOnly(cause) && !instance.interrupted

/**
 * Waits until `boxId` has status `target` (default `running`), polling (Boxes.awaitStatus; `timeout` default 60 s).
 * Succeeds with the box record; fails with {@link ActivityError} of type `BoxFailedError` or `WaitTimeoutError`.
 *
 * @since 0.1.0
 * @category Activities
 */
export const awaitStatus = (
  boxId: BoxId,
  target = "running",
  options: ActivityOptions & { readonly timeout?: Duration.Duration | undefined } = {}
) => awaitStatusTemplate(options.name ?? `boxkit/await-${target}`, { boxId, target, timeout: options.timeout })

const awaitStatusTemplate = ActivityTemplate.make({
  key: "await-status",
  success: Box.Box,
  error: ActivityError,
  execute: (
    input: { readonly boxId: BoxId; readonly target: string; readonly timeout: Duration.Duration | undefined },
    name
  ) =>
    Effect.flatMap(Boxes, (boxes) =>
      Effect.mapError(boxes.awaitStatus(input.boxId, input.target, { timeout: input.timeout }), toActivityError(name)))
})

/**
 * Upgrades `boxId` with the execution-derived key. Succeeds with the upgrade result.
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const upgrade = (boxId: BoxId, options: ActivityOptions = {}) =>
  upgradeTemplate(options.name ?? "boxkit/upgrade", boxId)

const upgradeTemplate = ActivityTemplate.make({
  key: "upgrade",
  success: Box.UpgradeResult,
  error: ActivityError,
  execute: (boxId: BoxId, name) =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const key = yield* idempotencyKey(name)
      const answer = yield* boxes.upgrade(boxId, { idempotencyKey: key }).pipe(
        Effect.mapError(toActivityError(name)),
        Effect.flatMap(countReplayed)
      )
      return answer.value
    })
})

/**
 * Places `bytes` of `mediaType` (`text/plain` or `image/*`) on the clipboard of `boxId` (a replay writes the same
 * bytes again). Succeeds with `{}`.
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const writeClipboard = (boxId: BoxId, bytes: Uint8Array, mediaType: string, options: ActivityOptions = {}) =>
  writeClipboardTemplate(options.name ?? "boxkit/write-clipboard", { boxId, bytes, mediaType })

const writeClipboardTemplate = ActivityTemplate.make({
  key: "write-clipboard",
  success: Box.EmptyObject,
  error: ActivityError,
  execute: (input: { readonly boxId: BoxId; readonly bytes: Uint8Array; readonly mediaType: string }, name) =>
    Effect.flatMap(Clipboard, (clipboard) =>
      Effect.mapError(clipboard.write(input.boxId, input.bytes, input.mediaType), toActivityError(name)))
})

/**
 * Places UTF-8 `text` on the clipboard of `boxId` ({@link writeClipboard} with `text/plain; charset=utf-8`).
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const writeClipboardText = (boxId: BoxId, text: string, options: ActivityOptions = {}) =>
  writeClipboard(boxId, new TextEncoder().encode(text), "text/plain; charset=utf-8", options)

/**
 * Publishes `guestPort` of `boxId` (`http` or `tcp`). A replay that finds the port already published (code
 * `already_exists`) reads the listener from the box record. Succeeds with the listener.
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const publish = (
  boxId: BoxId,
  guestPort: number,
  protocol: "http" | "tcp" = "http",
  options: ActivityOptions = {}
) =>
  publishTemplate(options.name ?? `boxkit/publish-${guestPort}`, { boxId, guestPort, protocol })

const publishTemplate = ActivityTemplate.make({
  key: "publish",
  success: Box.Listener,
  error: ActivityError,
  execute: (
    { boxId, guestPort, protocol }: { readonly boxId: BoxId; readonly guestPort: number; readonly protocol: "http" | "tcp" },
    name
  ) =>
    Effect.gen(function*() {
      const listeners = yield* Listeners
      const boxes = yield* Boxes
      const published = listeners.publish(boxId, guestPort, protocol).pipe(
        Effect.catchIf(
          (error) => error._tag === "ConflictError" && error.code === "already_exists",
          (error) =>
            Effect.flatMap(boxes.retrieve(boxId), (box) => {
              const listener = box.listeners.find((listener) => listener.guest_port === guestPort)
              return listener !== undefined && listener.protocol === protocol ? Effect.succeed(listener) : Effect.fail(error)
            })
        )
      )
      return yield* Effect.mapError(published, toActivityError(name))
    })
})

/**
 * Unpublishes `guestPort` of `boxId`; a port that is not published (a replay) counts as done. Succeeds with
 * `{ box_id, guest_port }`.
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const unpublish = (boxId: BoxId, guestPort: number, options: ActivityOptions = {}) =>
  unpublishTemplate(options.name ?? `boxkit/unpublish-${guestPort}`, { boxId, guestPort })

const unpublishTemplate = ActivityTemplate.make({
  key: "unpublish",
  success: Box.UnpublishResult,
  error: ActivityError,
  execute: ({ boxId, guestPort }: { readonly boxId: BoxId; readonly guestPort: number }, name) =>
    Effect.flatMap(Listeners, (listeners) =>
      listeners.unpublish(boxId, guestPort).pipe(
        Effect.catchTag("NotFoundError", () => Effect.succeed({ box_id: boxId, guest_port: guestPort })),
        Effect.mapError(toActivityError(name))
      ))
})

/**
 * Pauses, resumes or puts `boxId` to sleep (`operation`). Succeeds with the box record.
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const lifecycle = (operation: "pause" | "resume" | "sleep", boxId: BoxId, options: ActivityOptions = {}) =>
  lifecycleTemplate(options.name ?? `boxkit/${operation}`, { operation, boxId })

const lifecycleTemplate = ActivityTemplate.make({
  key: "lifecycle",
  success: Box.Box,
  error: ActivityError,
  execute: ({ boxId, operation }: { readonly operation: "pause" | "resume" | "sleep"; readonly boxId: BoxId }, name) =>
    Effect.flatMap(Boxes, (boxes) => Effect.mapError(boxes[operation](boxId), toActivityError(name)))
})

/**
 * Terminates `boxId` and marks it terminated in the ledger. Succeeds with the box record.
 * Fails with {@link ActivityError} when the operation fails for good (its result is stored with the workflow).
 *
 * @since 0.1.0
 * @category Activities
 */
export const terminate = (boxId: BoxId, options: ActivityOptions = {}) =>
  terminateTemplate(options.name ?? "boxkit/terminate", boxId)

const terminateTemplate = ActivityTemplate.make({
  key: "terminate",
  success: Box.Box,
  error: ActivityError,
  execute: (boxId: BoxId, name) =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const ledger = yield* Ledger
      const box = yield* Effect.mapError(boxes.terminate(boxId), toActivityError(name))
      yield* Effect.orDie(ledger.markTerminated(boxId))
      return box
    })
})
