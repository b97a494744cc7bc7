/**
 * Boxes in the local runtime (spec: States and transitions; Create a box; upgrade; DELETE listeners rules 1-3;
 * PUT clipboard; exec resize): status flow, failing starts, lifetimes (TestClock), the upgrade table, listeners,
 * clipboard and resize.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

const otherApp = "app_00000000-0000-4000-8000-0000000000bb"
const twoOrganizations = C.seedWith({
  organizations: [{ id: "org_other", created_at: "2026-01-01T00:00:00Z" }],
  api_keys: [{ key: "sk_other_org", org_id: "org_other" }],
  apps: [{ id: otherApp, org_id: "org_other", name: "other" }]
})

const offlinePolicyId = "ep_00000000-0000-4000-8000-0000000000ff"
const offlinePolicy = C.seedWith({
  egress_policies: [{ id: offlinePolicyId, org_id: "org_acme", name: "offline", document: { no_network: true } }]
})

const raiseRuntime = (version: number) =>
  C.request("/_local/runtime", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ guest_schema_version: version })
  })

const act = (boxId: string, operation: string, key = "sk_acme_org") => C.post(`/v1/boxes/${boxId}/${operation}`, undefined, key)

const writeClipboard = (boxId: string, body: string | Uint8Array, contentType = "text/plain") =>
  C.request(`/v1/boxes/${boxId}/clipboard`, {
    method: "PUT",
    headers: { authorization: "Bearer sk_acme_org", "content-type": contentType },
    body
  })

const publish = (boxId: string, guestPort: number, protocol?: "http" | "tcp", key = "sk_acme_org") =>
  C.post(`/v1/boxes/${boxId}/listeners`, { guest_port: guestPort, ...(protocol ? { protocol } : {}) }, key)

const unpublish = (boxId: string, guestPort: number, key = "sk_acme_org") =>
  C.request(`/v1/boxes/${boxId}/listeners/${guestPort}`, { method: "DELETE", headers: C.auth(key) })

/** Upgrades a box; the restart of a running box takes the boot delay, so the TestClock is advanced until it answers. */
const upgrade = (boxId: string) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(act(boxId, "upgrade"))
    for (let i = 0; i < 100; i++) {
      yield* TestClock.adjust("50 millis")
      const done = yield* Fiber.poll(fiber)
      if (done._tag === "Some") return yield* Fiber.join(fiber)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
    }
    return yield* Effect.dieMessage("upgrade did not answer")
  })

describe.each(Harness.variants({ sqlite: true }))("status flow ($name)", (variant) => {
  it.effect("a new box answers creating with only box_id and status, then becomes running", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const created = yield* C.post("/v1/boxes", C.boxBody())
      expect(created.status).toBe(201)
      expect(Object.keys(created.json).sort()).toEqual(["box_id", "status"])
      expect(created.json.box_id).toMatch(/^sb_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(created.json.status).toBe("creating")
      expect((yield* C.get(`/v1/boxes/${created.json.box_id}`)).json.status).toBe("creating")
      yield* TestClock.adjust("150 millis")
      const box = (yield* C.get(`/v1/boxes/${created.json.box_id}`)).json
      expect(box).toMatchObject({ status: "running", guest_schema_version: 1 })
      expect(box.error_message).toBeUndefined()
    })))

  it.effect("a box whose start fails ends failed with error_message", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ image: { base: "boxkit/fail-to-start" } })
      const box = (yield* C.get(`/v1/boxes/${boxId}`)).json
      expect(box.status).toBe("failed")
      expect(box.error_message).toMatch(/failed to boot/)
    })))

  it.effect("pause, resume, sleep and terminate move a box between states; wrong states answer 409", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      expect((yield* act(boxId, "pause")).json.status).toBe("paused")
      C.expectError(yield* act(boxId, "sleep"), 409, "conflict_error", { code: "failed_precondition" })
      expect((yield* act(boxId, "resume")).json.status).toBe("running")
      expect((yield* act(boxId, "sleep")).json.status).toBe("sleeping")
      expect((yield* act(boxId, "resume")).json.status).toBe("running")
      expect((yield* act(boxId, "terminate")).json.status).toBe("terminated")
      C.expectError(yield* act(boxId, "resume"), 409, "conflict_error")
      C.expectError(yield* act(C.unknownBoxId, "pause"), 404, "not_found_error")
    })))
})

