/**
 * The local service on PostgreSQL when the database fails, as a failing database would act (docs/ASSUMPTIONS.md
 * "Durable state"; spec "Errors" rule 2). The service reaches PostgreSQL through a TCP proxy the test controls:
 * - the database stops answering (the proxy holds every byte, as a server stopped with SIGSTOP would): a request is
 *   answered 503 `server_error` with `Retry-After` once the statement timeout has passed, instead of hanging; when the
 *   database answers again, the service serves again without a restart;
 * - the database goes away (connections cut, new ones refused, as a killed server): reads and writes are answered 503
 *   with `Retry-After`, never 500; after it is back, every write that was answered 2xx is stored, and new writes work.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Duration, type Layer, ManagedRuntime, Redacted, Schema } from "effect"
import { createServer, connect, type Server, type Socket } from "node:net"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as Postgres from "../support/Postgres.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

/** A TCP proxy to `target` whose traffic the test holds, cuts or lets through. */
const startProxy = async (target: { host: string; port: number }) => {
  const pairs = new Set<readonly [Socket, Socket]>()
  let mode: "through" | "held" | "cut" = "through"
  const server: Server = createServer((client) => {
    if (mode === "cut") return client.destroy()
    const upstream = connect(target.port, target.host)
    const pair = [client, upstream] as const
    pairs.add(pair)
    const forget = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", forget).on("close", forget)
    upstream.on("error", forget).on("close", forget)
    client.pipe(upstream)
    upstream.pipe(client)
    if (mode === "held") for (const socket of pair) socket.pause()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  return {
    port: typeof address === "object" && address !== null ? address.port : 0,
    /** Every byte held in both directions, connections kept open. */
    hold: () => {
      mode = "held"
      for (const pair of pairs) for (const socket of pair) socket.pause()
    },
    /** Every connection destroyed, new ones refused. */
    cut: () => {
      mode = "cut"
      for (const [client, upstream] of pairs) {
        client.destroy()
        upstream.destroy()
      }
    },
    /** Traffic flows again. */
    restore: () => {
      mode = "through"
      for (const pair of pairs) for (const socket of pair) socket.resume()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [client, upstream] of pairs) {
          client.destroy()
          upstream.destroy()
        }
        server.close(() => resolve())
      })
  }
}

let database: Postgres.TestDatabase
let proxy: Awaited<ReturnType<typeof startProxy>>
const serviceOn = (url: string) =>
  LocalService.layerNode(seed, { state: SqlState.layerPostgres(Redacted.make(url), { statementTimeout: Duration.seconds(1) }) })
let runtime: ManagedRuntime.ManagedRuntime<Layer.Layer.Success<ReturnType<typeof serviceOn>>, Layer.Layer.Error<ReturnType<typeof serviceOn>>>
let baseUrl = ""

beforeAll(async () => {
  database = await Postgres.startTestDatabase()
  const target = new URL(database.url)
  proxy = await startProxy({ host: target.hostname, port: Number(target.port) })
  target.hostname = "127.0.0.1"
  target.port = String(proxy.port)
  runtime = ManagedRuntime.make(serviceOn(target.toString()))
  baseUrl = await runtime.runPromise(LocalService.baseUrl)
}, 120_000)

afterAll(async () => {
  proxy?.restore()
  await runtime?.dispose()
  await proxy?.close()
  await database?.stop()
}, 60_000)

const headers = { authorization: "Bearer sk_acme_org", "content-type": "application/json" }

/** One request, allowed 20 s (a hang fails the test instead of holding it): status, Retry-After, envelope type. */
const send = async (path: string, init: RequestInit = {}) => {
  const answer = await fetch(`${baseUrl}${path}`, { headers, signal: AbortSignal.timeout(20_000), ...init })
  const body = await answer.json().catch(() => undefined)
  return { status: answer.status, retryAfter: answer.headers.get("retry-after"), type: body?.error?.type as string | undefined }
}

const createSecret = (name: string) => send("/secrets", { method: "POST", body: JSON.stringify({ name, value: `value of ${name}` }) })

