/**
 * Boxes: create (idempotent), read, wait for a status, upgrade (idempotent), pause, resume, sleep, terminate, and a
 * box as a scoped resource.
 *
 * Source: spec "Create a box", "POST {base_url}/boxes/{box_id}/upgrade", "States and transitions"; lifecycle paths:
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import type { HttpClientResponse } from "@effect/platform"
import { Duration, Effect, Schema } from "effect"
import { IdempotencyKeyHeader } from "../Contract/Headers.js"
import * as Box from "../Domain/Box.js"
import * as BoxLifecycle from "../Domain/BoxLifecycle.js"
import type { BoxId } from "../Domain/Ids.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import { pollUntil } from "./Polling.js"
import { type OperationOptions, Transport, validate } from "./Transport.js"

/**
 * A box ended in a status that will never become the awaited one (`failed`, `terminated`, ...).
 *
 * @since 0.1.0
 * @category Errors
 */
export class BoxFailedError extends Schema.TaggedError<BoxFailedError>()("BoxFailedError", {
  box_id: Schema.String,
  status: Schema.String,
  error_message: Schema.optional(Schema.String),
  message: Schema.String
}) {}

/**
 * Waiting for a status ran past its deadline; `lastStatus` is the last status observed.
 *
 * @since 0.1.0
 * @category Errors
 */
export class WaitTimeoutError extends Schema.TaggedError<WaitTimeoutError>()("WaitTimeoutError", {
  box_id: Schema.String,
  lastStatus: Schema.String,
  timeout: Schema.DurationFromSelf,
  message: Schema.String
}) {}

/**
 * Statuses after which a box never becomes `running` again on its own (BoxLifecycle.endStatuses).
 *
 * @since 0.1.0
 * @category Constants
 */
export const endStatuses: ReadonlySet<string> = BoxLifecycle.endStatuses

/**
 * Options of calls on boxes: the owner-override reason (printable ASCII; for admins on private boxes), and `retry`,
 * overrides of `BoxkitConfig.retry` for this call only (see Retry.ts and `Transport.withRetry`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface BoxCallOptions extends OperationOptions {
  readonly ownerOverrideReason?: string | undefined
}

/**
 * Options of idempotent calls: the caller's own key (else one is generated once per call).
 *
 * @since 0.1.0
 * @category Models
 */
export interface IdempotentCallOptions extends BoxCallOptions {
  readonly idempotencyKey?: string | undefined
}

/**
 * Options of {@link Boxes} `awaitStatus`: deadline (default 60 s), polling interval (default 100 ms, doubling to 2 s),
 * and `onRead`, run with each box record read while waiting (e.g. to show the current status).
 *
 * @since 0.1.0
 * @category Models
 */
export interface AwaitOptions extends BoxCallOptions {
  readonly timeout?: Duration.Duration | undefined
  readonly interval?: Duration.Duration | undefined
  readonly onRead?: ((box: Box.Box) => Effect.Effect<void>) | undefined
}

/**
 * Every operation on boxes is safe to repeat (reads, lifecycle moves, or sent with an idempotency key) unless the
 * caller says otherwise (`safeToRepeat: false`).
 */
const callOptions = (options: BoxCallOptions) => ({
  safeToRepeat: options.safeToRepeat ?? true,
  retry: options.retry,
  ownerOverrideReason: options.ownerOverrideReason
})

/**
 * The answer of an idempotent operation (create box, upgrade) sent with `key`: the value, the key and whether
 * the service replayed a remembered answer.
 */
const idempotentAnswer = <A, E>(key: string, sent: Effect.Effect<readonly [A, HttpClientResponse.HttpClientResponse], E>) =>
  Effect.map(sent, ([value, response]): IdempotencyKey.Idempotent<A> => ({
    value,
    idempotencyKey: key,
    replayed: IdempotencyKey.isReplayed(response.headers)
  }))

/**
 * `awaitStatus` over `retrieve`: polls a box until its status is `target`, failing with `BoxFailedError` when it
 * ends in another end status and `WaitTimeoutError` after the deadline.
 */
const awaitStatusWith = <E>(retrieve: (boxId: BoxId, options: BoxCallOptions) => Effect.Effect<Box.Box, E>) =>
  Effect.fn("Boxes.awaitStatus")(function*(
    boxId: BoxId,
    target: string = "running",
    options: AwaitOptions = {}
  ) {
    const timeout = options.timeout ?? Duration.seconds(60)
    let lastStatus = "unknown"
    const read = Effect.gen(function*() {
      const box = yield* retrieve(boxId, options)
      lastStatus = box.status
      if (options.onRead !== undefined) yield* options.onRead(box)
      if (box.status !== target && endStatuses.has(box.status)) {
        return yield* Effect.fail(new BoxFailedError({
          box_id: boxId,
          status: box.status,
          error_message: box.error_message,
          message: `box ${boxId} is ${box.status}${box.error_message ? `: ${box.error_message}` : ""}`
        }))
      }
      return box
    })
    return yield* pollUntil(read, {
      done: (box) => box.status === target,
      timeout,
      interval: options.interval,
      onTimeout: () =>
        new WaitTimeoutError({
          box_id: boxId,
          lastStatus,
          timeout,
          message: `box ${boxId} did not become ${target} within ${Duration.format(timeout)} (last status ${lastStatus})`
        })
    })
  })

