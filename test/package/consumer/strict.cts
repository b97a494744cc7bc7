// A strict NodeNext CommonJS consumer.
import { Effect } from "effect"
import { Boxkit, Secrets } from "boxkit"
import BoxkitTesting = require("boxkit/testing")

export const program = Effect.gen(function*() {
  const secret = yield* (yield* Secrets).retrieve("GITHUB_TOKEN")
  return secret.name
})
export const run = program.pipe(Effect.provide(BoxkitTesting.layer()))
export const client = Boxkit.layerConfig()
