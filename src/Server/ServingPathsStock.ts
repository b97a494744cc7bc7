/**
 * The serving paths of the local service without the fast path: ServingPaths.ts's exports with the stock path
 * (`platform`, Effect's `HttpApiBuilder` behind `HttpServer.serve`) only, and the default. Put in ServingPaths.ts's
 * place once src/Server/http/fast/ is deleted (docs/decisions/0001-two-serving-paths.md); nothing here imports the
 * fast path. test/server/FastPathRemovable.test.ts proves the exchange: the copy type-checks and serves.
 *
 * @since 0.1.0
 */
import * as PlatformServer from "./http/platform/PlatformServer.js"
import type * as ServingPath from "./http/ServingPath.js"

/**
 * The stock serving path only, as the default.
 *
 * @since 0.1.0
 * @category Serving paths
 */
export const registry = {
  paths: { platform: PlatformServer.servingPath },
  defaultPath: "platform"
} as const satisfies ServingPath.Registry<"platform">

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
export const names: readonly [Name, ...Array<Name>] = ["platform"]
