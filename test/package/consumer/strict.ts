// A strict NodeNext ESM consumer: every common path of the client, the test layer and the local service, typed.
import { Config, Duration, Effect, Layer, Redacted } from "effect"
import {
  Apps,
  type BoxFailedError,
  Boxes,
  Boxkit,
  BoxkitConfig,
  type BoxkitOptions,
  Ids,
  NotFoundError,
  Responses,
  Retry,
  Transport,
  type WaitTimeoutError,
  WebhookReceiver
} from "boxkit"
import * as BoxesModule from "boxkit/Boxes"
import { LocalService, Seed } from "boxkit/local"
import * as BoxkitTesting from "boxkit/testing"

const options: BoxkitOptions = { apiKey: Redacted.make("sk_acme_org"), baseUrl: "http://127.0.0.1:8787/v1" }

export const program = Effect.gen(function*() {
  const app = yield* (yield* Apps).find("strict", { mintIfMissing: true })
  const boxes = yield* Boxes
  const created = yield* boxes.create({ name: "strict", app_id: app.id, image: { base: "debian" } })
  const box = yield* boxes.awaitStatus(created.value.box_id, "running", { timeout: Duration.seconds(30) })
  const again = yield* boxes.retrieve(Ids.BoxId.make(box.box_id))
  const answer = yield* (yield* Responses).submit(
    { model: "boxkit-local", input: "Hello" },
    { completionWebhook: { url: "http://127.0.0.1:9999/hook", token: Redacted.make("token") } }
  )
  return [again.status, answer.value.status] as const
}).pipe(
  Effect.catchTag("NotFoundError", (error: NotFoundError) => Effect.succeed([error.message, ""] as const)),
  Effect.catchTags({
    BoxFailedError: (error: BoxFailedError) => Effect.succeed([error.message, ""] as const),
    WaitTimeoutError: (error: WaitTimeoutError) => Effect.succeed([error.message, ""] as const)
  }),
  Transport.withRetry({ maxAttempts: 2 })
)

export const fromCode = program.pipe(Effect.provide(Boxkit.layer(options)))
export const fromEnv = program.pipe(Effect.provide(Boxkit.layerConfig()))
export const fromConfig = program.pipe(Effect.provide(Boxkit.layerConfig(Config.all({
  apiKey: Config.redacted("MY_KEY"),
  baseUrl: Config.string("MY_URL"),
  apiUrl: Config.succeed(undefined),
  retry: Config.succeed(undefined)
}))))
export const inTests = program.pipe(Effect.provide(BoxkitTesting.layer({ apiKey: "sk_acme_ada" })))
export const config: Layer.Layer<BoxkitConfig> = BoxkitConfig.layer(options)
export const awaitOptions: BoxesModule.AwaitOptions = { timeout: Duration.seconds(5) }
export const schedule = Retry.schedule
export const receiver = WebhookReceiver.layer({ handler: () => Effect.void })
export const local = Effect.gen(function*() {
  const seed = yield* Seed.decode({ organizations: [] })
  return seed
})
export const service = LocalService.baseUrl
