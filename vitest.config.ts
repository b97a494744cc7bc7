import { defineConfig } from "vitest/config"

/**
 * Test files that need modules no other file has loaded in their process (what is loaded at start): they run in a
 * project of their own with `isolate: true`; every other file shares its worker's modules with the files before it.
 */
const needFreshModules = ["test/server/TokenizerLoading.test.ts"]

/** The suites that talk to the local service: they run once per serving path (fast, and the stock platform path). */
const serverFacing = [
  "test/conformance/**/*.test.ts",
  "test/resilience/**/*.test.ts",
  "test/responses/**/*.test.ts",
  "test/server/**/*.test.ts",
  // The abuse suites whose answers depend on the serving path (Quotas and DeliveryLog do not: fast only).
  "test/abuse/LocalRoutes.test.ts",
  "test/abuse/Webhooks.test.ts",
  "test/abuse/SlowClients.test.ts",
  "test/abuse/Limits.test.ts",
  "test/EndToEnd.test.ts",
  "test/Domain.test.ts"
]

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // The files of a worker share their modules (effect, the service's sources): each file is no longer loaded and
    // compiled again from scratch, which took more time than the tests themselves (collect about 250 s of the run).
    // So they share @effect/vitest's `it` too, which its `layer()` would change: suites over a layer use
    // test/support/SuiteLayer.ts instead. Files that need a fresh process state: `needFreshModules`.
    isolate: false,
    globalSetup: ["test/support/BuildCommand.ts"],
    projects: [
      { extends: true, test: { name: "fast", include: ["test/**/*.test.ts"], exclude: needFreshModules } },
      { extends: true, test: { name: "fresh-modules", include: needFreshModules, isolate: true } },
      {
        extends: true,
        test: { name: "platform", include: serverFacing, exclude: needFreshModules, env: { BOXKIT_TEST_SERVER: "platform" } }
      },
      // The conformance suites that read or write state, once more with the state in SQLite (a fresh data directory
      // per service): the durable store answers as the in-memory one does (test/durability has the restart and crash
      // tests). Left out: the suites of input validation (nothing is stored) and those that build their own service.
      {
        extends: true,
        test: {
          name: "sqlite",
          include: ["test/conformance/**/*.test.ts", "test/abuse/Quotas.test.ts"],
          exclude: [
            "test/conformance/Fuzz.test.ts",
            "test/conformance/Validation.test.ts",
            "test/conformance/ValidationProperties.test.ts",
            "test/conformance/ServeProcess.test.ts",
            "test/conformance/IdempotencyPipeline.test.ts",
            "test/conformance/Draining.test.ts"
          ],
          env: { BOXKIT_TEST_STATE: "sqlite" }
        }
      },
      // The client's behaviour under hostile networks over the stock HttpClient (NodeHttpClient.layerUndici) too, and
      // its deadlines (Effect.timeoutFail there, the toolkit client's own timer on the fast project).
      {
        extends: true,
        test: {
          name: "stock-client",
          include: ["test/resilience/**/*.test.ts", "test/EndToEnd.test.ts", "test/client/TransportDeadline.test.ts"],
          env: { BOXKIT_TEST_CLIENT: "stock" }
        }
      }
    ]
  }
})
