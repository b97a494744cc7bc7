/**
 * Configuring the client (README "Configuration"; docs/ASSUMPTIONS.md "Client"): from code, from the environment
 * through `Config`, and the errors of a missing setting; the typed completion-webhook option of `Responses.submit`.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Stream } from "effect"
import { BoxkitConfig } from "../../src/Client/BoxkitConfig.js"
import * as Boxkit from "../../src/Client/Boxkit.js"
import { Responses } from "../../src/Client/Responses.js"
import { Secrets } from "../../src/Client/Secrets.js"
import * as WebhookReceiver from "../../src/Client/WebhookReceiver.js"
import * as BoxkitTesting from "../../src/testing.js"

const withEnv = (env: Record<string, string>) => Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const settingsFrom = (env: Record<string, string>) =>
  Effect.exit(BoxkitConfig.pipe(Effect.provide(BoxkitConfig.layerConfig().pipe(Layer.provide(withEnv(env))))))

describe("configuration", () => {
  it.effect("BOX_BASE_URL missing: a ConfigError naming it, no default address", () =>
    Effect.gen(function*() {
      const exit = yield* settingsFrom({ BOX_API_KEY: "sk_acme_org" })
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("BOX_BASE_URL")
    }))

  it.effect("BOX_API_KEY missing: a ConfigError naming it", () =>
    Effect.gen(function*() {
      const exit = yield* settingsFrom({ BOX_BASE_URL: "http://127.0.0.1:8787/v1" })
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("BOX_API_KEY")
    }))

  it.effect("from the environment: the key Redacted, BOX_API_URL defaulting to BOX_BASE_URL", () =>
    Effect.gen(function*() {
      const settings = yield* Effect.flatten(settingsFrom({ BOX_API_KEY: "sk_secret_key", BOX_BASE_URL: "http://h:1/v1" }))
      expect(settings.baseUrl).toBe("http://h:1/v1")
      expect(settings.apiUrl).toBe("http://h:1/v1")
      expect(Redacted.value(settings.apiKey)).toBe("sk_secret_key")
      expect(`${String(settings.apiKey)} ${JSON.stringify(settings)}`).not.toContain("sk_secret_key")
      const both = yield* Effect.flatten(settingsFrom({
        BOX_API_KEY: "k",
        BOX_BASE_URL: "http://h:1/v1",
        BOX_API_URL: "http://a:2/v1"
      }))
      expect(both.apiUrl).toBe("http://a:2/v1")
    }))

  it.effect("Boxkit.layerConfig() fails to build with the ConfigError before any call", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN")).pipe(
          Effect.provide(Boxkit.layerConfig().pipe(Layer.provide(withEnv({ BOX_API_KEY: "k" }))))
        )
      )
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : "").toBe("ConfigError")
    }))
})

describe("bring your own HttpClient", () => {
  it.live("Boxkit.layerWithoutHttpClient over the stock NodeHttpClient.layerUndici: same answers, same typed errors", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets
      expect((yield* secrets.retrieve("GITHUB_TOKEN")).name).toBe("GITHUB_TOKEN")
      const missing = yield* Effect.flip(secrets.retrieve("NO_SUCH_SECRET"))
      expect(missing._tag).toBe("NotFoundError")
    }).pipe(
      Effect.provide(Layer.unwrapEffect(Effect.map(BoxkitTesting.TestService, (service) =>
        Boxkit.layerWithoutHttpClient({ apiKey: service.apiKey, baseUrl: service.baseUrl }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )))),
      Effect.provide(BoxkitTesting.layer())
    ))
})

describe("Responses.submit with completionWebhook", () => {
  it.live("the webhook reaches the receiver with the token; the URL is the response's metadata", () =>
    Effect.gen(function*() {
      const token = Redacted.make("tok_typed_option")
      const { url, completions } = yield* WebhookReceiver.stream({ token })
      const responses = yield* Responses
      const submitted = yield* responses.submit(
        { model: "boxkit-local", input: "typed webhook option", metadata: { topic: "kept" } },
        { completionWebhook: { url, token } }
      )
      expect(submitted.value.metadata).toMatchObject({ topic: "kept", completion_webhook: url })
      expect(JSON.stringify(submitted.value)).not.toContain("tok_typed_option")
      const delivered = yield* completions.pipe(Stream.take(1), Stream.runCollect)
      expect([...delivered].map((response) => response.id)).toEqual([submitted.value.id])
    }).pipe(Effect.scoped, Effect.provide(BoxkitTesting.layer())))
})