describe.each(Harness.variants({ sqlite: true }))("max_lifetime_seconds ($name)", (variant) => {
  it.effect("counts every state (running, paused, sleeping) and ends in terminated", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const [running, paused, sleeping] = yield* Effect.all([
        C.createBox({ max_lifetime_seconds: 5 }),
        C.createBox({ max_lifetime_seconds: 5 }),
        C.createBox({ max_lifetime_seconds: 5 })
      ])
      const [unlimited, forever] = yield* Effect.all([C.createBox({ max_lifetime_seconds: null }), C.createBox()])
      yield* TestClock.adjust("200 millis")
      yield* act(paused, "pause")
      yield* act(sleeping, "sleep")
      yield* TestClock.adjust("4 seconds")
      for (const boxId of [running, paused, sleeping]) expect((yield* C.boxState(boxId)).status).not.toBe("terminated")
      yield* TestClock.adjust("1 second")
      for (const boxId of [running, paused, sleeping]) expect((yield* C.boxState(boxId)).status).toBe("terminated")
      yield* TestClock.adjust("30 seconds")
      for (const boxId of [unlimited, forever]) expect((yield* C.boxState(boxId)).status).toBe("running")
    })))

  it.effect("counts the time a box waits to start (creating)", () =>
    C.withServiceOn(variant, { bootDelay: Duration.minutes(1) })(Effect.gen(function*() {
      const boxId = yield* C.createBox({ max_lifetime_seconds: 5 })
      yield* TestClock.adjust("5 seconds")
      expect((yield* C.boxState(boxId)).status).toBe("terminated")
      yield* TestClock.adjust("1 minute")
      expect((yield* C.boxState(boxId)).status).toBe("terminated")
    })))

  it.effect("expiry is checked periodically (configurable): termination can come after the deadline", () =>
    C.withServiceOn(variant, { expiryCheckInterval: Duration.seconds(10) })(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ max_lifetime_seconds: 1 })
      yield* act(boxId, "pause")
      yield* TestClock.adjust("9 seconds")
      expect((yield* C.boxState(boxId)).status).toBe("paused")
      yield* TestClock.adjust("1 second")
      expect((yield* C.boxState(boxId)).status).toBe("terminated")
    })))
})

