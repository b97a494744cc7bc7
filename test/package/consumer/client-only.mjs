// A program that only uses the client: bundled with esbuild, nothing of the local service may be inside.
import { Effect } from "effect"
import { Apps, Boxkit } from "boxkit"

const program = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("client-only", { mintIfMissing: true })
  return app.id
})

program.pipe(Effect.provide(Boxkit.layerConfig()), Effect.runPromise).then(console.log)
