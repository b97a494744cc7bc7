/**
 * Snapshots of the local service's state as seeds (docs/ASSUMPTIONS.md "Snapshots (local service)"), on every store
 * (memory, SQLite, PostgreSQL) and both serving paths: `GET /_local/snapshot` answers the state, a new service seeded
 * with it answers the same ids (boxes, apps, responses, API keys, secrets) and replays an idempotent create made before
 * the snapshot from the remembered answer, and boots a box the snapshot holds still creating; fresh tcp addresses do not repeat a restored one; without
 * `secret_values=include` no secret value or webhook token is in it; `POST /_local/snapshot` writes a snapshot into a
 * running service; the route refuses a non-loopback Host; a seed file that is not a valid snapshot names the member.
 */
import { NodeContext } from "@effect/platform-node"
import { Duration, Effect, type Layer, ManagedRuntime, Redacted } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Snapshot from "../../src/Server/state/Snapshot.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import type * as StateStore from "../../src/Server/state/StateStore.js"
import type { LocalServiceConfig, LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import * as Harness from "../support/Harness.js"
import { startTestDatabase, type TestDatabase } from "../support/Postgres.js"

type Store = "memory" | "sqlite" | "postgres"
type StateLayer = Layer.Layer<StateStore.StateStore, StateStore.StateStoreError, LocalServiceConfig>

const directories: Array<string> = []
const databases: Array<TestDatabase> = []
afterAll(async () => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true })
  for (const database of databases) await database.stop()
})

/** A fresh, empty store of kind `store`. */
const freshState = async (store: Store): Promise<StateLayer | undefined> => {
  if (store === "memory") return undefined
  if (store === "sqlite") {
    const directory = mkdtempSync(join(tmpdir(), "boxkit-snapshot-"))
    directories.push(directory)
    return SqlState.layerSqlite(directory)
  }
  const database = await startTestDatabase()
  databases.push(database)
  return SqlState.layerPostgres(Redacted.make(database.url))
}

/** A service on `server` over a fresh store of kind `store`, seeded with `seed`; `url` is its origin. */
const start = async (
  store: Store,
  server: LocalService.ServerKind,
  seed: Parameters<typeof LocalService.layerNode>[0] = Harness.seed,
  settings: Partial<LocalServiceSettings> = {}
) => {
  const runtime = ManagedRuntime.make(LocalService.layerNode(seed, { server, settings, state: await freshState(store) }))
  const baseUrl = await runtime.runPromise(LocalService.baseUrl)
  return { runtime, url: baseUrl.replace(/\/v1$/, "") }
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly json: any
}