describe.each(Harness.variants({ sqlite: true }))("upgrade (States table) ($name)", (variant) => {
  it.effect("running, not on the current runtime: restarts onto it, applied true with the version", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      expect((yield* writeClipboard(boxId, "in memory")).status).toBe(200)
      expect((yield* raiseRuntime(2)).status).toBe(200)
      const result = yield* upgrade(boxId)
      expect(result.status).toBe(200)
      expect(result.json).toEqual({ box_id: boxId, status: "running", applied: true, guest_schema_version: 2 })
      const after = yield* C.boxState(boxId)
      expect(after).toMatchObject({ guest_schema_version: 2, boot_count: 2, clipboard: null, pending_upgrade: false })
    })))

  for (const state of ["paused", "sleeping"] as const) {
    it.effect(`${state}, not current: unchanged, recorded (applied false, no version), applied on the next wake as a cold start`, () =>
      C.withServiceOn(variant)(Effect.gen(function*() {
        const boxId = yield* C.runningBox()
        expect((yield* writeClipboard(boxId, "in memory")).status).toBe(200)
        yield* act(boxId, state === "paused" ? "pause" : "sleep")
        expect((yield* raiseRuntime(2)).status).toBe(200)
        const result = yield* act(boxId, "upgrade")
        expect(result.json).toEqual({ box_id: boxId, status: state, applied: false })
        expect(yield* C.boxState(boxId)).toMatchObject({
          status: state,
          guest_schema_version: 1,
          pending_upgrade: true,
          boot_count: 1
        })
        expect((yield* C.boxState(boxId)).clipboard).not.toBeNull()
        const woken = yield* act(boxId, "resume")
        expect(woken.json).toMatchObject({ status: "running", guest_schema_version: 2 })
        expect(yield* C.boxState(boxId)).toMatchObject({ pending_upgrade: false, boot_count: 2, clipboard: null })
      })))
  }

  it.effect("a wake without a recorded upgrade keeps memory (clipboard) and the runtime version", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      yield* writeClipboard(boxId, "kept")
      yield* act(boxId, "pause")
      yield* raiseRuntime(2)
      yield* act(boxId, "resume")
      expect(yield* C.boxState(boxId)).toMatchObject({ guest_schema_version: 1, boot_count: 1 })
      expect((yield* C.boxState(boxId)).clipboard).toEqual({ media_type: "text/plain", bytes: 4 })
    })))

  it.effect("any state, already current: applied true with the version, box left as it is", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const running = yield* C.runningBox()
      const paused = yield* C.runningBox()
      yield* act(paused, "pause")
      for (const [boxId, status] of [[running, "running"], [paused, "paused"]] as const) {
        const result = yield* act(boxId, "upgrade")
        expect(result.json).toEqual({ box_id: boxId, status, applied: true, guest_schema_version: 1 })
        expect(yield* C.boxState(boxId)).toMatchObject({ status, boot_count: 1, pending_upgrade: false })
      }
    })))

  it.effect("a box without a recorded version yet: applied true, guest_schema_version absent", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.createBox()
      const result = yield* act(boxId, "upgrade")
      expect(result.json).toEqual({ box_id: boxId, status: "creating", applied: true })
    })))
})

