/**
 * The README's configuration example (README "Configuration"), against the sources: each way to configure the client
 * makes the same call. With `boxkit serve --port 8787` running and BOX_API_KEY=sk_acme_org
 * BOX_BASE_URL=http://127.0.0.1:8787/v1 set, `npx tsx scratchpad/configuration.ts` prints "5 layers, one app".
 * Type-checked by `npm test`.
 */
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Config, Effect, Layer, Redacted } from "effect"
import { Apps, Boxkit, type BoxkitOptions, Transport } from "../src/index.js"

// From code: the values come from wherever your program keeps them.
const options: BoxkitOptions = {
  apiKey: Redacted.make(process.env["BOX_API_KEY"] ?? "sk_acme_org"),
  baseUrl: process.env["BOX_BASE_URL"] ?? "http://127.0.0.1:8787/v1",
  retry: { maxAttempts: 3 },
  // Sent with every request, beside `User-Agent: boxkit/<version>` (a Redacted value is never logged).
  headers: { "X-Team": "search" },
  // Your own step on every request and answer (logging, a proxy's header, a test double); still retried by boxkit.
  transformClient: HttpClient.tapRequest((request) => Effect.logDebug(`${request.method} ${request.url}`))
}
const fromCode = Boxkit.layer(options)
// From the environment (BOX_API_KEY, BOX_BASE_URL, BOX_API_URL; a missing variable is a ConfigError naming it)
const fromEnvironment = Boxkit.layerConfig()
// From any Config
const fromConfig = Boxkit.layerConfig(Config.all({
  apiKey: Config.redacted("BOX_API_KEY"),
  baseUrl: Config.string("BOX_BASE_URL"),
  apiUrl: Config.succeed(undefined),
  retry: Config.succeed(undefined)
}))
// Your own HttpClient (the stock undici or fetch client, a test double): every behaviour stays the same
const onStockClient = Boxkit.layerWithoutHttpClient(options).pipe(Layer.provide(NodeHttpClient.layerUndici))

const appId = Effect.flatMap(Apps, (apps) => apps.find("configuration", { mintIfMissing: true })).pipe(
  Effect.map((app) => app.id)
)

const ids = await Promise.all(
  [fromCode, fromEnvironment, fromConfig, onStockClient].map((layer) => Effect.runPromise(Effect.provide(appId, layer)))
)
// The HTTP status and headers of the answer beside the value, for any call.
const { response } = await Effect.runPromise(Effect.provide(Transport.withResponse(appId), fromCode))
console.log(`apps/find answered ${response.status} (${response.headers["content-type"]})`)
// Outside Effect: a runtime, disposed when you are done (it closes the client's connections).
const runtime = Boxkit.makeRuntime(options)
ids.push(await runtime.runPromise(appId))
await runtime.dispose()
console.log(`${ids.length} layers, ${new Set(ids).size === 1 ? "one app" : "different apps"}`)
