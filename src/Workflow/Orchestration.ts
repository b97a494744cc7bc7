/**
 * The orchestration of `boxkit orchestrate`, a template for your own: N durable workflows named by their index, each
 * creating box `orchestrate-<i>`, waiting until it runs, putting text on its clipboard, submitting a background
 * response with a completion webhook and awaiting it durably, and terminating the box. A restart with the same N on
 * the same database resumes the same N workflows (the execution id is a hash of the workflow name and the index);
 * nothing is started twice.
 *
 * Activities run one after the other inside a workflow (upstream bug Effect-TS/effect#6014); the N workflows run
 * `concurrency` at a time.
 *
 * Source: docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import * as ClusterSchema from "@effect/cluster/ClusterSchema"
import { EntityId } from "@effect/cluster/EntityId"
import type { ShardId } from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as Workflow from "@effect/workflow/Workflow"
import { Cause, Clock, Context, Duration, Effect, Fiber, Metric, Option, PubSub, Queue, Schedule, Schema } from "effect"
import { Apps } from "../Client/Apps.js"
import { Clipboard } from "../Client/Clipboard.js"
import { AppId } from "../Domain/Ids.js"
import * as BoxActivities from "./BoxActivities.js"
import { failureMessage, Ledger, recordingOutcome } from "./Ledger.js"
import * as Reaper from "./Reaper.js"
import * as ResponseActivities from "./ResponseActivities.js"

/**
 * The result of one box workflow: the box, and the awaited response's id and final status.
 *
 * @since 0.1.0
 * @category Models
 */
export const BoxJobResult = Schema.Struct({
  box_id: Schema.String,
  response_id: Schema.String,
  response_status: Schema.String
})

/**
 * One box workflow, by `index` within the database's `namespace` (Ledger `namespace`: so that two databases used
 * with one API key never send the same idempotency keys): its `app_id` and the `model` of its response travel in
 * the payload (fixed by the first run: a restart resumes the stored payload).
 *
 * @since 0.1.0
 * @category Workflows
 */
export const BoxJob = Workflow.make({
  name: "boxkit/orchestrate-box",
  payload: { namespace: Schema.String, index: Schema.Int, app_id: AppId, model: Schema.String },
  idempotencyKey: ({ index, namespace }) => `${namespace}/${index}`,
  // Its end is learnt from the ledger (recordingOutcome): the run is sent again only now and then, as a fallback.
  suspendedRetrySchedule: Schedule.exponential(Duration.seconds(5), 2).pipe(Schedule.union(Schedule.spaced(Duration.minutes(1)))),
  success: BoxJobResult,
  error: BoxActivities.ActivityError
})

/**
 * The name of the box of workflow `index` of `boxkit orchestrate`: `orchestrate-<index>`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const boxName = (index: number) => `orchestrate-${index}`

/**
 * The steps of {@link BoxJob}, registered with the engine (needs the client services, the ledger and, for webhooks,
 * `ResponseWebhook`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerBoxJob = BoxJob.toLayer(({ app_id, index, model }) =>
  recordingOutcome(Effect.gen(function*() {
    // Created, running and its clipboard written in one step: every step before the response's wait is replayed
    // after it (createBox `setUp`).
    const created = yield* BoxActivities.createBoxCompensated(
      { name: boxName(index), app_id, image: { base: "debian" } },
      {
        awaitRunning: true,
        setUp: (boxId) => Effect.flatMap(Clipboard, (clipboard) => clipboard.writeText(boxId, `orchestrated by boxkit: box ${index}`))
      }
    )
    const response = yield* ResponseActivities.submitAndAwait({
      model,
      input: `Summarize the clipboard of box ${boxName(index)}.`
    })
    yield* BoxActivities.terminate(created.box_id)
    return { box_id: created.box_id, response_id: response.id, response_status: response.status }
  }))
)

/**
 * Progress of a run: workflows `done` of `total`, `failed`, `resumed` (started by an earlier run and not finished at
 * this start), `replayed` (answers the service replayed for a key sent again), `reaped` (boxes the reaper terminated),
 * `ranHere` (workflows whose last step ran in this process: with several runners on one database, this runner's
 * share of the work; counted once per execution).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Progress {
  readonly total: number
  readonly done: number
  readonly failed: number
  readonly resumed: number
  readonly replayed: number
  readonly reaped: number
  readonly ranHere: number
}

/** One line of progress, as `boxkit orchestrate` prints it. @since 0.1.0 @category Utils */
export const formatProgress = (progress: Progress): string =>
  `orchestrate: done ${progress.done}/${progress.total}, failed ${progress.failed}, resumed ${progress.resumed}, ` +
  `replayed ${progress.replayed}, reaped ${progress.reaped}, ran here ${progress.ranHere}`