describe.each(Harness.variants({ sqlite: true }))("listeners ($name)", (variant) => {
  it.effect("unpublish works on running, paused and sleeping boxes and never wakes them", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({
        ingress_ports: [{ guest_port: 8080 }, { guest_port: 8081 }, { guest_port: 8082, protocol: "tcp" }]
      })
      expect((yield* unpublish(boxId, 8080)).json).toEqual({ box_id: boxId, guest_port: 8080 })
      yield* act(boxId, "pause")
      expect((yield* unpublish(boxId, 8081)).json).toEqual({ box_id: boxId, guest_port: 8081 })
      expect((yield* C.boxState(boxId)).status).toBe("paused")
      yield* act(boxId, "resume")
      yield* act(boxId, "sleep")
      expect((yield* unpublish(boxId, 8082)).json).toEqual({ box_id: boxId, guest_port: 8082 })
      expect(yield* C.boxState(boxId)).toMatchObject({ status: "sleeping", listeners: [] })
      C.expectError(yield* unpublish(boxId, 8082), 404, "not_found_error", { param: "guest_port" })
    })))

  it.effect("publish answers the listener with its address; a published port cannot be published twice", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      const published = yield* publish(boxId, 3000)
      expect(published.status).toBe(201)
      expect(published.json).toMatchObject({ guest_port: 3000, protocol: "http", custom_domains: [] })
      expect(published.json.address).toMatch(/^https:\/\//)
      expect((yield* C.get(`/v1/boxes/${boxId}`)).json.listeners).toEqual([published.json])
      C.expectError(yield* publish(boxId, 3000), 409, "conflict_error", { code: "already_exists" })
    })))

  it.effect("custom domains go with an unpublished http port; republishing leaves them to register again", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ ingress_ports: [{ guest_port: 8080 }, { guest_port: 5432, protocol: "tcp" }] })
      const added = yield* C.post(`/v1/boxes/${boxId}/listeners/8080/domains`, { hostname: "App.Example.COM" })
      expect(added.status).toBe(200)
      expect(added.json.custom_domains).toEqual(["app.example.com"])
      C.expectError(
        yield* C.post(`/v1/boxes/${boxId}/listeners/8080/domains`, { hostname: "app.example.com" }),
        409,
        "conflict_error",
        { code: "already_exists" }
      )
      C.expectError(
        yield* C.post(`/v1/boxes/${boxId}/listeners/5432/domains`, { hostname: "db.example.com" }),
        409,
        "conflict_error"
      )
      yield* unpublish(boxId, 8080)
      const republished = yield* publish(boxId, 8080)
      expect(republished.json.custom_domains).toEqual([])
      const again = yield* C.post(`/v1/boxes/${boxId}/listeners/8080/domains`, { hostname: "app.example.com" })
      expect(again.json.custom_domains).toEqual(["app.example.com"])
    })))

  it.effect("an unpublished tcp address stays in the organization for its other boxes; republishing returns the new address", () =>
    C.withServiceOn(variant, {}, twoOrganizations)(Effect.gen(function*() {
      const first = yield* C.runningBox({ ingress_ports: [{ guest_port: 5432, protocol: "tcp" }] })
      const second = yield* C.runningBox()
      const outsider = yield* C.runningBox({ app_id: otherApp }, "sk_other_org")
      const original = (yield* C.boxState(first)).listeners[0].address
      yield* unpublish(first, 5432)
      // Another organization never gets it.
      const foreign = yield* publish(outsider, 6000, "tcp", "sk_other_org")
      expect(foreign.json.address).not.toBe(original)
      // Another box of the organization reuses it.
      const reused = yield* publish(second, 7000, "tcp")
      expect(reused.json.address).toBe(original)
      // The first box republishing its port gets a new address, in the response.
      const republished = yield* publish(first, 5432, "tcp")
      expect(republished.status).toBe(201)
      expect(republished.json.address).not.toBe(original)
      expect((yield* C.boxState(first)).listeners[0].address).toBe(republished.json.address)
      // Terminating a box returns its tcp addresses to the organization too.
      yield* act(second, "terminate")
      expect((yield* publish(first, 5433, "tcp")).json.address).toBe(original)
    })))

  it.effect("listener operations on a box without persistence answer 409 conflict_error", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ image: { base: "boxkit/ephemeral" } })
      C.expectError(yield* publish(boxId, 8080), 409, "conflict_error", { message: /persistence/ })
      C.expectError(yield* unpublish(boxId, 8080), 409, "conflict_error", { message: /persistence/ })
      C.expectError(
        yield* C.post(`/v1/boxes/${boxId}/listeners/8080/domains`, { hostname: "a.example.com" }),
        409,
        "conflict_error",
        { message: /persistence/ }
      )
      const before = yield* C.state
      C.expectError(
        yield* C.post("/v1/boxes", C.boxBody({ image: { base: "boxkit/ephemeral" }, ingress_ports: [{ guest_port: 80 }] })),
        409,
        "conflict_error",
        { param: "ingress_ports" }
      )
      expect(yield* C.state).toEqual(before)
    })))

  it.effect("no_network: with ingress_ports at creation a 400 naming ingress_ports; a later publish a 409 (ListenerPolicy)", () =>
    C.withServiceOn(variant, {}, offlinePolicy)(Effect.gen(function*() {
      const before = yield* C.state
      for (const egressPolicy of [{ no_network: true }, offlinePolicyId]) {
        C.expectError(
          yield* C.post("/v1/boxes", C.boxBody({ egress_policy: egressPolicy, ingress_ports: [{ guest_port: 80 }] })),
          400,
          "invalid_request_error",
          { param: "ingress_ports" }
        )
      }
      expect(yield* C.state).toEqual(before)
      for (const egressPolicy of [{ no_network: true }, offlinePolicyId]) {
        const boxId = yield* C.runningBox({ egress_policy: egressPolicy })
        C.expectError(yield* publish(boxId, 8080), 409, "conflict_error", { code: "failed_precondition" })
        expect((yield* C.boxState(boxId)).listeners).toEqual([])
      }
      const connected = yield* C.runningBox({ egress_policy: { no_network: false } })
      expect((yield* publish(connected, 8080)).status).toBe(201)
    })))

  it.effect("a terminated box has no listeners: operations answer 409", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ ingress_ports: [{ guest_port: 8080 }] })
      yield* act(boxId, "terminate")
      expect((yield* C.boxState(boxId)).listeners).toEqual([])
      C.expectError(yield* unpublish(boxId, 8080), 409, "conflict_error")
      C.expectError(yield* publish(boxId, 8080), 409, "conflict_error")
    })))
})

