/**
 * A suite over one layer, built once before its tests and closed after them: `@effect/vitest`'s
 * `layer(L)(name, (it) => …)` without its side effect on the `it` every test file shares.
 *
 * `@effect/vitest` 0.30's `layer` assigns its testers (`effect`, `scoped`, `prop`, `flakyTest`, `layer`) onto vitest's
 * own `it` object (Effect-TS/effect#4382 made the named form do so too), which is `@effect/vitest`'s exported `it`. With
 * `isolate: false` (vitest.config.ts) the test files of a worker share that object, so a later file's `it.effect`
 * would run its tests on the closed runtime of an earlier file's layer. Effect 4's `@effect/vitest` stops mutating it
 * (Effect-TS/effect-smol#2177); until then the suites use this `layer`, and `@effect/vitest`'s `it` stays as loaded.
 */
import { afterAll, beforeAll, describe, live, type Vitest } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Logger, Scope, TestContext, type TestServices } from "effect"

/** The tests of a suite: `@effect/vitest`'s tester without `each` and `prop`, over the suite's layer `R`. */
export interface SuiteTester<R> extends Vitest.Test<R> {
  readonly skip: Vitest.Test<R>
  readonly only: Vitest.Test<R>
  readonly fails: Vitest.Test<R>
  readonly skipIf: (condition: unknown) => Vitest.Test<R>
  readonly runIf: (condition: unknown) => Vitest.Test<R>
}

/** What the body of a {@link layer} suite is given: `effect`, and `scoped` (with a Scope per test). */
export interface SuiteMethods<R> {
  readonly effect: SuiteTester<R>
  readonly scoped: SuiteTester<R | Scope.Scope>
}

/** The test services of `it.effect` (TestClock, ...), with the default logger removed as `@effect/vitest` does. */
const testEnvironment = TestContext.TestContext.pipe(Layer.provide(Logger.remove(Logger.defaultLogger)))

const testerOver = <R>(
  provide: <A, E>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, never>
): SuiteTester<R> => {
  const over = (test: Vitest.Test<never>): Vitest.Test<R> => (name, self, timeout) =>
    test(name, (context) => provide(self(context)), timeout)
  return Object.assign(over(live), {
    skip: over(live.skip),
    only: over(live.only),
    fails: over(live.fails),
    skipIf: (condition: unknown) => over(live.skipIf(condition)),
    runIf: (condition: unknown) => over(live.runIf(condition))
  })
}

/**
 * `layer(L, options)(name, (it) => …)`: a `describe` block whose tests run with `L`'s services (and the test services,
 * TestClock among them, unless `excludeTestServices`). `L` is built once, in the block's `beforeAll`, and closed in
 * its `afterAll`; `timeout` bounds both hooks (default: vitest's `hookTimeout`), so a layer that starts a server needs
 * one that matches what the server's start allows.
 */
export const layer = <R, E, const ExcludeTestServices extends boolean = false>(
  suiteLayer: Layer.Layer<R, E>,
  options: {
    readonly timeout?: Duration.DurationInput
    readonly excludeTestServices?: ExcludeTestServices
  } = {}
) =>
(
  name: string,
  body: (it: SuiteMethods<R | (ExcludeTestServices extends true ? never : TestServices.TestServices)>) => void
): void =>
  void describe(name, () => {
    type Services = R | (ExcludeTestServices extends true ? never : TestServices.TestServices)
    const withTestServices = (options.excludeTestServices === true
      ? suiteLayer
      : Layer.provideMerge(suiteLayer, testEnvironment)) as Layer.Layer<Services, E>
    const scope = Effect.runSync(Scope.make())
    const runtime = Layer.toRuntime(withTestServices).pipe(
      Scope.extend(scope),
      Effect.orDie,
      Effect.cached,
      Effect.runSync
    )
    const hookTimeout = options.timeout === undefined ? undefined : Duration.toMillis(options.timeout)
    beforeAll(() => Effect.runPromise(Effect.asVoid(runtime)), hookTimeout)
    afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), hookTimeout)
    body({
      effect: testerOver<Services>((self) => Effect.flatMap(runtime, (services) => Effect.provide(self, services))),
      scoped: testerOver<Services | Scope.Scope>((self) =>
        Effect.flatMap(runtime, (services) => Effect.provide(Effect.scoped(self), services))
      )
    })
  })
