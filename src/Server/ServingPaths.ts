/**
 * The serving paths of the local service, by name: the one module outside src/Server/http/fast/ that imports the
 * fast path (docs/decisions/0001-two-serving-paths.md). `LocalService.layerNode` (option `server`) and
 * `boxkit serve --server` choose from {@link registry}; `fast` is the default.
 *
 * To remove the fast path, delete src/Server/http/fast/ and put ServingPathsStock.ts (the same exports, the stock
 * path only) in this module's place; test/server/FastPathRemovable.test.ts does so, type-checks the result and serves
 * requests with it.
 *
 * @since 0.1.0
 */
import * as FastPath from "./http/fast/FastPath.js"
import * as PlatformServer from "./http/platform/PlatformServer.js"
import type * as ServingPath from "./http/ServingPath.js"

/**
 * Every serving path: `fast` (the service's own Node handler, the default) and `platform` (Effect's
 * `HttpApiBuilder` behind `HttpServer.serve`).
 *
 * @since 0.1.0
 * @category Serving paths
 */
export const registry = {
  paths: { fast: FastPath.servingPath, platform: PlatformServer.servingPath },
  defaultPath: "fast"
} as const satisfies ServingPath.Registry<"fast" | "platform">

/**
 * The name of a serving path of {@link registry}.
 *
 * @since 0.1.0
 * @category Serving paths
 */
export type Name = keyof typeof registry.paths

/**
 * The names of {@link registry}'s paths, the default first.
 *
 * @since 0.1.0
 * @category Serving paths
 */
export const names: readonly [Name, ...Array<Name>] = ["fast", "platform"]