describe.each(Harness.variants({ sqlite: true }))("clipboard ($name)", (variant) => {
  it.effect("text/plain (parameters ignored) and image/* bodies are placed on the clipboard; the answer is {}", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      const text = yield* writeClipboard(boxId, "héllo", "text/plain; charset=utf-8")
      expect(text.status).toBe(200)
      expect(text.json).toEqual({})
      expect((yield* C.boxState(boxId)).clipboard).toEqual({ media_type: "text/plain", bytes: 6 })
      const png = yield* writeClipboard(boxId, new Uint8Array([137, 80, 78, 71]), "IMAGE/PNG")
      expect(png.json).toEqual({})
      expect((yield* C.boxState(boxId)).clipboard).toEqual({ media_type: "image/png", bytes: 4 })
    })))

  it.effect("other media types are a 400 naming Content-Type", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      for (const contentType of ["application/json", "text/html", "image/", "image", "video/mp4", "text/plainx"]) {
        C.expectError(yield* writeClipboard(boxId, "x", contentType), 400, "invalid_request_error", { param: "Content-Type" })
      }
      const missing = yield* C.request(`/v1/boxes/${boxId}/clipboard`, {
        method: "PUT",
        headers: { authorization: "Bearer sk_acme_org" },
        body: "x"
      })
      C.expectError(missing, 400, "invalid_request_error", { param: "Content-Type" })
      expect((yield* C.boxState(boxId)).clipboard).toBeNull()
    })))

  it.effect("a clipboard write is at most 8 MiB (docs/ASSUMPTIONS.md)", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      C.expectError(yield* writeClipboard(boxId, new Uint8Array(8 * 1024 * 1024 + 1), "image/png"), 400, "invalid_request_error", {
        message: /too large/
      })
      expect((yield* C.boxState(boxId)).clipboard).toBeNull()
      expect((yield* writeClipboard(boxId, new Uint8Array(8 * 1024 * 1024), "image/png")).status).toBe(200)
    })))

  it.effect("a guest image without a clipboard answers 501 not_implemented_error unimplemented", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox({ image: { base: "boxkit/no-clipboard" } })
      C.expectError(yield* writeClipboard(boxId, "x"), 501, "not_implemented_error", { code: "unimplemented" })
    })))

  it.effect("a box that cannot take a write (not running) answers 409 conflict_error", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const creating = yield* C.createBox()
      C.expectError(yield* writeClipboard(creating, "x"), 409, "conflict_error")
      const paused = yield* C.runningBox()
      yield* act(paused, "pause")
      C.expectError(yield* writeClipboard(paused, "x"), 409, "conflict_error")
      expect((yield* C.boxState(paused)).clipboard).toBeNull()
    })))
})

describe.each(Harness.variants({ sqlite: true }))("exec resize ($name)", (variant) => {
  it.effect("an unknown exec is a no-op answering {}, in both path forms", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const boxId = yield* C.runningBox()
      const before = yield* C.state
      const plain = yield* C.post(`/v1/boxes/${boxId}/exec/exec_unknown/resize`, { cols: 120, rows: 40 })
      expect([plain.status, plain.json]).toEqual([200, {}])
      const dashed = yield* C.post(
        `/v1/boxes/${boxId}/exec/-/resize?exec_request_id=${encodeURIComponent("a/very/long id")}`,
        { cols: 120, rows: 40 }
      )
      expect([dashed.status, dashed.json]).toEqual([200, {}])
      expect(yield* C.state).toEqual(before)
      C.expectError(yield* C.post(`/v1/boxes/${C.unknownBoxId}/exec/e/resize`, { cols: 1, rows: 1 }), 404, "not_found_error")
    })))
})
