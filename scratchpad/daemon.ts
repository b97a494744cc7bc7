/**
 * The README's daemon (README "A daemon: a box for as long as the process runs"), against the sources: a box held
 * as a scoped resource for as long as the process runs, terminated on SIGINT or SIGTERM. With
 * `boxkit serve --port 8787` running and BOX_API_KEY=sk_acme_org BOX_BASE_URL=http://127.0.0.1:8787/v1 set,
 * `npx tsx scratchpad/daemon.ts`, then Ctrl-C once it logs "serving with box". Type-checked by `npm test`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Schedule } from "effect"
import { Apps, Boxes, Boxkit } from "../src/index.js"

const program = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("daemon", { mintIfMissing: true })
  const boxes = yield* Boxes
  // Running when this returns; terminated when the scope below closes (also on SIGINT and SIGTERM).
  const box = yield* boxes.scoped({ name: "daemon", app_id: app.id, image: { base: "debian" } })
  yield* Effect.log(`serving with box ${box.box_id}`)
  // The daemon's work: here, a look at the box every 30 seconds, until the process is stopped.
  yield* boxes.retrieve(box.box_id).pipe(
    Effect.tap((current) => Effect.log(`box ${current.box_id} is ${current.status}`)),
    Effect.repeat(Schedule.spaced("30 seconds"))
  )
}).pipe(Effect.scoped, Effect.provide(Boxkit.layerConfig()))

NodeRuntime.runMain(program)
