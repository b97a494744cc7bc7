/**
 * The README's example, runnable: `npx tsx scratchpad/quickstart.ts` against `boxkit serve` on port 8787
 * (BOX_API_KEY=sk_acme_org). Type-checked by `npm test`, so it does not rot.
 */
import { Effect, Layer } from "effect"
import { Apps, Boxes, BoxkitConfig, Boxkit, Responses } from "../src/index.js"

const program = Effect.gen(function*() {
  const app = yield* (yield* Apps.Apps).find("quickstart", { mintIfMissing: true })
  const boxes = yield* Boxes.Boxes
  const created = yield* boxes.create({ name: "quickstart", app_id: app.id, image: { base: "debian" } })
  const box = yield* boxes.awaitStatus(created.value.box_id)
  yield* Effect.log(`box ${box.box_id} is ${box.status}`)
  const answer = yield* (yield* Responses.Responses).create({ model: "boxkit-local", input: "Hello!" })
  yield* Effect.log(answer.value.status)
  yield* boxes.terminate(box.box_id)
})

const config = BoxkitConfig.BoxkitConfig.layer({ apiKey: process.env.BOX_API_KEY ?? "sk_acme_org" })

program.pipe(Effect.provide(Boxkit.layer.pipe(Layer.provide(config))), Effect.runPromise)
