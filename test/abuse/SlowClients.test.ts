/**
 * Slow clients as an attacker would send them (docs/ASSUMPTIONS.md "Request body limits (local service)"): request
 * bodies that never finish arriving. Past the service's request timeout their connection is closed and what they held
 * (a new organization's in-flight cap) is released; on SIGTERM `--drain-seconds` is a hard limit, and the connections
 * still open then are closed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as C from "../conformance/support/Conformance.js"
import * as Crash from "../durability/support/Crash.js"
import * as Harness from "../support/Harness.js"
import * as http from "node:http"

const seed = C.seedWith({
  organizations: [{ id: "org_new" }],
  api_keys: [{ key: "sk_new_org", org_id: "org_new" }]
})

describe.each(Harness.variants())("slow request bodies ($name)", (variant) => {
  it.effect("hold a new organization's in-flight cap only until the request timeout", () =>
    C.withServiceOn(variant, { newOrgInFlightCap: 2, requestTimeout: Duration.seconds(1) }, seed)(Effect.gen(function*() {
      const held = [
        yield* C.hold("/v1/apps/find", { name: "x" }, "sk_new_org"),
        yield* C.hold("/v1/apps/find", { name: "x" }, "sk_new_org")
      ]
      yield* C.awaitState((state) => state.in_flight === 2)
      const refused = yield* C.post("/v1/apps/find", { name: "x", mint_if_missing: true }, "sk_new_org")
      expect(refused.status).toBe(429)
      // The slow bodies never finish: the service closes them and the cap frees, without the clients' help.
      for (let attempt = 0; ; attempt++) {
        const answer = yield* C.post("/v1/apps/find", { name: "x", mint_if_missing: true }, "sk_new_org")
        if (answer.status === 200) break
        expect(answer.status).toBe(429)
        if (attempt > 400) return yield* Effect.dieMessage("the cap never freed")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      }
      for (const request of held) yield* request.abort
    })))
})

describe.each(Harness.variants())("boxkit serve --drain-seconds ($name)", (variant) => {
  it.live("is a hard limit: a slow body does not keep the process past it", () =>
    Effect.promise(async () => {
      const served = await Crash.serve(["--drain-seconds", "1", "--server", variant.server])
      const url = served.url
      // A create-box request whose body never finishes arriving.
      const slow = http.request({
        host: url.hostname,
        port: url.port,
        path: "/v1/boxes",
        method: "POST",
        headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "content-length": "100" }
      })
      slow.on("error", () => {})
      slow.flushHeaders()
      slow.write("{")
      await Crash.waitFor(async () => (await Crash.send(url, "/_local/state")).json.in_flight === 1, "the slow request in flight")
      served.child.kill("SIGTERM")
      // The process must be gone well before the request timeout (30 s) would have closed the slow body itself.
      const code = await Promise.race([
        served.exited,
        new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), 25_000).unref())
      ])
      expect(served.output()).toContain("drain time over (1 s): closing the connections still open")
      expect(code).toBe(0)
      slow.destroy()
      if (code === "still running") served.child.kill("SIGKILL")
    }), 60_000)
})
