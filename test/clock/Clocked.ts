/**
 * What the clock suites share: the local service on a serving path and a store (memory, a fresh SQLite data
 * directory, a fresh PostgreSQL database) with the virtual clock, and raw requests to it (`/_local/clock`, the
 * advance, `/v1`, `/_local/state`). Every wait is an advance of the service's clock: nothing here sleeps.
 */
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as LocalService from "../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import type * as Seed from "../../src/Server/state/Seed.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as Harness from "../support/Harness.js"
import * as Postgres from "../support/Postgres.js"

/** Where a service of these suites keeps its state. */
export type Store = "memory" | "sqlite" | "postgres"

/** Every store the clock suites run on. */
export const stores: ReadonlyArray<Store> = ["memory", "sqlite", "postgres"]

/** Both serving paths. */
export const servers: ReadonlyArray<LocalService.ServerKind> = ["fast", "platform"]

/** A fresh SQLite data directory, removed with the layer. */
export const sqliteDirectory = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-clock-"))),
  (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
)

/** A fresh PostgreSQL database on the test server, dropped with the layer. */
export const postgresDatabase = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = await Postgres.startTestDatabase()
    return { server, url: await Postgres.createDatabase(server, "clock") }
  }),
  ({ server }) => Effect.promise(() => server.stop())
)

/** The state layer of `store` (undefined: in memory). */
export const stateOf = (store: Store) =>
  store === "memory"
    ? undefined
    : store === "sqlite"
    ? Layer.unwrapScoped(Effect.map(sqliteDirectory, (directory) => SqlState.layerSqlite(directory)))
    : Layer.unwrapScoped(Effect.map(postgresDatabase, ({ url }) => SqlState.layerPostgres(Redacted.make(url))))

/** The service on `server` over `store` with the virtual clock (unless `settings.clock` says otherwise). */
export const service = (
  server: LocalService.ServerKind,
  store: Store,
  settings: Partial<LocalServiceSettings> = {},
  seed: Seed.Seed = Harness.seed
) =>
  LocalService.layerNode(seed, { server, state: stateOf(store), settings: { clock: "virtual", ...settings } })

/** A JSON request to the service in context (`path` from its origin), answered as status and JSON. */
export const request = (path: string, init: { method?: string; body?: unknown; key?: string; headers?: Record<string, string> } = {}) =>
  Harness.fetchRaw(path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers: { ...Harness.auth(init.key), ...init.headers },
    ...(init.body === undefined ? {} : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) })
  })

/** The clock as `GET /_local/clock` answers it. */
export const readClock = Effect.map(request("/_local/clock"), (answer) => answer.json as ClockJson)

/** The answer of the clock routes. */
export interface ClockJson {
  readonly now: string
  readonly mode: "virtual" | "real"
  readonly offset_seconds: number
}

/** Advances the service's clock by `seconds`; the answer. */
export const advance = (seconds: number) =>
  Effect.map(request("/_local/clock/advance", { body: { seconds } }), (answer) => {
    if (answer.status !== 200) throw new Error(`advance answered ${answer.status}: ${answer.text}`)
    return answer.json as ClockJson
  })

/** The whole state as `GET /_local/state` answers it. */
export const state = Effect.map(request("/_local/state"), (answer) => answer.json)

/** The demo seed's app (organization `org_acme`, key `sk_acme_org`). */
export const appId = "app_00000000-0000-4000-8000-000000000001"

/** Creates a box in the demo app ending after `lifetimeSeconds`; its id. */
export const createBox = (name: string, lifetimeSeconds: number | null) =>
  Effect.map(
    request("/v1/boxes", { body: { name, app_id: appId, image: { base: "debian" }, max_lifetime_seconds: lifetimeSeconds } }),
    (answer) => {
      if (answer.status !== 201 && answer.status !== 200) throw new Error(`create answered ${answer.status}: ${answer.text}`)
      return answer.json.box_id as string
    }
  )

/** The status of box `id` in the service's state. */
export const boxStatus = (id: string) =>
  Effect.map(state, (current) => current.boxes.find((box: { id: string }) => box.id === id)?.status as string | undefined)
