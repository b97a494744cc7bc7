/**
 * `boxkit/workflow` in one process (docs/decisions/0004-durable-orchestration.md), over the embedded local service and
 * a single runner on SQLite in a temporary directory: the create activity sends a key derived from the execution and
 * records the box in the ledger; a workflow that fails after creating a box terminates it (compensation); the reaper
 * terminates the box of a workflow that ended without terminating it, and leaves the others alone; a create that waits
 * until the box runs terminates a box that fails to start; the ledger keeps the first webhook URL of a submit.
 */
import * as Workflow from "@effect/workflow/Workflow"
import { Cron, Effect, Layer, PubSub, Queue, Schedule, Schema } from "effect"
import { afterAll, expect } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { Clipboard } from "../../src/Client/Clipboard.js"
import { AppId } from "../../src/Domain/Ids.js"
import * as BoxkitTesting from "../../src/testing.js"
import { BoxActivities, Ledger, Reaper, Runner } from "../../src/workflow.js"
import { layer } from "../support/SuiteLayer.js"

const directory = mkdtempSync(join(tmpdir(), "boxkit-workflow-"))

const payload = { app_id: AppId, name: Schema.String, fail: Schema.Boolean }

/** Creates a box (compensated), then fails when asked. */
const FailsAfterCreate = Workflow.make({
  name: "test/fails-after-create",
  payload,
  idempotencyKey: ({ name }) => name,
  success: Schema.String,
  error: BoxActivities.ActivityError
})

/** Creates a box and ends without terminating it (an orphan for the reaper). */
const LeavesBox = Workflow.make({
  name: "test/leaves-box",
  payload,
  idempotencyKey: ({ name }) => name,
  success: Schema.String,
  error: BoxActivities.ActivityError
})

/** Creates a box and waits until it runs, in one activity. */
const CreatesRunning = Workflow.make({
  name: "test/creates-running",
  payload: { app_id: AppId, name: Schema.String, base: Schema.String, failSetUp: Schema.Boolean },
  idempotencyKey: ({ name }) => name,
  success: Schema.String,
  error: BoxActivities.ActivityError
})

/** Creates a box and ends without terminating it (an orphan for the reaper's cron job). */
const LeavesBoxForCron = Workflow.make({
  name: "test/leaves-box-for-cron",
  payload,
  idempotencyKey: ({ name }) => name,
  success: Schema.String,
  error: BoxActivities.ActivityError
})

/** Records its end in the ledger; fails when asked. */
const RecordsEnd = Workflow.make({
  name: "test/records-end",
  payload: { name: Schema.String, fail: Schema.Boolean },
  idempotencyKey: ({ name }) => name,
  success: Schema.String,
  error: BoxActivities.ActivityError
})

const workflows = Layer.mergeAll(
  RecordsEnd.toLayer(({ fail, name }) =>
    Ledger.recordingOutcome(
      fail
        ? Effect.fail(new BoxActivities.ActivityError({ operation: "test", type: "TestError", message: `${name} failed` }))
        : Effect.succeed(name)
    )
  ),
  CreatesRunning.toLayer(({ app_id, base, failSetUp, name }) =>
    Effect.map(
      BoxActivities.createBoxCompensated({ name, app_id, image: { base } }, {
        awaitRunning: true,
        setUp: (boxId) =>
          failSetUp
            ? Effect.fail({ _tag: "SetUpError", message: `could not set up ${boxId}` })
            : Effect.flatMap(Clipboard, (clipboard) => clipboard.writeText(boxId, "set up"))
      }),
      (created) => `${created.box_id} ${created.status}`
    )
  ),
  FailsAfterCreate.toLayer(({ app_id, fail, name }) =>
    Effect.gen(function*() {
      const created = yield* BoxActivities.createBoxCompensated({ name, app_id, image: { base: "debian" } })
      yield* BoxActivities.awaitStatus(created.box_id)
      if (fail) {
        return yield* new BoxActivities.ActivityError({ operation: "test", type: "TestError", message: "failed on purpose" })
      }
      return created.box_id
    })
  ),
  LeavesBox.toLayer(({ app_id, name }) =>
    Effect.map(BoxActivities.createBox({ name, app_id, image: { base: "debian" } }), (created) => created.box_id)
  ),
  LeavesBoxForCron.toLayer(({ app_id, name }) =>
    Effect.map(BoxActivities.createBox({ name, app_id, image: { base: "debian" } }), (created) => created.box_id)
  ),
  // Every second; it reaps only the orphans of its own workflow, so that the other tests' boxes are theirs to judge.
  Reaper.layerCron([LeavesBoxForCron], Cron.unsafeParse("* * * * * *"))
)

const services = workflows.pipe(
  Layer.provideMerge(Runner.layerSqlite(directory)),
  Layer.provideMerge(BoxkitTesting.layer())
)
afterAll(() => rmSync(directory, { recursive: true, force: true }))

