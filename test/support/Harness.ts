/**
 * Test harness: the real local service on port 0 and the real client against it over HTTP.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RetrySettings } from "../../src/Client/BoxkitConfig.js"
import * as Boxkit from "../../src/Client/Boxkit.js"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"

/** The decoded example seed. */
export const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)

/**
 * One way to run a server-facing suite: the serving path of the service under test (`fast`, or `platform`: the stock
 * path, PlatformServer.ts), where it keeps its state (in memory, or a fresh SQLite data directory per service, removed
 * with it), the SQL client of that SQLite store (SqlState.ts `client`: the default `prepared` one of SqliteClient.ts,
 * or `stock`, `@effect/sql-libsql` over `@libsql/client` as they are) and the client's `HttpClient` (`toolkit`, the
 * toolkit's own through `Boxkit.layer`, or `stock`, `@effect/platform-node`'s `NodeHttpClient.layerUndici` through
 * `Boxkit.layerWithoutHttpClient`). `name` labels the suite (`describe.each(...)("... ($name)", ...)`).
 */
export interface Variant {
  readonly name: string
  readonly server: LocalService.ServerKind
  readonly state: "memory" | "sqlite"
  readonly sqliteClient: "prepared" | "stock"
  readonly client: "toolkit" | "stock"
}

/** A variant on `server`, in memory with the toolkit client unless `options` says otherwise. */
export const variant = (
  server: LocalService.ServerKind,
  options: Partial<Pick<Variant, "state" | "sqliteClient" | "client">> = {}
): Variant => {
  const state = options.state ?? "memory"
  const sqliteClient = options.sqliteClient ?? "prepared"
  const client = options.client ?? "toolkit"
  const labels = [
    server,
    ...(state === "sqlite" ? [sqliteClient === "stock" ? "sqlite (stock client)" : "sqlite"] : []),
    ...(client === "stock" ? ["stock HttpClient"] : [])
  ]
  return { name: labels.join(", "), server, state, sqliteClient, client }
}

/** The fast serving path, in memory, the toolkit client: the one variant of the suites that are not server-facing. */
export const fast: Variant = variant("fast")

/**
 * The variants a server-facing suite runs on: both serving paths (they must agree: docs/decisions/0001), and with
 * `sqlite` the fast path once more on SQLite (the conformance suites that read or write state: the durable store
 * answers as the in-memory one does), with `stockClient` once more over the stock `HttpClient` (the client's
 * behaviour under hostile networks, and its deadlines).
 */
export const variants = (
  extra: { readonly sqlite?: boolean; readonly stockClient?: boolean } = {}
): ReadonlyArray<Variant> => [
  fast,
  variant("platform"),
  ...(extra.sqlite === true ? [variant("fast", { state: "sqlite" })] : []),
  ...(extra.stockClient === true ? [variant("fast", { client: "stock" })] : [])
]

/** A SQLite store over `client` in a fresh temporary data directory, removed when the layer closes. */
export const sqliteStateOf = (client: Variant["sqliteClient"]) =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-state-"))),
      (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
    ),
    (directory) => SqlState.layerSqlite(directory, { client })
  ))

/** The local service of `on` on port 0 (its serving path and store), with its services in the output. */
export const serviceOn = (on: Variant, settings: Partial<LocalServiceSettings> = {}, seedOverride: Seed.Seed = seed) =>
  LocalService.layerNode(seedOverride, {
    settings,
    server: on.server,
    state: on.state === "sqlite" ? sqliteStateOf(on.sqliteClient) : undefined
  })

/** A client for `apiKey` against the service in context, over the `HttpClient` of `on`. */
export const clientOn = (on: Variant, apiKey = "sk_acme_org", retry: Partial<RetrySettings> = {}) =>
  Layer.unwrapEffect(
    Effect.map(LocalService.baseUrl, (baseUrl) =>
      on.client === "stock"
        ? Boxkit.layerWithoutHttpClient({ apiKey, baseUrl, retry }).pipe(Layer.provide(NodeHttpClient.layerUndici))
        : Boxkit.layer({ apiKey, baseUrl, retry }))
  )

/** The service of `on` and a client for `apiKey`, both in the output. */
export const serviceWithClientOn = (
  on: Variant,
  apiKey = "sk_acme_org",
  settings: Partial<LocalServiceSettings> = {},
  retry: Partial<RetrySettings> = {}
) => clientOn(on, apiKey, retry).pipe(Layer.provideMerge(serviceOn(on, settings)))

/** Raw fetch against the service in context: path relative to the origin (e.g. `/v1/boxes`). */
export const fetchRaw = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    Effect.promise(async () => {
      const response = await fetch(baseUrl.replace(/\/v1$/, "") + path, init)
      const text = await response.text()
      let json: any = undefined
      try {
        json = text === "" ? undefined : JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: response.status, headers: response.headers, text, json }
    }))

/** Headers with a bearer key and a JSON content type. */
export const auth = (key = "sk_acme_org", extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
  ...extra
})
