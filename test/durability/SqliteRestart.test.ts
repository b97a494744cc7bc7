/**
 * The local service on a SQLite data directory, stopped and started again in this process (docs/ASSUMPTIONS.md "Durable
 * state (local service)"): the seed goes into a new store only; records, remembered answers, the runtime version and
 * custom domains come back; times are kept in the store, so a box lifetime that ran out while the service was down ends
 * the box after the restart and the idempotency window counts from the stored answer; a background response accepted
 * before a stop runs after the restart; a second service on the same directory is refused.
 */
import { describe, expect, it } from "vitest"
import { Duration, Effect, Layer, ManagedRuntime, Schema, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import * as LanguageModel from "../../src/Server/responses/LanguageModel.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as StateStore from "../../src/Server/state/StateStore.js"
import * as Crash from "./support/Crash.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

/** A model that never answers: a background response stays in progress until the service stops. */
const silentModel = Layer.succeed(LanguageModel.LanguageModel, {
  generate: () => Stream.never,
  answer: () => Effect.never
})

/** The service on `directory`, started; `url` is its origin. */
const start = async (
  directory: string,
  options: { settings?: Partial<LocalServiceSettings>; languageModel?: typeof silentModel } = {}
) => {
  const runtime = ManagedRuntime.make(LocalService.layerNode(seed, {
    state: SqlState.layerSqlite(directory),
    settings: options.settings,
    languageModel: options.languageModel
  }))
  const baseUrl = await runtime.runPromise(LocalService.baseUrl)
  const location = await runtime.runPromise(StateStore.StateLocation)
  return { runtime, url: new URL(baseUrl.replace(/\/v1$/, "")), location }
}

const withDirectory = async (use: (directory: string) => Promise<void>) => {
  const directory = mkdtempSync(join(tmpdir(), "boxkit-restart-"))
  try {
    await use(directory)
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

const boxBody = (name: string, extra: Record<string, unknown> = {}) => ({ ...Crash.createBody(name, 0), name, ...extra })

describe("a service restarted on its SQLite data directory", () => {
  it("applies the seed once and brings back records, remembered answers, the runtime version and custom domains", () =>
    withDirectory(async (directory) => {
      const first = await start(directory)
      expect(first.location).toMatchObject({ durable: true, fresh: true })
      const created = await Crash.send(first.url, "/v1/boxes", {
        method: "POST",
        body: boxBody("kept", { ingress_ports: [{ guest_port: 8080, protocol: "http" }] }),
        headers: { "idempotency-key": "restart-key" }
      })
      expect(created.status).toBe(201)
      const boxId = created.json.box_id as string
      await Crash.waitFor(async () => (await Crash.send(first.url, `/v1/boxes/${boxId}`)).json.status === "running", "the box to run")
      const domain = await Crash.send(first.url, `/v1/boxes/${boxId}/listeners/8080/domains`, {
        method: "POST",
        body: { hostname: "kept.example.com" }
      })
      expect(domain.status).toBe(200)
      expect((await Crash.send(first.url, "/v1/secrets", { method: "POST", body: { name: "KEPT", value: "v" } })).status).toBe(201)
      expect((await Crash.send(first.url, "/_local/runtime", { method: "POST", body: { guest_schema_version: 3 } })).status)
        .toBe(200)
      await first.runtime.dispose()

      const second = await start(directory)
      try {
        expect(second.location).toMatchObject({ durable: true, fresh: false })
        const replay = await Crash.send(second.url, "/v1/boxes", {
          method: "POST",
          body: boxBody("kept", { ingress_ports: [{ guest_port: 8080, protocol: "http" }] }),
          headers: { "idempotency-key": "restart-key" }
        })
        expect(replay.status).toBe(201)
        expect(replay.headers["idempotent-replayed"]).toBe("true")
        expect(replay.json.box_id).toBe(boxId)
        const box = await Crash.send(second.url, `/v1/boxes/${boxId}`)
        expect(box.json.status).toBe("running")
        expect(box.json.listeners[0].custom_domains).toEqual(["kept.example.com"])
        // The hostname is still taken in the organization.
        const again = await Crash.send(second.url, `/v1/boxes/${boxId}/listeners/8080/domains`, {
          method: "POST",
          body: { hostname: "kept.example.com" }
        })
        expect(again.status).toBe(409)
        expect((await Crash.send(second.url, "/v1/secrets/KEPT")).status).toBe(200)
        const state = await Crash.send(second.url, "/_local/state")
        expect(state.json.guest_schema_version).toBe(3)
        // The seed was not applied a second time: one row per organization.
        const ids = (state.json.organizations as Array<{ id: string }>).map((organization) => organization.id)
        expect(new Set(ids).size).toBe(ids.length)
        expect(ids.length).toBe(seed.organizations.length)
      } finally {
        await second.runtime.dispose()
      }
    }), 120_000)

  it("counts lifetimes and the idempotency window from stored times", () =>
    withDirectory(async (directory) => {
      const settings = { idempotencyRetention: Duration.seconds(2) }
      const first = await start(directory, { settings })
      const created = await Crash.send(first.url, "/v1/boxes", {
        method: "POST",
        body: boxBody("short", { max_lifetime_seconds: 1 }),
        headers: { "idempotency-key": "short-window" }
      })
      expect(created.status).toBe(201)
      const createdAt = Date.now()
      await first.runtime.dispose()
      // Down for longer than both the lifetime and the window.
      await Crash.waitFor(() => Date.now() - createdAt > 2_500, "the lifetime and the window to pass")

      const second = await start(directory, { settings })
      try {
        await Crash.waitFor(
          async () => (await Crash.send(second.url, `/v1/boxes/${created.json.box_id}`)).json.status === "terminated",
          "the box whose lifetime ran out to be terminated"
        )
        const after = await Crash.send(second.url, "/v1/boxes", {
          method: "POST",
          body: boxBody("short", { max_lifetime_seconds: 1 }),
          headers: { "idempotency-key": "short-window" }
        })
        expect(after.status).toBe(201)
        expect(after.headers["idempotent-replayed"]).toBeUndefined()
        expect(after.json.box_id).not.toBe(created.json.box_id)
      } finally {
        await second.runtime.dispose()
      }
    }), 120_000)

  it("runs a background response accepted before the stop after the restart, and delivers its webhook", () =>
    withDirectory(async (directory) => {
      const hook = await Crash.receiver()
      try {
        const first = await start(directory, { languageModel: silentModel })
        const accepted = await Crash.send(first.url, "/v1/responses", {
          method: "POST",
          body: { model: "boxkit-local", input: "later", background: true, metadata: { completion_webhook: hook.url } }
        })
        expect(accepted.status).toBe(202)
        const id = accepted.json.id as string
        await Crash.waitFor(async () => (await Crash.send(first.url, `/v1/responses/${id}`)).json.status === "in_progress", "in progress")
        await first.runtime.dispose()

        const second = await start(directory)
        try {
          await Crash.waitFor(async () => (await Crash.send(second.url, `/v1/responses/${id}`)).json.status === "completed", "completed")
          await Crash.waitFor(() => hook.received.get(id) === 1, "its webhook")
        } finally {
          await second.runtime.dispose()
        }
      } finally {
        await hook.close()
      }
    }), 120_000)

  it("refuses a second service on the same directory while the first runs", () =>
    withDirectory(async (directory) => {
      const first = await start(directory)
      try {
        await expect(start(directory)).rejects.toThrow(/another boxkit serve/)
      } finally {
        await first.runtime.dispose()
      }
    }), 120_000)
})
