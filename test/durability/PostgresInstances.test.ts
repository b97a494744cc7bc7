/**
 * Two local services on one PostgreSQL database are one service (docs/ASSUMPTIONS.md "Durable state (local service)"):
 * a record written on one is read on the other, concurrent first uses of one idempotency key on both make one box, a
 * key running on one is in flight on the other, the runtime version raised on one applies on the other, and a lifetime
 * expiry happens once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Duration, ManagedRuntime, Redacted, Schema } from "effect"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as Postgres from "../support/Postgres.js"
import * as Crash from "./support/Crash.js"
import * as OneAnswer from "../support/OneAnswerInputs.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

let server: Postgres.TestDatabase
let pair: ReadonlyArray<{ runtime: ManagedRuntime.ManagedRuntime<unknown, unknown>; url: URL }>

const start = async (databaseUrl: string, settings: Partial<LocalServiceSettings>) => {
  const runtime = ManagedRuntime.make(LocalService.layerNode(seed, {
    state: SqlState.layerPostgres(Redacted.make(databaseUrl)),
    settings
  }))
  const baseUrl = await runtime.runPromise(LocalService.baseUrl)
  return { runtime: runtime as ManagedRuntime.ManagedRuntime<unknown, unknown>, url: new URL(baseUrl.replace(/\/v1$/, "")) }
}

beforeAll(async () => {
  server = await Postgres.startTestDatabase()
  const databaseUrl = await Postgres.createDatabase(server, "instances")
  // Both start at once: the migrations and the seed run once between them.
  // A small stored-bytes quota for the clipboard test (nothing else here stores more than a few hundred bytes).
  const settings = {
    instanceTimeout: Duration.seconds(2),
    bootDelay: Duration.millis(50),
    quotas: { boxes: 1000, backgroundResponses: 1000, storedBytes: 64 * 1024 }
  }
  pair = await Promise.all([start(databaseUrl, settings), start(databaseUrl, settings)])
}, 180_000)

afterAll(async () => {
  for (const service of pair ?? []) await service.runtime.dispose()
  await server?.stop()
}, 120_000)

describe("two services on one PostgreSQL database", () => {
  it("started together, they seed the database once", async () => {
    const state = await Crash.send(pair[0].url, "/_local/state")
    const ids = (state.json.organizations as Array<{ id: string }>).map((organization) => organization.id)
    expect(ids.length).toBe(seed.organizations.length)
    expect((state.json.apps as Array<unknown>).length).toBe(seed.apps.length)
  })

  it("a record written on one is read on the other", async () => {
    expect((await Crash.send(pair[0].url, "/v1/secrets", { method: "POST", body: { name: "SHARED", value: "v" } })).status)
      .toBe(201)
    expect((await Crash.send(pair[1].url, "/v1/secrets/SHARED")).status).toBe(200)
    const minted = await Crash.send(pair[1].url, "/v1/apps/find", { method: "POST", body: { name: "minted-on-b", mint_if_missing: true } })
    const found = await Crash.send(pair[0].url, "/v1/apps/find", { method: "POST", body: { name: "minted-on-b" } })
    expect(found.json.app_id).toBe(minted.json.app_id)
  })

  it("concurrent first uses of one key on both make one box; a replay on either gets it", async () => {
    for (let round = 0; round < 10; round++) {
      const key = `shared-key-${round}`
      const send = (index: number) =>
        Crash.send(pair[index].url, "/v1/boxes", {
          method: "POST",
          body: Crash.createBody("shared", round),
          headers: { "idempotency-key": key }
        })
      const answers = await Promise.all([send(0), send(1), send(0), send(1)])
      const made = answers.filter((answer) => answer.status === 201)
      // The others were told the key is in flight; none made a second box.
      for (const answer of answers) {
        if (answer.status !== 201) expect(answer.json.error.code).toBe("idempotent_request_in_flight")
      }
      expect(new Set(made.map((answer) => answer.json.box_id)).size).toBe(1)
      const replay = await send(1)
      expect(replay.headers["idempotent-replayed"]).toBe("true")
      expect(replay.json.box_id).toBe(made[0].json.box_id)
    }
    const state = await Crash.send(pair[0].url, "/_local/state")
    const shared = (state.json.boxes as Array<{ name: string }>).filter((box) => box.name.startsWith("shared-"))
    expect(shared.length).toBe(10)
  })

  it("the runtime version raised on one applies to boots on the other", async () => {
    expect((await Crash.send(pair[0].url, "/_local/runtime", { method: "POST", body: { guest_schema_version: 7 } })).status)
      .toBe(200)
    const created = await Crash.send(pair[1].url, "/v1/boxes", { method: "POST", body: Crash.createBody("versioned", 0) })
    await Crash.waitFor(async () => (await Crash.send(pair[1].url, `/v1/boxes/${created.json.box_id}`)).json.status === "running", "running")
    expect((await Crash.send(pair[0].url, `/v1/boxes/${created.json.box_id}`)).json.guest_schema_version).toBe(7)
  })

  it("a box whose lifetime ran out is terminated once, whichever instance finds it", async () => {
    const created = await Crash.send(pair[0].url, "/v1/boxes", {
      method: "POST",
      body: { ...Crash.createBody("mortal", 0), max_lifetime_seconds: 1, ingress_ports: [{ guest_port: 9000, protocol: "tcp" }] }
    })
    expect(created.status).toBe(201)
    const addressOf = async (answer: Crash.Answer) =>
      (await Crash.send(pair[0].url, `/v1/boxes/${answer.json.box_id}`)).json.listeners[0].address as string
    const address = await addressOf(created)
    await Crash.waitFor(
      async () => (await Crash.send(pair[1].url, `/v1/boxes/${created.json.box_id}`)).json.status === "terminated",
      "the box to be terminated"
    )
    // Its tcp address went back to the organization's pool once, not twice.
    const again = await Crash.send(pair[1].url, "/v1/boxes", {
      method: "POST",
      body: { ...Crash.createBody("heir", 0), ingress_ports: [{ guest_port: 9000, protocol: "tcp" }] }
    })
    const other = await Crash.send(pair[0].url, "/v1/boxes", {
      method: "POST",
      body: { ...Crash.createBody("heir-2", 0), ingress_ports: [{ guest_port: 9000, protocol: "tcp" }] }
    })
    const heirs = [await addressOf(again), await addressOf(other)]
    expect(heirs.filter((taken) => taken === address).length).toBe(1)
  })
  it("text, bytes and keys get the answer they get on the other stores (test/conformance/OneAnswer.test.ts)", async () => {
    const post = (path: string, body: unknown) => Crash.send(pair[0].url, path, { method: "POST", body })
    for (const [label, name] of OneAnswer.refusedInNames) {
      const answers = [
        await post("/v1/apps/find", { name, mint_if_missing: true }),
        await post("/v1/egress-policies", { name, document: {} }),
        await post("/v1/boxes", { ...Crash.createBody("text", 0), name })
      ]
      for (const answer of answers) expect([label, answer.status, answer.json.error?.param]).toEqual([label, 400, "name"])
    }
    for (const [label, value] of OneAnswer.refusedInValues) {
      const answer = await post("/v1/secrets", { name: "PG_TEXT", value })
      expect([label, answer.status, answer.json.error?.param]).toEqual([label, 400, "value"])
    }
    expect((await post("/v1/secrets", { name: "PG_TEXT", value: "line 1\nline 2\r\n\tend" })).status).toBe(201)
    // Ids PostgreSQL cannot hold are unknown ids, as in memory: 404, not the database's error.
    const unknownApp = await post("/v1/boxes", { ...Crash.createBody("nul-app", 0), app_id: "app_\u0000" })
    expect([unknownApp.status, unknownApp.json.error?.param]).toEqual([404, "app_id"])
    expect((await Crash.send(pair[1].url, "/v1/responses/resp_%00")).status).toBe(404)
    // A metadata value is free text: a NUL (which PostgreSQL's webhook_token column refuses) is a 400 naming it.
    const token = await post("/v1/responses", { model: "boxkit-local", input: "x", metadata: { webhook_token: "a\u0000b" } })
    expect([token.status, token.json.error?.param]).toEqual([400, "metadata.webhook_token"])
    // Not UTF-8: a 400 naming the field, nothing stored with U+FFFD.
    const broken = await fetch(new URL("/v1/apps/find", pair[0].url), {
      method: "POST",
      headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
      body: new Uint8Array(OneAnswer.withInvalidUtf8(`{"mint_if_missing":true,"name":"a@@b"}`))
    })
    expect([broken.status, ((await broken.json()) as any).error.param]).toEqual([400, "name"])
    expect((await post("/v1/apps/find", { name: "a\ufffd\ufffdb" })).status).toBe(404)
    // __proto__ is an ordinary key: kept in what PostgreSQL stores, and seen by the inline-secrets rule.
    const rules = JSON.parse(`{"__proto__":{"headers":{"x-team":"boxkit"}}}`)
    const policy = await post("/v1/egress-policies", { name: "pg-keys", document: { rules } })
    const read = await Crash.send(pair[1].url, `/v1/egress-policies/${policy.json.id}`)
    expect(JSON.stringify(read.json.document.rules)).toBe(JSON.stringify(rules))
    const secretRule = JSON.parse(`{"rules":{"__proto__":{"headers":{"authorization":{"secret":"PG_TEXT"}}}}}`)
    const inline = await post("/v1/boxes", { ...Crash.createBody("inline", 0), egress_policy: secretRule })
    expect([inline.status, inline.json.error?.param]).toEqual([400, "egress_policy.rules"])
    const metadata = JSON.parse(`{"__proto__":"x","constructor":"y"}`)
    const response = await post("/v1/responses", { model: "boxkit-local", input: "hello", metadata })
    const stored = await Crash.send(pair[1].url, `/v1/responses/${response.json.id}`)
    expect(Object.getOwnPropertyDescriptor(stored.json.metadata, "__proto__")?.value).toBe("x")
    expect(stored.json.metadata.constructor).toBe("y")
  })
  it("over the stored-bytes quota, a clipboard write that frees bytes passes (usage read from org_usage)", async () => {
    const storedBytes = async () =>
      (await Crash.send(pair[0].url, "/_local/state")).json.organizations
        .find((organization: { id: string }) => organization.id === "org_acme").usage.stored_bytes as number
    const running = async (name: string) => {
      const created = await Crash.send(pair[0].url, "/v1/boxes", { method: "POST", body: Crash.createBody(name, 0) })
      const boxId = created.json.box_id as string
      await Crash.waitFor(async () => (await Crash.send(pair[1].url, `/v1/boxes/${boxId}`)).json.status === "running", "running")
      return boxId
    }
    const write = async (boxId: string, bytes: number) =>
      (await fetch(new URL(`/v1/boxes/${boxId}/clipboard`, pair[1].url), {
        method: "PUT",
        headers: { authorization: "Bearer sk_acme_org", "content-type": "text/plain" },
        body: "x".repeat(bytes)
      })).status
    const small = await running("clip-small")
    const large = await running("clip-large")
    expect(await write(small, 2048)).toBe(200)
    // The large clipboard leaves 4000 bytes: room for the record of a response whose input is 3000 bytes as it is
    // first stored (the quota is checked then); the record then grows with its output.
    expect(await write(large, 64 * 1024 - (await storedBytes()) - 4000)).toBe(200)
    const response = await Crash.send(pair[0].url, "/v1/responses", {
      method: "POST",
      body: { model: "boxkit-local", input: "y".repeat(3000) }
    })
    expect(response.status).toBe(200)
    expect(await storedBytes()).toBeGreaterThan(64 * 1024)
    expect(await write(small, 3072)).toBe(429)
    expect(await write(small, 1024)).toBe(200)
    expect(await write(small, 0)).toBe(200)
  })
})
