/**
 * boxkit/testing: the local box service embedded on a free port and the client wired to it, as one `Layer`, for the
 * tests of your own code.
 *
 * ```ts
 * import { layer } from "@effect/vitest"
 * import { Boxes } from "boxkit"
 * import * as BoxkitTesting from "boxkit/testing"
 *
 * layer(BoxkitTesting.layer())("my code", (it) => {
 *   it.live("creates a box", () => Effect.gen(function*() { const boxes = yield* Boxes; ... }))
 * })
 * ```
 *
 * Clocks: the embedded service always runs on the real clock, whatever the test provides, so it boots boxes and
 * delivers webhooks as in production. The client follows the clock of the fiber that calls it: under `it.effect`
 * (Effect's `TestClock`) its waits (`awaitStatus`, `awaitCompletion`, retry backoff, deadlines) do not pass until the
 * test moves the clock with `TestClock.adjust`; use `it.live` for tests that wait on the service. A `layer(...)`
 * suite of `@effect/vitest` builds this layer once for the suite; `it.layer` or `Effect.provide` per test gives each
 * test a fresh service.
 *
 * Source: docs/ASSUMPTIONS.md "The test layer".
 *
 * @since 0.1.0
 */
import type { HttpServerError } from "@effect/platform"
import { Context, DefaultServices, Effect, Layer, Redacted, Schema } from "effect"
import * as Boxkit from "./Client/Boxkit.js"
import type { RetrySettings } from "./Client/BoxkitConfig.js"
import * as DemoSeed from "./Server/state/DemoSeed.js"
import * as LocalService from "./Server/LocalService.js"
import type { LocalServiceSettings } from "./Server/LocalServiceConfig.js"
import * as Seed from "./Server/state/Seed.js"

/**
 * The embedded service as a test sees it: its `baseUrl` (`http://127.0.0.1:PORT/v1`, both `{base_url}` and
 * `{api_url}`), the `apiKey` the client uses, and `state`, the whole state of the service as `GET /_local/state`
 * shows it (organizations, boxes, idempotency records, deliveries, audit log).
 *
 * @since 0.1.0
 * @category Models
 */
export interface EmbeddedService {
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly state: Effect.Effect<unknown>
}

/**
 * The embedded service of {@link layer}.
 *
 * @since 0.1.0
 * @category Tags
 */
export class TestService extends Context.Tag("boxkit/testing/TestService")<TestService, EmbeddedService>() {}

/**
 * Options of {@link layer}: the client's `apiKey` (default `sk_acme_org`, organization-scoped in the example seed),
 * the `seed` (default the example seed, `DemoSeed.example`; the seed file format of the README), the service's
 * `settings` (caps, lifetimes, faults) and the client's `retry` overrides.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly apiKey?: string | undefined
  readonly seed?: Seed.SeedInput | undefined
  readonly settings?: Partial<LocalServiceSettings> | undefined
  readonly retry?: Partial<RetrySettings> | undefined
}

/**
 * The local box service on 127.0.0.1 and a free port, seeded, plus every client service pointed at it, and
 * {@link TestService}. The service and its connections close with the layer. Fails with `ServeError` when it cannot
 * listen; dies when the seed does not decode (the message names the field).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options = {}): Layer.Layer<Boxkit.Services | TestService, HttpServerError.ServeError> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const seed = yield* Schema.decodeUnknown(Seed.Seed)(options.seed ?? DemoSeed.example).pipe(Effect.orDie)
    const service = yield* Layer.build(
      LocalService.layerNode(seed, { settings: options.settings ?? {} }).pipe(
        // In memory, the state store cannot fail to open.
        Layer.catchAll((error) => error._tag === "StateStoreError" ? Layer.die(error) : Layer.fail(error)),
        // The service runs on the real clock even when a test provides TestClock to the layer.
        Layer.locally(DefaultServices.currentServices, DefaultServices.liveServices)
      )
    )
    const baseUrl = yield* LocalService.baseUrl.pipe(Effect.provide(service))
    const apiKey = Redacted.make(options.apiKey ?? "sk_acme_org")
    const embedded: EmbeddedService = {
      baseUrl,
      apiKey,
      state: LocalService.localState.pipe(Effect.provide(service))
    }
    return Layer.merge(
      Boxkit.layer({ apiKey, baseUrl, retry: options.retry }),
      Layer.succeed(TestService, embedded)
    )
  }))