/** One request to the service at `url` with the example seed's organization key (unless `key`). */
const send = async (
  url: string,
  path: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string>; key?: string } = {}
): Promise<Answer> => {
  const response = await fetch(`${url}${path}`, {
    method: options.method ?? (options.body === undefined ? "GET" : "POST"),
    headers: {
      authorization: `Bearer ${options.key ?? "sk_acme_org"}`,
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, json: text === "" ? null : JSON.parse(text) }
}

/** Waits until `condition` holds (checked every 50 ms, at most `limitMillis`): a condition, not a duration. */
const waitFor = async (condition: () => Promise<boolean>, what: string, limitMillis = 30_000) => {
  const deadline = Date.now() + limitMillis
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const appId = "app_00000000-0000-4000-8000-000000000001"
const boxBody = {
  name: "kept",
  app_id: appId,
  image: { base: "debian" },
  ingress_ports: [{ guest_port: 5432, protocol: "tcp" }]
}

/** What a service made before its snapshot: a box by an idempotent create, a secret, a response. */
const makeRecords = async (url: string) => {
  const created = await send(url, "/v1/boxes", { body: boxBody, headers: { "idempotency-key": "before-snapshot" } })
  expect(created.status).toBe(201)
  expect((await send(url, "/v1/secrets", { body: { name: "KEPT", value: "kept-value" } })).status).toBe(201)
  const response = await send(url, "/v1/responses", { body: { model: "boxkit-local", input: "hello" } })
  expect(response.status).toBe(200)
  return { boxId: created.json.box_id as string, created: created.json, responseId: response.json.id as string }
}

/** Checks that `url` answers the records of {@link makeRecords} under their ids, and replays the create. */
const expectRestored = async (url: string, made: Awaited<ReturnType<typeof makeRecords>>) => {
  const box = await send(url, `/v1/boxes/${made.boxId}`)
  expect(box.status).toBe(200)
  expect(box.json.box_id).toBe(made.boxId)
  // A box the snapshot holds still creating boots on the new service, on every store.
  await waitFor(async () => (await send(url, `/v1/boxes/${made.boxId}`)).json.status === "running", "the box to run")
  const replay = await send(url, "/v1/boxes", { body: boxBody, headers: { "idempotency-key": "before-snapshot" } })
  expect(replay.status).toBe(201)
  expect(replay.headers.get("idempotent-replayed")).toBe("true")
  expect(replay.json).toEqual(made.created)
  expect((await send(url, `/v1/responses/${made.responseId}`)).json.id).toBe(made.responseId)
  expect((await send(url, "/v1/secrets/KEPT")).status).toBe(200)
  // A user-scoped key of the seed authenticates, restored by its hash.
  expect((await send(url, `/v1/boxes/${made.boxId}`, { key: "sk_acme_ada" })).status).toBe(200)
  const apps = await send(url, "/_local/state")
  expect(apps.json.apps.map((app: { id: string }) => app.id)).toContain(appId)
}

const stores: ReadonlyArray<Store> = ["memory", "sqlite", "postgres"]
const servers: ReadonlyArray<LocalService.ServerKind> = ["fast", "platform"]

describe.each(stores)("a snapshot of the %s store", (store) => {
  it.each(servers)("seeds a new service with the same ids and remembered answers (%s path)", async (server) => {
    // Boots wait a minute on the first service: its snapshot holds the box still creating.
    const first = await start(store, server, Harness.seed, { bootDelay: Duration.minutes(1) })
    let snapshot: any
    let made: Awaited<ReturnType<typeof makeRecords>>
    try {
      made = await makeRecords(first.url)
      const taken = await send(first.url, "/_local/snapshot?secret_values=include")
      expect(taken.status).toBe(200)
      snapshot = taken.json
      expect(snapshot.version).toBe(1)
      expect(snapshot.boxes).toContainEqual(expect.objectContaining({ id: made.boxId, status: "creating" }))
      expect(snapshot.secrets).toContainEqual(expect.objectContaining({ name: "KEPT", value: "kept-value" }))
      expect(snapshot.idempotency_keys).toContainEqual(expect.objectContaining({ key: "before-snapshot", status: 201 }))
      const withoutValues = await send(first.url, "/_local/snapshot")
      expect(withoutValues.json.secret_values).toBe(false)
      expect(withoutValues.json.secrets.every((secret: object) => !("value" in secret))).toBe(true)
      expect(withoutValues.json.responses.every((response: object) => !("webhook_token" in response))).toBe(true)
    } finally {
      await first.runtime.dispose()
    }
    const seed = await Effect.runPromise(Snapshot.decode(snapshot))
    const second = await start(store, server, seed)
    try {
      await expectRestored(second.url, made)
      // A fresh tcp address does not repeat the restored box's.
      const restoredAddress = snapshot.boxes[0].listeners[0].address
      const another = await send(second.url, "/v1/boxes", { body: { ...boxBody, name: "another" } })
      expect(another.status).toBe(201)
      const addresses = (await send(second.url, `/v1/boxes/${another.json.box_id}`)).json.listeners
        .map((listener: { address: string }) => listener.address)
      expect(addresses).not.toContain(restoredAddress)
    } finally {
      await second.runtime.dispose()
    }
  }, 120_000)
})

describe("POST /_local/snapshot", () => {
  it.each(servers)("writes a snapshot into a running service and names its secrets without a value (%s path)", async (server) => {
    const first = await start("memory", server)
    const second = await start("memory", server)
    try {
      const made = await makeRecords(first.url)
      const taken = await send(first.url, "/_local/snapshot")
      const restored = await send(second.url, "/_local/snapshot", { body: taken.json })
      expect(restored.status).toBe(200)
      expect(restored.json.restored.boxes).toBe(1)
      expect(restored.json.secrets_without_value).toEqual(["org_acme/GITHUB_TOKEN", "org_acme/KEPT"])
      const box = await send(second.url, `/v1/boxes/${made.boxId}`)
      expect(box.json.box_id).toBe(made.boxId)
      const replay = await send(second.url, "/v1/boxes", { body: boxBody, headers: { "idempotency-key": "before-snapshot" } })
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(replay.json.box_id).toBe(made.boxId)
      // The secret without a value in the file keeps the value the service holds: it still exists.
      expect((await send(second.url, "/v1/secrets/GITHUB_TOKEN")).status).toBe(200)
      expect((await send(second.url, "/v1/secrets/KEPT")).status).toBe(404)
      const invalid = await send(second.url, "/_local/snapshot", { body: { ...taken.json, boxes: [{ id: "box_x" }] } })
      expect(invalid.status).toBe(400)
      expect(invalid.json.error.message).toContain("boxes[0].org_id")
    } finally {
      await first.runtime.dispose()
      await second.runtime.dispose()
    }
  }, 60_000)

  it("is refused to a Host that is not loopback, as every /_local route", async () => {
    const service = await start("memory", "fast")
    try {
      const { port } = new URL(service.url)
      const status = await new Promise<number>((resolve, reject) => {
        const outgoing = httpRequest({
          host: "127.0.0.1",
          port,
          path: "/_local/snapshot?secret_values=include",
          headers: { host: "attacker.example:80" }
        }, (incoming) => {
          incoming.resume()
          resolve(incoming.statusCode ?? 0)
        })
        outgoing.on("error", reject)
        outgoing.end()
      })
      expect(status).toBe(403)
    } finally {
      await service.runtime.dispose()
    }
  })
})

describe("a seed file that is a snapshot", () => {
  it("that is not valid fails with the member named, in one line", async () => {
    const directory = mkdtempSync(join(tmpdir(), "boxkit-snapshot-seed-"))
    directories.push(directory)
    const file = join(directory, "bad.json")
    const service = await start("memory", "fast")
    let snapshot: any
    try {
      snapshot = (await send(service.url, "/_local/snapshot")).json
    } finally {
      await service.runtime.dispose()
    }
    writeFileSync(file, JSON.stringify({ ...snapshot, organizations: [{ id: "org_x", credits: "yes" }] }))
    const error = await Effect.runPromise(
      Effect.flip(Snapshot.loadSeedOrSnapshot(file)).pipe(Effect.provide(NodeContext.layer))
    )
    expect(error.message).not.toContain("\n")
    expect(error.message).toContain("organizations[0].credits")
    expect(error.message).toContain("organizations[0].created_at")
  })
})
