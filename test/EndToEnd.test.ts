import { describe, expect } from "@effect/vitest"
import { Chunk, Effect, Redacted, Stream } from "effect"
import * as ApiError from "../src/ApiError.js"
import { Apps } from "../src/Client/Apps.js"
import { Boxes } from "../src/Client/Boxes.js"
import { Clipboard } from "../src/Client/Clipboard.js"
import { EgressPolicies } from "../src/Client/EgressPolicies.js"
import { Exec } from "../src/Client/Exec.js"
import { Listeners } from "../src/Client/Listeners.js"
import { Responses } from "../src/Client/Responses.js"
import { Secrets } from "../src/Client/Secrets.js"
import { AppId } from "../src/Domain/Ids.js"
import { outputText } from "../src/Domain/ModelResponse.js"
import * as Harness from "./support/Harness.js"
import { layer } from "./support/SuiteLayer.js"

const appId = AppId.make("app_00000000-0000-4000-8000-000000000001")

describe.each(Harness.variants({ stockClient: true }))("$name", (variant) =>
layer(Harness.serviceWithClientOn(variant), { excludeTestServices: true })("client against the local service over HTTP", (it) => {
  describe("apps", () => {
    it.effect("find mints a missing app once and finds it again", () =>
      Effect.gen(function*() {
        const apps = yield* Apps
        const minted = yield* apps.find("e2e-app", { mintIfMissing: true })
        const found = yield* apps.find("e2e-app")
        expect(found.id).toBe(minted.id)
        expect(minted.id).toMatch(/^app_[0-9a-f-]{36}$/)
        const missing = yield* Effect.flip(apps.find("no-such-app"))
        expect(missing).toBeInstanceOf(ApiError.NotFoundError)
      }))
  })

  describe("boxes", () => {
    it.effect("create, await running, read", () =>
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const created = yield* boxes.create({ name: " spaced name ", app_id: appId, image: { base: "debian" } })
        expect(created.value.status).toBe("creating")
        expect(created.replayed).toBe(false)
        const box = yield* boxes.awaitStatus(created.value.box_id)
        expect(box.status).toBe("running")
        expect(box.name).toBe(" spaced name ")
        expect(box.size).toBe("m")
        expect(box.memory_limit_gib).toBe(32)
        expect(box.state_disk_limit_gib).toBe(128)
      }))

    it.effect("a box that fails to start ends failed with error_message", () =>
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const created = yield* boxes.create({ name: "doomed", app_id: appId, image: { base: "boxkit/fail-to-start" } })
        const error = yield* Effect.flip(boxes.awaitStatus(created.value.box_id))
        expect(error._tag).toBe("BoxFailedError")
        if (error._tag === "BoxFailedError") expect(error.error_message).toMatch(/failed to boot/)
      }))

    it.effect("an out-of-range memory limit is refused by the client before any I/O", () =>
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const error = yield* Effect.flip(
          boxes.create({ name: "b", app_id: appId, image: { base: "debian" }, size: "s", memory_limit_gib: 65 })
        )
        expect(error).toBeInstanceOf(ApiError.InvalidRequestError)
        if (error instanceof ApiError.InvalidRequestError) expect(error.param).toBe("memory_limit_gib")
      }))

    it.effect("upgrade of a current box is applied with its version", () =>
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const created = yield* boxes.create({ name: "u", app_id: appId, image: { base: "debian" } })
        yield* boxes.awaitStatus(created.value.box_id)
        const upgraded = yield* boxes.upgrade(created.value.box_id)
        expect(upgraded.value.applied).toBe(true)
        expect(upgraded.value.guest_schema_version).toBe(1)
      }))
  })

  describe("secrets and policies", () => {
    it.effect("create and read a secret without its value", () =>
      Effect.gen(function*() {
        const secrets = yield* Secrets
        yield* secrets.create("E2E_SECRET", Redacted.make("hunter2"))
        const secret = yield* secrets.retrieve("E2E_SECRET")
        expect(Object.keys(secret).sort()).toEqual(["created_at", "name", "org_id", "updated_at"])
        expect(JSON.stringify(secret)).not.toContain("hunter2")
        const missing = yield* Effect.flip(secrets.retrieve("NOPE"))
        expect(missing).toBeInstanceOf(ApiError.NotFoundError)
      }))

    it.effect("create, rename and read a policy", () =>
      Effect.gen(function*() {
        const policies = yield* EgressPolicies
        const created = yield* policies.create("e2e", { allowlist: ["Example.COM"] })
        expect(created.document).toMatchObject({ allowlist: ["example.com"] })
        const renamed = yield* policies.rename(created.id, "  renamed  ")
        expect(renamed.name).toBe("renamed")
        expect(renamed.document).toEqual(created.document)
        const read = yield* policies.retrieve(created.id)
        expect(read.name).toBe("renamed")
      }))
  })

  describe("clipboard, exec, listeners", () => {
    it.effect("clipboard text and image, resize, unpublish", () =>
      Effect.gen(function*() {
        const boxes = yield* Boxes
        const clipboard = yield* Clipboard
        const exec = yield* Exec
        const listeners = yield* Listeners
        const created = yield* boxes.create({
          name: "io",
          app_id: appId,
          image: { base: "debian" },
          ingress_ports: [{ guest_port: 8080 }]
        })
        yield* boxes.awaitStatus(created.value.box_id)
        expect(yield* clipboard.writeText(created.value.box_id, "hello")).toEqual({})
        expect(yield* clipboard.write(created.value.box_id, new Uint8Array([137, 80, 78, 71]), "image/png")).toEqual({})
        expect(yield* exec.resize(created.value.box_id, "exec_1", { cols: 80, rows: 24 })).toEqual({})
        expect(yield* exec.resize(created.value.box_id, "a/b", { cols: 80, rows: 24 })).toEqual({})
        const unpublished = yield* listeners.unpublish(created.value.box_id, 8080)
        expect(unpublished).toEqual({ box_id: created.value.box_id, guest_port: 8080 })
        const again = yield* Effect.flip(listeners.unpublish(created.value.box_id, 8080))
        expect(again).toBeInstanceOf(ApiError.NotFoundError)
      }))
  })

  describe("responses", () => {
    it.effect("foreground, background and stream", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        const foreground = yield* responses.create({ model: "boxkit-local", input: "hello" })
        expect(foreground.value.status).toBe("completed")
        expect(outputText(foreground.value)).toContain("hello")
        const submitted = yield* responses.submit({ model: "boxkit-local", input: "later" })
        expect(submitted.value.status).toBe("queued")
        const done = yield* responses.awaitCompletion(submitted.value.id)
        expect(done.status).toBe("completed")
        const events = Chunk.toArray(yield* Stream.runCollect(responses.stream({ model: "boxkit-local", input: "streamed" })))
        expect(events[0].type).toBe("response.created")
        expect(events.at(-1)?.type).toBe("response.completed")
        expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
        const text = events.filter((event) => event.type === "response.output_text.delta").map((event) => event.delta).join("")
        expect(text).toContain("streamed")
      }))
  })
}))
