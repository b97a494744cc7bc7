/**
 * Testing your own code offline: start the local box service in-process on a free port and point the client at it.
 * `npx tsx scratchpad/embedded-service.ts`
 */
import { Effect, Layer, Schema } from "effect"
import { BoxkitConfig, Boxkit, LocalService, Secrets, Seed } from "../src/index.js"
import * as DemoSeed from "../src/Server/DemoSeed.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

const client = Layer.unwrapEffect(
  Effect.map(LocalService.baseUrl, (baseUrl) =>
    Boxkit.layer.pipe(Layer.provide(BoxkitConfig.BoxkitConfig.layer({ apiKey: "sk_acme_org", baseUrl }))))
)

Effect.gen(function*() {
  const secret = yield* (yield* Secrets.Secrets).retrieve("GITHUB_TOKEN")
  yield* Effect.log(`secret ${secret.name} of ${secret.org_id} (the value is never returned)`)
}).pipe(
  Effect.provide(client.pipe(Layer.provide(LocalService.layerNode(seed)))),
  Effect.runPromise
)
