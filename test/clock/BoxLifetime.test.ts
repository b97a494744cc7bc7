/**
 * A box ends at its `max_lifetime_seconds` (spec "Create a box", "States and transitions"), reached through the
 * virtual clock (docs/ASSUMPTIONS.md "The virtual clock"): a minute before its lifetime it runs (its boot, a minute
 * after its creation, is due inside the advance and ran first), at its lifetime it is terminated when the advance
 * answers; a box without a lifetime runs on. On both serving paths and every store; no test waits in real time.
 */
import { expect } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as SuiteLayer from "../support/SuiteLayer.js"
import * as Clocked from "./Clocked.js"

for (const server of Clocked.servers) {
  for (const store of Clocked.stores) {
    // A boot of a minute: the box boots only when an advance reaches its boot, never on its own during the test.
    const service = Clocked.service(server, store, { bootDelay: Duration.minutes(1) })
    SuiteLayer.layer(service, { excludeTestServices: true, timeout: "60 seconds" })(
      `box lifetimes through the clock (${server}, ${store})`,
      (it) => {
        it.effect("a box is terminated when the clock reaches its lifetime, not a minute before", () =>
          Effect.gen(function*() {
            const ending = yield* Clocked.createBox("ending", 3600)
            const lasting = yield* Clocked.createBox("lasting", null)
            expect(yield* Clocked.boxStatus(ending)).toBe("creating")
            yield* Clocked.advance(3540)
            expect(yield* Clocked.boxStatus(ending)).toBe("running")
            yield* Clocked.advance(60)
            expect(yield* Clocked.boxStatus(ending)).toBe("terminated")
            expect(yield* Clocked.boxStatus(lasting)).toBe("running")
          }))
      }
    )
  }
}