/**
 * The Boxes service (`yield* Boxes`): `create` (idempotent), `retrieve`, `awaitStatus`, `upgrade` (idempotent),
 * `pause`, `resume`, `sleep`, `terminate`, and `scoped` (a box created and awaited `running` on acquire, terminated on
 * release). Each method fails with the errors its endpoint lists (`OperationErrors["boxes"]`); `awaitStatus` adds
 * `BoxFailedError` and `WaitTimeoutError`. Provided by `Boxkit.layer`; source: spec "Create a box", "States and
 * transitions", "POST {base_url}/boxes/{box_id}/upgrade".
 *
 * @since 0.1.0
 * @category Services
 */
export class Boxes extends Effect.Service<Boxes>()("boxkit/Boxes", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport

    const retrieve = Effect.fn("Boxes.retrieve")(function*(boxId: BoxId, options: BoxCallOptions = {}) {
      return yield* transport.operation("boxes", "retrieve", { path: { box_id: boxId } }, callOptions(options))
    })

    const create = Effect.fn("Boxes.create")(function*(request: Box.CreateBoxRequest, options: IdempotentCallOptions = {}) {
      const payload = yield* validate(Box.CreateBoxRequest, request)
      // Resolved once, so that every retry repeats it.
      const key = yield* IdempotencyKey.resolve(options.idempotencyKey)
      const answer = yield* idempotentAnswer(
        key,
        transport.operationWithResponse("boxes", "create", { payload, headers: { [IdempotencyKeyHeader]: key } }, callOptions(options))
      )
      yield* Effect.annotateCurrentSpan({ "boxkit.replayed": answer.replayed, "boxkit.status": answer.value.status })
      return answer
    })

    const awaitStatus = awaitStatusWith(retrieve)

    const upgrade = Effect.fn("Boxes.upgrade")(function*(boxId: BoxId, options: IdempotentCallOptions = {}) {
      const key = yield* IdempotencyKey.resolve(options.idempotencyKey)
      const answer = yield* idempotentAnswer(
        key,
        transport.operationWithResponse(
          "boxes",
          "upgrade",
          { path: { box_id: boxId }, headers: { [IdempotencyKeyHeader]: key } },
          callOptions(options)
        )
      )
      yield* Effect.annotateCurrentSpan({ "boxkit.replayed": answer.replayed, "boxkit.applied": answer.value.applied })
      return answer
    })

    const lifecycle = (operation: "pause" | "resume" | "sleep") =>
      Effect.fn(`Boxes.${operation}`)(function*(boxId: BoxId, options: BoxCallOptions = {}) {
        return yield* transport.operation("boxes", operation, { path: { box_id: boxId } }, callOptions(options))
      })

    const terminate = Effect.fn("Boxes.terminate")(function*(boxId: BoxId, options: BoxCallOptions = {}) {
      return yield* transport.operation("boxes", "terminate", { path: { box_id: boxId } }, callOptions(options))
    })

    return {
      /**
       * Creates a box. The request is checked against every field rule before any I/O; one idempotency key is used on
       * every attempt. Returns `{ value: { box_id, status }, idempotencyKey, replayed }`; poll with `awaitStatus`.
       */
      create,
      /** Reads a box record (status is an open set). */
      retrieve,
      /**
       * Polls a box until its status is `target` (default `running`), with exponential backoff from `interval`
       * (default 100 ms) up to 2 s. Fails with `BoxFailedError` (carrying `error_message`) when the box ends in
       * `failed` or another end status, and `WaitTimeoutError` (carrying the last status) after `timeout`
       * (default 60 s).
       */
      awaitStatus,
      /** Moves the box onto the current runtime; `applied` false means recorded for the next wake. Idempotent. */
      upgrade,
      /** Pauses a running box. */
      pause: lifecycle("pause"),
      /** Resumes a paused or sleeping box (a recorded upgrade applies now: a cold start). */
      resume: lifecycle("resume"),
      /** Puts a running box to sleep. */
      sleep: lifecycle("sleep"),
      /** Terminates a box. */
      terminate,
      /**
       * A box as a scoped resource: created and awaited `running` on acquire, terminated on release (errors of the
       * release are logged, not raised).
       */
      scoped: (request: Box.CreateBoxRequest, options: IdempotentCallOptions & AwaitOptions = {}) =>
        Effect.acquireRelease(
          Effect.flatMap(create(request, options), (created) => awaitStatus(created.value.box_id, "running", options)),
          (box) =>
            terminate(box.box_id, options).pipe(
              Effect.catchAll((error) => Effect.logWarning(`could not terminate box ${box.box_id}: ${error.message}`))
            )
        )
    }
  }),
  dependencies: [Transport.Default]
}) {}
