/**
 * The README's quickstart (README "Quickstart"), against the sources: `npx tsx scratchpad/quickstart.ts` with
 * `boxkit serve --port 8787` running and BOX_API_KEY=sk_acme_org BOX_BASE_URL=http://127.0.0.1:8787/v1 set. Logs the
 * box's status ("is running") and the model response's status. Type-checked by `npm test`, so that an API change
 * that breaks the README's program fails here first; the package test runs the README's own block from the installed
 * package.
 */
import { Effect } from "effect"
import { Apps, Boxes, Boxkit, Responses } from "../src/index.js"

const program = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("quickstart", { mintIfMissing: true })
  const boxes = yield* Boxes
  const created = yield* boxes.create({ name: "quickstart", app_id: app.id, image: { base: "debian" } })
  const box = yield* boxes.awaitStatus(created.value.box_id) // BoxFailedError or WaitTimeoutError if it never runs
  yield* Effect.log(`box ${box.box_id} is ${box.status}`)
  const answer = yield* (yield* Responses).create({ model: "boxkit-local", input: "Hello!" })
  yield* Effect.log(answer.value.status)
  yield* boxes.terminate(box.box_id)
}).pipe(
  Effect.catchTag("RateLimitError", (error) => Effect.logWarning(`slow down: ${error.message}`))
)

program.pipe(Effect.provide(Boxkit.layerConfig()), Effect.runPromise)
