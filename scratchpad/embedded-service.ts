/**
 * Testing your own code offline: the local box service in-process on a free port and the client pointed at it, as
 * one layer (`boxkit/testing`). `npx tsx scratchpad/embedded-service.ts`
 */
import { Effect } from "effect"
import { Secrets } from "../src/index.js"
import * as BoxkitTesting from "../src/testing.js"

Effect.gen(function*() {
  const secret = yield* (yield* Secrets).retrieve("GITHUB_TOKEN")
  yield* Effect.log(`secret ${secret.name} of ${secret.org_id} (the value is never returned)`)
}).pipe(Effect.provide(BoxkitTesting.layer()), Effect.runPromise)