/** Creates a box with the Idempotency-Key `key`: status, its id, and whether the answer was replayed. */
const createBox = async (key: string) => {
  const answer = await fetch(`${baseUrl}/boxes`, {
    method: "POST",
    headers: { ...headers, "idempotency-key": key },
    body: JSON.stringify({ name: key, app_id: "app_00000000-0000-4000-8000-000000000001", image: { base: "debian" } }),
    signal: AbortSignal.timeout(20_000)
  })
  const body = await answer.json()
  return {
    status: answer.status,
    retryAfter: answer.headers.get("retry-after"),
    type: body?.error?.type as string | undefined,
    boxId: body?.box_id as string | undefined,
    replayed: answer.headers.get("idempotent-replayed")
  }
}

/** Sends `path` until it answers 200 (at most 60 tries, 250 ms apart): the service serves again. */
const untilServed = async (path: string) => {
  for (let attempt = 0; attempt < 60; attempt++) {
    if ((await send(path)).status === 200) return true
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return false
}

describe("the local service on PostgreSQL, when the database fails", () => {
  it("answers 503 with Retry-After while the database does not answer, then serves again", async () => {
    expect((await send("/secrets/GITHUB_TOKEN")).status).toBe(200)
    proxy.hold()
    const held = await send("/secrets/GITHUB_TOKEN")
    expect(held).toEqual({ status: 503, retryAfter: "2", type: "server_error" })
    proxy.restore()
    expect(await untilServed("/secrets/GITHUB_TOKEN")).toBe(true)
  }, 60_000)

  it("answers 503 with Retry-After to a crowd of requests while the database does not answer (more than its pool holds)", async () => {
    expect((await send("/secrets/GITHUB_TOKEN")).status).toBe(200)
    proxy.hold()
    // 40 requests at once for a pool of 10 connections: most wait for a connection, not for a statement; each is
    // answered 503 with Retry-After, whether its API key is looked up, its Idempotency-Key claimed, its statement
    // run, or its connection never comes.
    const crowd = await Promise.all(Array.from({ length: 40 }, (_, index) =>
      index % 4 === 0
        ? send("/secrets/GITHUB_TOKEN")
        : index % 4 === 1
        ? createSecret(`CROWD_${index}`)
        : index % 4 === 2
        ? createBox(`crowd-${index}`)
        // An API key the service has not seen yet: only the database can tell whether it exists.
        : send("/secrets/GITHUB_TOKEN", { headers: { ...headers, authorization: `Bearer sk_not_seen_${index}` } })))
    proxy.restore()
    const statuses = new Map<string, number>()
    for (const answer of crowd) {
      const seen = `${answer.status} ${answer.retryAfter} ${answer.type}`
      statuses.set(seen, (statuses.get(seen) ?? 0) + 1)
    }
    expect(Object.fromEntries(statuses)).toEqual({ "503 2 server_error": 40 })
    expect(await untilServed("/secrets/GITHUB_TOKEN")).toBe(true)
  }, 90_000)

  it("answers 503 with Retry-After while the database is gone, stores every write it acknowledged, and recovers", async () => {
    const acknowledged: Array<string> = []
    for (let index = 0; index < 3; index++) {
      const name = `BEFORE_${index}`
      if ((await createSecret(name)).status === 201) acknowledged.push(name)
    }
    proxy.cut()
    const during = await Promise.all([
      send("/secrets/GITHUB_TOKEN"),
      createBox("outage-box"),
      ...[0, 1, 2].map((index) => createSecret(`DURING_${index}`))
    ])
    for (const answer of during) {
      expect({ status: answer.status, retryAfter: answer.retryAfter, type: answer.type })
        .toEqual({ status: 503, retryAfter: "2", type: "server_error" })
    }
    proxy.restore()
    expect(await untilServed("/secrets/GITHUB_TOKEN")).toBe(true)
    // The create refused during the outage claimed nothing: its key works once the database is back, and replays.
    const box = await createBox("outage-box")
    expect(box.status).toBe(201)
    const replay = await createBox("outage-box")
    expect([replay.status, replay.replayed, replay.boxId]).toEqual([201, "true", box.boxId])
    expect((await createSecret("AFTER")).status).toBe(201)
    acknowledged.push("AFTER")
    for (const name of acknowledged) expect((await send(`/secrets/${name}`)).status, name).toBe(200)
    expect(acknowledged).toHaveLength(4)
  }, 60_000)
})