layer(services, { excludeTestServices: true, timeout: 60_000 })("boxkit/workflow", (it) => {
  const appId = Effect.map(Effect.flatMap(Apps, (apps) => apps.find("workflow-test", { mintIfMissing: true })), (app) => app.id)

  it.effect("a workflow that fails after creating a box terminates it (compensation); the ledger records it", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const ledger = yield* Ledger.Ledger
      const app_id = yield* appId
      const failed = yield* Effect.flip(FailsAfterCreate.execute({ app_id, name: "compensated-0", fail: true }))
      expect(failed.message).toBe("failed on purpose")
      const owned = (yield* ledger.boxes).filter((box) => box.workflow_name === FailsAfterCreate.name)
      expect(owned).toHaveLength(1)
      expect(owned[0].execution_id).toBe(yield* FailsAfterCreate.executionId({ app_id, name: "compensated-0", fail: true }))
      expect(owned[0].terminated_at).not.toBeNull()
      expect((yield* boxes.retrieve(owned[0].box_id as never)).status).toBe("terminated")
      // A workflow that succeeds keeps its box.
      const kept = yield* FailsAfterCreate.execute({ app_id, name: "kept-0", fail: false })
      expect((yield* boxes.retrieve(kept as never)).status).toBe("running")
    }))

  it.effect("a create that waits until the box runs succeeds running; a box that fails to start or to be set up is terminated and the activity fails", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const ledger = yield* Ledger.Ledger
      const app_id = yield* appId
      const [boxId, status] = (yield* CreatesRunning.execute({ app_id, name: "runs-0", base: "debian", failSetUp: false }))
        .split(" ")
      expect(status).toBe("running")
      expect((yield* boxes.retrieve(boxId as never)).status).toBe("running")
      const error = yield* Effect.flip(
        CreatesRunning.execute({ app_id, name: "fails-0", base: "boxkit/fail-to-start", failSetUp: false })
      )
      expect(error.type).toBe("BoxFailedError")
      expect(error.operation).toBe("boxkit/create-box-running")
      const setUpError = yield* Effect.flip(CreatesRunning.execute({ app_id, name: "set-up-fails-0", base: "debian", failSetUp: true }))
      expect(setUpError.type).toBe("SetUpError")
      const others = (yield* ledger.boxes).filter((box) => box.workflow_name === "test/creates-running" && box.box_id !== boxId)
      expect(others).toHaveLength(2)
      for (const box of others) {
        expect(box.terminated_at).not.toBeNull()
        expect((yield* boxes.retrieve(box.box_id as never)).status).toBe("terminated")
      }
    }))

  it.effect("a workflow's end is recorded in the ledger and told to this process at once; a second run records nothing new", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger.Ledger
      const told = yield* PubSub.subscribe(ledger.finishedHere)
      expect(yield* RecordsEnd.execute({ name: "ends-well", fail: false })).toBe("ends-well")
      yield* Effect.flip(RecordsEnd.execute({ name: "ends-badly", fail: true }))
      expect(yield* RecordsEnd.execute({ name: "ends-well", fail: false })).toBe("ends-well")
      const rows = yield* ledger.finished("test/records-end")
      expect(rows.map((row) => [row.execution_id, row.outcome, row.message]).sort()).toEqual([
        [yield* RecordsEnd.executionId({ name: "ends-badly", fail: true }), "failure", "ends-badly failed"],
        [yield* RecordsEnd.executionId({ name: "ends-well", fail: false }), "success", null]
      ].sort())
      const heard = yield* Queue.takeAll(told)
      expect([...heard].map((row) => row.outcome).sort()).toEqual(["failure", "success"])
    }).pipe(Effect.scoped))

  it.effect("the ledger keeps the first webhook URL of a submit: a submit run again sends the same body", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger.Ledger
      const owner = { workflowName: "test/webhook-url", executionId: "execution-1" }
      expect(yield* ledger.webhookUrl(owner, "boxkit/response/submit", "http://127.0.0.1:1111/webhooks")).toBe(
        "http://127.0.0.1:1111/webhooks"
      )
      expect(yield* ledger.webhookUrl(owner, "boxkit/response/submit", "http://127.0.0.1:2222/webhooks")).toBe(
        "http://127.0.0.1:1111/webhooks"
      )
      expect(yield* ledger.webhookUrl(owner, "second/submit", null)).toBeNull()
      expect(yield* ledger.webhookUrl(owner, "second/submit", "http://127.0.0.1:3333/webhooks")).toBeNull()
      expect(yield* ledger.webhookUrl({ ...owner, executionId: "execution-2" }, "boxkit/response/submit", null)).toBeNull()
    }))

  it.effect("the reaper's cron job terminates the box of a workflow that ended, without being asked", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const app_id = yield* appId
      const orphan = yield* LeavesBoxForCron.execute({ app_id, name: "cron-orphan-0", fail: false })
      // Waits for the condition (the job runs every second, its messages read every second), at most 30 s.
      yield* boxes.retrieve(orphan as never).pipe(
        Effect.repeat({ until: (box) => box.status === "terminated", schedule: Schedule.spaced("200 millis") }),
        Effect.timeout("30 seconds")
      )
      expect((yield* boxes.retrieve(orphan as never)).status).toBe("terminated")
    }))

  it.effect("the reaper terminates the box of a workflow that ended, and replays return the first box", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const app_id = yield* appId
      const first = yield* LeavesBox.execute({ app_id, name: "orphan-0", fail: false })
      // The same execution again: its stored result, no second box.
      expect(yield* LeavesBox.execute({ app_id, name: "orphan-0", fail: false })).toBe(first)
      expect((yield* boxes.retrieve(first as never)).status).not.toBe("terminated")
      const reaped = yield* Reaper.reap([LeavesBox])
      expect(reaped).toEqual([first])
      expect((yield* boxes.retrieve(first as never)).status).toBe("terminated")
      // A workflow the reaper is not told about keeps its box (kept-0 of the other test may run or not: not judged).
      expect(yield* Reaper.reap([LeavesBox])).toEqual([])
    }))
})
