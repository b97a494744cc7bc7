/**
 * Two services on one PostgreSQL database with the virtual clock: whether an instance is alive is judged by the real
 * time of the processes, never by the service's clock (docs/ASSUMPTIONS.md "The virtual clock", docs/decisions/
 * 0007-virtual-clock.md). An advance moves the clock of the instance that serves it at once and the other's within
 * about a second; in between, and after, neither instance takes over the idempotency keys or the background responses
 * the other holds. Each instance's model holds the requests marked for it until the test lets them go, so what is in
 * flight stays in flight whatever the clock does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import * as LanguageModel from "../../src/Server/responses/LanguageModel.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as Crash from "../durability/support/Crash.js"
import * as Harness from "../support/Harness.js"
import * as Postgres from "../support/Postgres.js"
import * as Clocked from "./Clocked.js"

/** An advance of an hour: far past any instance timeout. */
const advanceSeconds = 3600

/** A gate: `opened` resolves once `open` is called. */
const gate = () => {
  let open = () => {}
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

/** What every held request's input starts with. */
const heldPrefix = "held on "

/**
 * The local model, except that a request whose prompt contains `marker` is answered only once `release` opens; `seen`
 * opens when the first such request reaches the model (its idempotency key, if any, is claimed by then). Every prompt
 * of a held request of any instance that reaches this model is added to `asked`: a prompt of another instance's
 * marker there is work this instance took over.
 */
const holdingModel = (marker: string, seen: ReturnType<typeof gate>, release: Promise<void>, asked: Array<string>) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.map(LanguageModel.LanguageModel, (local) => {
      const held = (request: LanguageModel.GenerateRequest) => {
        const texts = request.messages.map(LanguageModel.messageText)
        asked.push(...texts.filter((text) => text.includes(heldPrefix)))
        return texts.some((text) => text.includes(marker))
      }
      const wait = Effect.zipRight(Effect.sync(seen.open), Effect.promise(() => release))
      return {
        generate: (request: LanguageModel.GenerateRequest) =>
          held(request) ? Stream.unwrap(Effect.as(wait, local.generate(request))) : local.generate(request),
        answer: (request: LanguageModel.GenerateRequest) =>
          held(request) ? Effect.zipRight(wait, local.answer!(request)) : local.answer!(request)
      }
    })
  ).pipe(Layer.provide(LanguageModel.localLayer))

/** One instance: its origin, its runtime, its held requests' marker and gates, the held prompts its model was asked. */
interface Instance {
  readonly url: URL
  readonly runtime: ManagedRuntime.ManagedRuntime<unknown, unknown>
  readonly marker: string
  readonly seen: ReturnType<typeof gate>
  readonly release: ReturnType<typeof gate>
  readonly asked: Array<string>
}

const start = async (server: LocalService.ServerKind, databaseUrl: string, marker: string): Promise<Instance> => {
  const seen = gate()
  const release = gate()
  const asked: Array<string> = []
  const runtime = ManagedRuntime.make(LocalService.layerNode(Harness.seed, {
    server,
    state: SqlState.layerPostgres(Redacted.make(databaseUrl)),
    settings: { clock: "virtual" },
    languageModel: holdingModel(marker, seen, release.opened, asked)
  }))
  const baseUrl = await runtime.runPromise(LocalService.baseUrl)
  return {
    url: new URL(baseUrl.replace(/\/v1$/, "")),
    runtime: runtime as ManagedRuntime.ManagedRuntime<unknown, unknown>,
    marker,
    seen,
    release,
    asked
  }
}

/** A foreground response with `key`, on `instance`, whose input is `input`. */
const createResponse = (instance: Instance, key: string, input: string) =>
  Crash.send(instance.url, "/v1/responses", {
    method: "POST",
    body: { model: "boxkit-local", input },
    headers: { "idempotency-key": key }
  })

