// A strict consumer of boxkit/workflow on SQLite, installed without @effect/sql-pg (nor pg): its types must stand
// without the PostgreSQL packages (tsconfig.workflow-sqlite.json: skipLibCheck false).
import { Workflow } from "@effect/workflow"
import { Boxkit, Ids } from "boxkit"
import { BoxActivities, Ledger, ResponseActivities, Runner } from "boxkit/workflow"
import { Effect, Layer, Redacted, Schema } from "effect"

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