/**
 * Options of {@link run}.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RunOptions {
  /** How many box workflows (indexes 0 to boxes - 1). */
  readonly boxes: number
  /** Workflows this process runs at once (default 16); with several runners on one database, each runs this many. */
  readonly concurrency?: number | undefined
  /** The app of the boxes, found or minted (default `orchestrate`). */
  readonly appName?: string | undefined
  /** The model of the responses (default `boxkit-local`, the local service's model). */
  readonly model?: string | undefined
  /** Called about every `progressInterval` (default 1 s) and once at the end. */
  readonly onProgress?: ((progress: Progress) => Effect.Effect<void>) | undefined
  readonly progressInterval?: Duration.Duration | undefined
  /** How long a response may wait for its webhook before it is polled (default 5 s). */
  readonly pollGrace?: Duration.Duration | undefined
  /** How often the ends of workflows run by other runners are read from the ledger (default 500 ms). */
  readonly finishedPollInterval?: Duration.Duration | undefined
}

/**
 * Runs the N box workflows to the end (resuming those an earlier run started), with the response polling fallback
 * every second and one reaper pass at the end. Returns the final progress; workflows that failed are counted in
 * `failed` (their boxes compensated), not raised.
 *
 * How the N are driven: this process starts, `concurrency` at a time, the workflows whose shard it
 * holds (all of them on a single runner), and learns that one ended from its last step (the ledger's
 * `finishedHere`), at once, instead of sending its run again on the engine's schedule; the others are run by the
 * runners that hold their shards, and their ends are read from the ledger every `finishedPollInterval`. When a runner
 * dies, its shards, and so its workflows, come to the others.
 *
 * @since 0.1.0
 * @category Running
 */
export const run = (options: RunOptions) =>
  Effect.scoped(Effect.gen(function*() {
    const apps = yield* Apps
    const ledger = yield* Ledger
    const app = yield* apps.find(options.appName ?? "orchestrate", { mintIfMissing: true })
    const model = options.model ?? "boxkit-local"
    const indexes = Array.from({ length: options.boxes }, (_, index) => index)
    const payloads = indexes.map((index) => ({ namespace: ledger.namespace, index, app_id: app.id, model }))

    // Resumed: the workflows of an earlier run that own a box and have no final result yet.
    const owners = new Set((yield* ledger.boxes).map((box) => box.execution_id))
    let resumed = 0
    for (const payload of payloads) {
      const executionId = yield* BoxJob.executionId(payload)
      if (!owners.has(executionId)) continue
      const result = yield* BoxJob.poll(executionId)
      if (result === undefined || result._tag !== "Complete") resumed++
    }

    let done = 0
    let failed = 0
    let reaped = 0
    // The ends this process records, read when progress is reported: those of this run's executions make `ranHere`.
    const executionIds = new Set<string>()
    for (const payload of payloads) executionIds.add(yield* BoxJob.executionId(payload))
    const endedHere = new Set<string>()
    const finishedHere = yield* PubSub.subscribe(ledger.finishedHere)
    const replayedAtStart = (yield* Metric.value(BoxActivities.replayedAnswers)).count
    const progress = Effect.zipWith(
      Metric.value(BoxActivities.replayedAnswers),
      Queue.takeAll(finishedHere),
      (replayed, rows): Progress => {
        for (const row of rows) if (executionIds.has(row.execution_id)) endedHere.add(row.execution_id)
        return {
          total: options.boxes,
          done,
          failed,
          resumed,
          replayed: replayed.count - replayedAtStart,
          reaped,
          ranHere: endedHere.size
        }
      }
    )
    const report = (options.onProgress === undefined ? () => Effect.void : options.onProgress)
    const reporter = yield* Effect.fork(
      Effect.flatMap(progress, report).pipe(Effect.delay(options.progressInterval ?? Duration.seconds(1)), Effect.forever)
    )
    const poller = yield* Effect.fork(
      ResponseActivities.pollPending({ grace: options.pollGrace }).pipe(
        Effect.repeat(Schedule.spaced(Duration.seconds(1)))
      )
    )
    const started = yield* Clock.currentTimeMillis
    yield* drive(payloads, {
      concurrency: options.concurrency ?? 16,
      finishedPollInterval: options.finishedPollInterval,
      onEnd: (payload, outcome, message) =>
        outcome === "success"
          ? Effect.sync(() => done++)
          : Effect.zipRight(
            Effect.sync(() => failed++),
            Effect.logWarning(`workflow ${payload.index} failed: ${message ?? "no message"}`)
          )
    })
    yield* Fiber.interrupt(poller)
    reaped = (yield* Reaper.reap([BoxJob])).length
    yield* Fiber.interrupt(reporter)
    const final = yield* progress
    yield* report(final)
    return { ...final, millis: (yield* Clock.currentTimeMillis) - started }
  }))