/** Expects `answer` to say that its key is in flight elsewhere (409, `idempotent_request_in_flight`). */
const expectInFlight = (answer: Crash.Answer, what: string) =>
  expect([what, answer.status, answer.json?.error?.code]).toEqual([what, 409, "idempotent_request_in_flight"])

for (const server of Clocked.servers) {
  describe(`instance liveness under the virtual clock (${server}, two instances on PostgreSQL)`, () => {
    let database: Postgres.TestDatabase | undefined
    let pair: ReadonlyArray<Instance> = []

    beforeAll(async () => {
      database = await Postgres.startTestDatabase()
      const databaseUrl = await Postgres.createDatabase(database, "liveness")
      pair = await Promise.all([start(server, databaseUrl, `${heldPrefix}A`), start(server, databaseUrl, `${heldPrefix}B`)])
    }, Postgres.startLimitMillis)

    afterAll(async () => {
      for (const instance of pair) {
        instance.release.open()
        await instance.runtime.dispose()
      }
      await database?.stop()
    }, 120_000)

    it("an advance of an hour on one instance takes over nothing the other holds, before or after the other reads it", async () => {
      const [a, b] = pair
      // In flight: a key on each instance, and a background response on B.
      const heldOnA = createResponse(a, "key-held-on-a", a.marker)
      const heldOnB = createResponse(b, "key-held-on-b", b.marker)
      // A failure below must not leave these as unhandled rejections when the services close.
      heldOnA.catch(() => undefined)
      heldOnB.catch(() => undefined)
      await Promise.all([a.seen.opened, b.seen.opened])
      const background = await Crash.send(b.url, "/v1/responses", {
        method: "POST",
        body: { model: "boxkit-local", input: b.marker, background: true }
      })
      expect(background.status).toBe(202)

      const advanced = await Crash.send(a.url, "/_local/clock/advance", { method: "POST", body: { seconds: advanceSeconds } })
      expect(advanced.status).toBe(200)
      const offset = advanced.json.offset_seconds as number
      expect(offset).toBeGreaterThanOrEqual(advanceSeconds)
      // A's clock is an hour ahead; B's heartbeats are stamped with the real time, as A's judgement is.
      expectInFlight(await createResponse(a, "key-held-on-b", b.marker), "B's key on A, right after A's advance")

      // B reads the stored offset (at this request, or its own poll before it).
      await Crash.waitFor(
        async () => (await Crash.send(b.url, "/_local/clock")).json.offset_seconds >= offset,
        "B to read the advanced offset"
      )
      expectInFlight(await createResponse(b, "key-held-on-a", a.marker), "A's key on B, once B read the offset")
      expectInFlight(await createResponse(a, "key-held-on-b", b.marker), "B's key on A, once B read the offset")
      // The background response is still B's: nobody ran it with another model.
      const job = await Crash.send(a.url, `/v1/responses/${background.json.id}`)
      expect(job.json.status).not.toBe("completed")

      // Let go, each request is answered by its own instance, once, and replayed on the other.
      a.release.open()
      b.release.open()
      const [answeredOnA, answeredOnB] = await Promise.all([heldOnA, heldOnB])
      expect([answeredOnA.status, answeredOnB.status]).toEqual([200, 200])
      const replayOnB = await createResponse(b, "key-held-on-a", a.marker)
      expect([replayOnB.headers["idempotent-replayed"], replayOnB.json.id]).toEqual(["true", answeredOnA.json.id])
      const replayOnA = await createResponse(a, "key-held-on-b", b.marker)
      expect([replayOnA.headers["idempotent-replayed"], replayOnA.json.id]).toEqual(["true", answeredOnB.json.id])
      await Crash.waitFor(
        async () => (await Crash.send(a.url, `/v1/responses/${background.json.id}`)).json.status === "completed",
        "the background response to complete on B"
      )
      // Each model was asked only its own instance's held work.
      expect(a.asked.filter((prompt) => prompt.includes(b.marker))).toEqual([])
      expect(b.asked.filter((prompt) => prompt.includes(a.marker))).toEqual([])
    }, 120_000)
  })
}
