// The README's quickstart as an installed user runs it: plain Node ESM against the package, with the local service
// embedded by boxkit/testing (the README's version reads BOX_API_KEY and BOX_BASE_URL instead).
import { Effect } from "effect"
import { Apps, Boxes, Responses } from "boxkit"
import * as BoxkitTesting from "boxkit/testing"

const program = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("quickstart", { mintIfMissing: true })
  const boxes = yield* Boxes
  const created = yield* boxes.create({ name: "quickstart", app_id: app.id, image: { base: "debian" } })
  const box = yield* boxes.awaitStatus(created.value.box_id)
  const answer = yield* (yield* Responses).create({ model: "boxkit-local", input: "Hello!" })
  yield* boxes.terminate(box.box_id)
  return `esm: box ${box.status}, response ${answer.value.status}`
})

console.log(await program.pipe(Effect.provide(BoxkitTesting.layer()), Effect.runPromise))
