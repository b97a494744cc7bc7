// A strict consumer of boxkit/workflow on SQLite, installed without @effect/sql-pg (nor pg): its types must stand
// without the PostgreSQL packages (Consumer.test.ts type-checks it with skipLibCheck false before the README installs them).
import { Workflow } from "@effect/workflow"
import { Apps, Boxes, Boxkit, type CallError, Ids, Responses } from "boxkit"
import { BoxActivities, Ledger, ResponseActivities, Runner } from "boxkit/workflow"
import { Duration, Effect, Layer, Redacted, Schema } from "effect"

const Job = Workflow.make({
  name: "strict-job",
  payload: { index: Schema.Int },
  success: Schema.String,
  idempotencyKey: ({ index }) => String(index)
})

export const JobLayer = Job.toLayer(({ index }) =>
  Effect.gen(function*() {
    const box = yield* BoxActivities.createBoxCompensated({
      name: `job-${index}`,
      app_id: Ids.AppId.make("app_00000000-0000-7000-8000-000000000000"),
      image: { base: "debian" }
    })
    yield* BoxActivities.awaitStatus(box.box_id)
    const answer = yield* ResponseActivities.submitAndAwait({ model: "boxkit-local", input: "Hello" })
    yield* BoxActivities.terminate(box.box_id)
    return answer.status
  }).pipe(Effect.orDie))

export const runner = Runner.layerSqlite("./data")
export const program = JobLayer.pipe(
  Layer.provideMerge(runner),
  Layer.provide(Boxkit.layer({ apiKey: Redacted.make("sk_acme_org"), baseUrl: "http://127.0.0.1:8787/v1" }))
)
export const ledger = Ledger.Ledger

// Optional options accept `undefined` under exactOptionalPropertyTypes; app ids are branded.
declare const maybeKey: string | undefined
declare const maybeTimeout: Duration.Duration | undefined
export const options = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("strict", { mintIfMissing: undefined, retry: undefined })
  const boxes = yield* Boxes
  const created = yield* boxes.create({ name: "strict", app_id: app.id, image: { base: "debian" } }, {
    idempotencyKey: maybeKey,
    ownerOverrideReason: undefined
  })
  yield* boxes.awaitStatus(created.value.box_id, "running", { timeout: maybeTimeout, interval: undefined, onRead: undefined })
  const answer = yield* (yield* Responses).submit({ model: "boxkit-local", input: "Hello" }, { idempotencyKey: maybeKey })
  yield* (yield* Responses).awaitCompletion(answer.value.id, { timeout: maybeTimeout })
  // @ts-expect-error a plain string is not an AppId: take it from Apps.find or check it with Ids.AppId.make
  yield* boxes.create({ name: "strict", app_id: "app_00000000-0000-7000-8000-000000000000", image: { base: "debian" } })
})
export const readError: Effect.Effect<unknown, CallError, Boxes> = Effect.flatMap(Boxes, (boxes) =>
  boxes.retrieve(Ids.BoxId.make("sb_00000000-0000-7000-8000-000000000000")))
