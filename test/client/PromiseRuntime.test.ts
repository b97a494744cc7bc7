/**
 * `Boxkit.makeRuntime` for code outside Effect: a failed call rejects with the typed error class itself (its
 * `instanceof` and `_tag` hold), not a `FiberFailure`; a success resolves with the value; `runPromiseExit` still gives
 * the whole `Exit`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Duration, Effect, Exit, ManagedRuntime } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { NotFoundError } from "../../src/ApiError.js"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes, WaitTimeoutError } from "../../src/Client/Boxes.js"
import * as Boxkit from "../../src/Client/Boxkit.js"
import * as Ids from "../../src/Domain/Ids.js"
import * as BoxkitTesting from "../../src/testing.js"

const service = ManagedRuntime.make(BoxkitTesting.layer())
let runtime: ManagedRuntime.ManagedRuntime<Boxkit.Services, never>

beforeAll(async () => {
  const embedded = await service.runPromise(BoxkitTesting.TestService)
  runtime = Boxkit.makeRuntime({ apiKey: embedded.apiKey, baseUrl: embedded.baseUrl })
})

afterAll(async () => {
  await runtime?.dispose()
  await service.dispose()
})

const missing = Ids.BoxId.make("sb_00000000-0000-7000-8000-000000000000")

describe("Boxkit.makeRuntime", () => {
  it("rejects with the typed error class itself", async () => {
    const error: unknown = await runtime.runPromise(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(missing))).then(
      () => undefined,
      (rejection: unknown) => rejection
    )
    expect(error).toBeInstanceOf(NotFoundError)
    expect((error as NotFoundError)._tag).toBe("NotFoundError")
    expect((error as NotFoundError).status).toBe(404)
  })

  it("rejects with the client's own errors too (a wait past its deadline)", async () => {
    const app = await runtime.runPromise(Effect.flatMap(Apps, (apps) => apps.find("promise", { mintIfMissing: true })))
    const waited = runtime.runPromise(Effect.gen(function*() {
      const boxes = yield* Boxes
      const created = yield* boxes.create({ name: "promise", app_id: app.id, image: { base: "debian" } })
      return yield* boxes.awaitStatus(created.value.box_id, "paused", { timeout: Duration.millis(50) })
    }))
    await expect(waited).rejects.toBeInstanceOf(WaitTimeoutError)
  })

  it("resolves with the value, and runPromiseExit keeps the whole Exit", async () => {
    const app = await runtime.runPromise(Effect.flatMap(Apps, (apps) => apps.find("promise", { mintIfMissing: true })))
    expect(app.name).toBe("promise")
    const exit = await runtime.runPromiseExit(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(missing)))
    expect(Exit.isFailure(exit)).toBe(true)
  })

  it("runSync throws the failure itself", () => {
    expect(() => runtime.runSync(Effect.fail(ApiError.make.notFound("gone")))).toThrow(
      NotFoundError
    )
  })
})
