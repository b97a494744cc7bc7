/**
 * The client toolkit composed: every service (Apps, Boxes, Exec, Listeners, Clipboard, Secrets, EgressPolicies,
 * Responses) in one layer.
 *
 * - {@link layer}`(options)`: configured from code, over the toolkit's own undici `HttpClient`.
 * - {@link layerConfig}`(config?)`: configured through `Config` (by default `BOX_API_KEY`, `BOX_BASE_URL`,
 *   `BOX_API_URL`), over the same client; a missing setting is a `ConfigError` naming it.
 * - {@link layerWithoutHttpClient}`(options)`: bring your own `HttpClient` (`NodeHttpClient.layerUndici`,
 *   `FetchHttpClient.layer`, a test double); every behaviour (typed errors, retries, deadlines) is the same.
 *
 * Source: spec "Conventions" (`{base_url}`, `{api_url}`); docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { Cause, type Config, type ConfigError, Exit, Layer, ManagedRuntime } from "effect"
import { Apps } from "./Apps.js"
import { BoxkitConfig, type BoxkitOptions, fromEnv } from "./BoxkitConfig.js"
import { Boxes } from "./Boxes.js"
import { Clipboard } from "./Clipboard.js"
import { EgressPolicies } from "./EgressPolicies.js"
import { Exec } from "./Exec.js"
import { Listeners } from "./Listeners.js"
import { Responses } from "./Responses.js"
import { Secrets } from "./Secrets.js"
import * as UndiciHttpClient from "../Http/UndiciHttpClient.js"

/**
 * Every client service: Apps, Boxes, Exec, Listeners, Clipboard, Secrets, EgressPolicies, Responses.
 *
 * @since 0.1.0
 * @category Models
 */
export type Services = Apps | Boxes | Exec | Listeners | Clipboard | Secrets | EgressPolicies | Responses

/**
 * Every client service; needs `BoxkitConfig` and an `HttpClient`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerServices: Layer.Layer<Services, never, BoxkitConfig | HttpClient.HttpClient> = Layer.mergeAll(
  Apps.Default,
  Boxes.Default,
  Exec.Default,
  Listeners.Default,
  Clipboard.Default,
  Secrets.Default,
  EgressPolicies.Default,
  Responses.Default
)

/**
 * Every client service configured from code, over your own `HttpClient`, e.g.
 * `Boxkit.layerWithoutHttpClient(options).pipe(Layer.provide(NodeHttpClient.layerUndici))`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerWithoutHttpClient = (options: BoxkitOptions): Layer.Layer<Services, never, HttpClient.HttpClient> =>
  layerServices.pipe(Layer.provide(BoxkitConfig.layer(options)))

/**
 * Every client service configured from code, over the toolkit's own undici `HttpClient` (a keep-alive agent of its
 * own, closed with the layer), e.g. `Boxkit.layer({ apiKey: Redacted.make(key), baseUrl: "http://127.0.0.1:8787/v1" })`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: BoxkitOptions): Layer.Layer<Services> =>
  layerWithoutHttpClient(options).pipe(Layer.provide(UndiciHttpClient.layer))

/**
 * Every client service configured through `Config` (default: `BOX_API_KEY`, `BOX_BASE_URL` and, optionally,
 * `BOX_API_URL` from the environment), over the toolkit's own undici `HttpClient`. Fails with a `ConfigError` naming
 * a missing setting.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config<BoxkitOptions> = fromEnv
): Layer.Layer<Services, ConfigError.ConfigError> =>
  layerServices.pipe(Layer.provide(BoxkitConfig.layerConfig(config)), Layer.provide(UndiciHttpClient.layer))

/**
 * `runtime` with `runPromise` and `runSync` failing with the failure itself: a `Promise` rejected with (or a `throw`
 * of) the typed error class (`NotFoundError`, `WaitTimeoutError`, ...), so `instanceof` and `_tag` work in code
 * outside Effect, as other SDKs throw their error classes. With several failures it is the first; without one, the
 * first defect, or an `InterruptedException` when the fiber was interrupted (`Cause.squash`). Every other member is
 * `runtime`'s own: `runPromiseExit` gives the whole `Exit`, and `ManagedRuntime.make(layer)` keeps Effect's own
 * behaviour (a `FiberFailure` that wraps the cause).
 *
 * Source: docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 * @category Constructors
 */
export const rejectingWithFailures = <R, ER>(
  runtime: ManagedRuntime.ManagedRuntime<R, ER>
): ManagedRuntime.ManagedRuntime<R, ER> => {
  const failureOf = <E>(cause: Cause.Cause<E>): unknown => Cause.squash(cause)
  const members: Pick<ManagedRuntime.ManagedRuntime<R, ER>, "runPromise" | "runSync"> = {
    runPromise: (effect, options) =>
      runtime.runPromiseExit(effect, options).then((exit) =>
        Exit.isSuccess(exit) ? exit.value : Promise.reject(failureOf(exit.cause))
      ),
    runSync: (effect) => {
      const exit = runtime.runSyncExit(effect)
      if (Exit.isSuccess(exit)) return exit.value
      throw failureOf(exit.cause)
    }
  }
  // Inherits everything else (the Effect protocol, `dispose`, `runFork`, ...) from the ManagedRuntime.
  return Object.assign(Object.create(runtime), members)
}

/**
 * A runtime with every client service, for code outside Effect: `const runtime = Boxkit.makeRuntime(options)`, then
 * `await runtime.runPromise(Effect.flatMap(Boxes, (boxes) => boxes.retrieve(id)))`; `await runtime.dispose()` closes
 * its connections. A failed call rejects with the typed error itself (`error instanceof NotFoundError`,
 * `error._tag === "NotFoundError"`; see {@link rejectingWithFailures}); `runtime.runPromiseExit` gives the `Exit`.
 *
 * Source: docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeRuntime = (options: BoxkitOptions): ManagedRuntime.ManagedRuntime<Services, never> =>
  rejectingWithFailures(ManagedRuntime.make(layer(options)))
