/**
 * Runs before every test file. With `isolate: false` the test files of a worker share their modules, so the `it` of
 * `@effect/vitest` is one object for all of them, and a file's top-level `layer(...)` replaces its `effect` and
 * `scoped` with testers bound to that file's layer (@effect/vitest's `makeIt` assigns onto `vitest`'s `it`). Every
 * file starts here from the methods `it` had before any file changed them.
 */
import { it } from "@effect/vitest"

const key = Symbol.for("boxkit/test/effectItMethods")
const store = globalThis as unknown as Record<symbol, Record<string, unknown> | undefined>
const methods = ["effect", "scoped", "live", "scopedLive", "flakyTest", "layer", "prop", "scopedFixtures"] as const
if (store[key] === undefined) {
  store[key] = Object.fromEntries(methods.map((name) => [name, (it as unknown as Record<string, unknown>)[name]]))
}
Object.assign(it, store[key])