/**
 * Runs the box workflows of `payloads` until every one has ended, as {@link run} describes; `onEnd` is called once per
 * workflow with how it ended (`message`: the error's, for a failure). The workflows this process starts are also
 * awaited through the engine (`BoxJob.execute`, on its slow schedule): the result of an execution that ended without
 * recording it (one run by an older version) is still seen.
 */
const drive = (
  payloads: ReadonlyArray<typeof BoxJob.payloadSchema.Type>,
  options: {
    readonly concurrency: number
    readonly finishedPollInterval?: Duration.Duration | undefined
    readonly onEnd: (
      payload: typeof BoxJob.payloadSchema.Type,
      outcome: "success" | "failure",
      message: string | null
    ) => Effect.Effect<void>
  }
) =>
  Effect.scoped(Effect.gen(function*() {
    const ledger = yield* Ledger
    const sharding = yield* Effect.serviceOption(Sharding.Sharding)
    const group = Context.get(BoxJob.annotations, ClusterSchema.ShardGroup)
    // Shard of each execution, computed once (a hash of its id); whether it is held here is asked each time.
    const shards = new Map<string, ShardId>()
    const isHere = (executionId: string) =>
      Option.match(sharding, {
        onNone: () => true,
        onSome: (sharding) => {
          let shard = shards.get(executionId)
          if (shard === undefined) {
            shard = sharding.getShardId(EntityId.make(executionId), group(executionId as EntityId))
            shards.set(executionId, shard)
          }
          return sharding.hasShardId(shard)
        }
      })
    const pollInterval = options.finishedPollInterval ?? Duration.millis(500)

    const pending = new Map<string, typeof BoxJob.payloadSchema.Type>()
    for (const payload of payloads) pending.set(yield* BoxJob.executionId(payload), payload)
    const running = new Map<string, Fiber.RuntimeFiber<void>>()
    const ended = yield* Queue.unbounded<{ readonly execution_id: string; readonly outcome: "success" | "failure"; readonly message: string | null }>()
    const end = (executionId: string, outcome: "success" | "failure", message: string | null) =>
      Effect.suspend(() => {
        const payload = pending.get(executionId)
        if (payload === undefined) return Effect.void
        pending.delete(executionId)
        const fiber = running.get(executionId)
        running.delete(executionId)
        return Effect.zipRight(
          options.onEnd(payload, outcome, message),
          fiber === undefined ? Effect.void : Fiber.interruptFork(fiber)
        )
      })

    // Ends recorded by this process, as they come; then those recorded before (here or by other runners).
    const here = yield* PubSub.subscribe(ledger.finishedHere)
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(here), (row) => Queue.offer(ended, row))))
    /** Whether a workflow not yet ended is on another runner's shard (never, on a single runner). */
    const someElsewhere = () => {
      for (const executionId of pending.keys()) if (!isHere(executionId)) return true
      return false
    }
    let lastRead = 0
    const readRecorded = Effect.flatMap(
      Effect.orDie(ledger.finished(BoxJob.name)),
      (rows) =>
        Effect.forEach(rows, (row) => end(row.execution_id, row.outcome, row.message), { discard: true }).pipe(
          Effect.zipRight(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => (lastRead = now))))
        )
    )
    yield* readRecorded

    while (pending.size > 0) {
      for (const [executionId, payload] of pending) {
        if (running.size >= options.concurrency) break
        if (running.has(executionId) || !isHere(executionId)) continue
        const fiber = yield* Effect.forkScoped(
          BoxJob.execute(payload).pipe(
            Effect.matchCauseEffect({
              onSuccess: () => Queue.offer(ended, { execution_id: executionId, outcome: "success", message: null }),
              // A defect of the engine ends the workflow's wait as a failure (it would otherwise wait forever);
              // the interruption of this wait (the workflow ended otherwise) is no end.
              onFailure: (cause) =>
                Cause.isInterruptedOnly(cause)
                  ? Effect.void
                  : Queue.offer(ended, { execution_id: executionId, outcome: "failure", message: failureMessage(cause) })
            }),
            Effect.asVoid
          )
        )
        running.set(executionId, fiber)
      }
      // Wait for an end here; and every `pollInterval`, read the ends recorded elsewhere (workflows of other
      // runners, and those started here whose shard moved away), and look again for shards that came here.
      const first = yield* Effect.timeout(Queue.take(ended), pollInterval).pipe(Effect.option)
      if (Option.isSome(first)) {
        yield* end(first.value.execution_id, first.value.outcome, first.value.message)
        for (const row of yield* Queue.takeAll(ended)) yield* end(row.execution_id, row.outcome, row.message)
      }
      if ((yield* Clock.currentTimeMillis) - lastRead >= Duration.toMillis(pollInterval) && someElsewhere()) {
        yield* readRecorded
      }
    }
  }))
