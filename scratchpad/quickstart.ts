/**
 * The README's quickstart, runnable: `npx tsx scratchpad/quickstart.ts` against `boxkit serve` on port 8787
 * (BOX_API_KEY=sk_acme_org BOX_BASE_URL=http://127.0.0.1:8787/v1). Type-checked by `npm test`, so it does not rot;
 * the consumer test (test/package) runs the same program from the installed package.
 */
import { Effect } from "effect"
import { Apps, Boxes, Boxkit, Responses } from "../src/index.js"

const program = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("quickstart", { mintIfMissing: true })
  const boxes = yield* Boxes
  const created = yield* boxes.create({ name: "quickstart", app_id: app.id, image: { base: "debian" } })
  const box = yield* boxes.awaitStatus(created.value.box_id)
  yield* Effect.log(`box ${box.box_id} is ${box.status}`)
  const answer = yield* (yield* Responses).create({ model: "boxkit-local", input: "Hello!" })
  yield* Effect.log(answer.value.status)
  yield* boxes.terminate(box.box_id)
})

program.pipe(Effect.provide(Boxkit.layerConfig()), Effect.runPromise)
