/**
 * The README's daemon and configuration examples, type-checked by `npm test` so that they do not rot. Runs against
 * `boxkit serve` on port 8787: `BOX_API_KEY=sk_acme_org BOX_BASE_URL=http://127.0.0.1:8787/v1 npx tsx scratchpad/daemon.ts`
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Config, Effect, Layer, Redacted, Stream } from "effect"
import { Boxkit, type BoxkitOptions, Responses, WebhookReceiver } from "../src/index.js"

const options: BoxkitOptions = { apiKey: Redacted.make("sk_acme_org"), baseUrl: "http://127.0.0.1:8787/v1" }

/** Every way to configure the client (README "Configuration"). */
export const layers = [
  Boxkit.layer({ ...options, retry: { maxAttempts: 3 } }),
  Boxkit.layerConfig(),
  Boxkit.layerConfig(Config.all({
    apiKey: Config.redacted("MY_KEY"),
    baseUrl: Config.string("MY_URL"),
    apiUrl: Config.succeed(undefined),
    retry: Config.succeed(undefined)
  })),
  Boxkit.layerWithoutHttpClient(options).pipe(Layer.provide(NodeHttpClient.layerUndici))
]

const token = Redacted.make(crypto.randomUUID())
const program = Effect.gen(function*() {
  const { url, completions } = yield* WebhookReceiver.stream({ token, port: 0 })
  const responses = yield* Responses
  yield* responses.submit({ model: "boxkit-local", input: "Summarize the logs." }, { completionWebhook: { url, token } })
  const finished = yield* completions.pipe(Stream.take(1), Stream.runHead)
  yield* Effect.log(finished)
}).pipe(Effect.scoped, Effect.provide(Boxkit.layerConfig()))

if (process.argv[1]?.endsWith("daemon.ts")) Effect.runPromise(program)
