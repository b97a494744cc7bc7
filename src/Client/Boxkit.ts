/**
 * The client toolkit composed: every service in one layer, from a config layer and an `HttpClient`.
 *
 * @since 0.1.0
 */
import { Layer, ManagedRuntime } from "effect"
import { Apps } from "./Apps.js"
import { BoxkitConfig } from "./BoxkitConfig.js"
import { Boxes } from "./Boxes.js"
import { Clipboard } from "./Clipboard.js"
import { EgressPolicies } from "./EgressPolicies.js"
import { Exec } from "./Exec.js"
import { Listeners } from "./Listeners.js"
import { Responses } from "./Responses.js"
import { Secrets } from "./Secrets.js"
import * as UndiciHttpClient from "./UndiciHttpClient.js"

/** Every client service: Apps, Boxes, Exec, Listeners, Clipboard, Secrets, EgressPolicies, Responses. */
export type Services = Apps | Boxes | Exec | Listeners | Clipboard | Secrets | EgressPolicies | Responses

/** Every client service; needs `BoxkitConfig` and an `HttpClient`. */
export const layerWithoutDependencies = Layer.mergeAll(
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
 * Every client service over the toolkit's own undici `HttpClient` (`UndiciHttpClient.layer`: a keep-alive agent of
 * its own, closed with the layer); needs `BoxkitConfig`.
 */
export const layer = layerWithoutDependencies.pipe(Layer.provide(UndiciHttpClient.layer))

/** Every client service configured from the environment (`BOX_API_KEY`, `BOX_BASE_URL`, `BOX_API_URL`). */
export const layerFromEnv = layer.pipe(Layer.provide(BoxkitConfig.layerConfig))

/** A runtime with every client service, for code outside Effect (`runtime.runPromise(...)`). */
export const makeRuntime = (config: Layer.Layer<BoxkitConfig>) => ManagedRuntime.make(layer.pipe(Layer.provide(config)))
