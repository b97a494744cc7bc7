/**
 * Every operation of the client takes `retry` for one call and honours it: none takes the option and ignores it.
 * Against a service that answers every `/v1` request 503 (no Retry-After), each operation called with
 * `{ retry: { maxAttempts: 1 } }` sends exactly one request, and with three attempts three.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Redacted } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { Clipboard } from "../../src/Client/Clipboard.js"
import { EgressPolicies } from "../../src/Client/EgressPolicies.js"
import { Exec } from "../../src/Client/Exec.js"
import { Listeners } from "../../src/Client/Listeners.js"
import { Responses } from "../../src/Client/Responses.js"
import { Secrets } from "../../src/Client/Secrets.js"
import { AppId, BoxId, EgressPolicyId } from "../../src/Domain/Ids.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as BoxkitTesting from "../../src/testing.js"

const box = BoxId.make("sb_00000000-0000-4000-8000-000000000009")
const app = AppId.make("app_00000000-0000-4000-8000-000000000001")
const policy = EgressPolicyId.make("ep_00000000-0000-4000-8000-000000000001")
const once = { retry: { maxAttempts: 1 } }

/** Requests the service has seen on `/v1`. */
const requestsSeen = Effect.flatMap(BoxkitTesting.TestService, (service) =>
  Effect.map(service.state, (state) => (state as { readonly faults: { readonly requests: number } }).faults.requests))

/** The number of requests `operation` sends before it fails. */
const requestsOf = <A, E, R>(operation: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = yield* requestsSeen
    yield* Effect.flip(operation)
    return (yield* requestsSeen) - before
  })

const every503 = BoxkitTesting.layer({
  settings: { faults: FaultInjection.settings({ rates: { "503-no-retry-after": 1 } }) }
})

describe("per-call retry", () => {
  it.live("every operation sends one request with maxAttempts 1", () =>
    Effect.gen(function*() {
      const apps = yield* Apps
      const boxes = yield* Boxes
      const clipboard = yield* Clipboard
      const policies = yield* EgressPolicies
      const exec = yield* Exec
      const listeners = yield* Listeners
      const responses = yield* Responses
      const secrets = yield* Secrets
      const operations: Record<string, Effect.Effect<unknown, unknown>> = {
        "Apps.find": apps.find("a", once),
        "Boxes.create": boxes.create({ name: "b", app_id: app, image: { base: "debian" } }, once),
        "Boxes.retrieve": boxes.retrieve(box, once),
        "Boxes.upgrade": boxes.upgrade(box, once),
        "Boxes.terminate": boxes.terminate(box, once),
        "Clipboard.write": clipboard.writeText(box, "text", once),
        "EgressPolicies.create": policies.create("p", {}, once),
        "EgressPolicies.retrieve": policies.retrieve(policy, once),
        "EgressPolicies.rename": policies.rename(policy, "q", once),
        "Exec.resize": exec.resize(box, "exec-1", { cols: 80, rows: 24 }, once),
        "Listeners.publish": listeners.publish(box, 8080, "http", once),
        "Listeners.addDomain": listeners.addDomain(box, 8080, "example.com", once),
        "Listeners.unpublish": listeners.unpublish(box, 8080, once),
        "Responses.create": responses.create({ model: "boxkit-local", input: "x" }, once),
        "Responses.retrieve": responses.retrieve("resp_0", once),
        "Secrets.create": secrets.create("S", Redacted.make("v"), once),
        "Secrets.retrieve": secrets.retrieve("S", once)
      }
      const sent: Record<string, number> = {}
      for (const [name, operation] of Object.entries(operations)) sent[name] = yield* requestsOf(operation)
      expect(sent).toEqual(Object.fromEntries(Object.keys(operations).map((name) => [name, 1])))
      // And the option is what decides: three attempts, three requests.
      const thrice = { retry: { maxAttempts: 3, backoffBase: Duration.millis(1) } }
      expect(yield* requestsOf(exec.resize(box, "exec-1", { cols: 80, rows: 24 }, thrice))).toBe(3)
      expect(yield* requestsOf(clipboard.writeText(box, "text", thrice))).toBe(3)
    }).pipe(Effect.provide(every503)))
})
