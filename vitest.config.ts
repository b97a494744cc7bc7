import { defineConfig } from "vitest/config"

/**
 * Test files that need modules no other file has loaded in their process (what is loaded at start): they run in a
 * project of their own with `isolate: true`; every other file shares its worker's modules with the files before it.
 */
const needFreshModules = ["test/server/TokenizerLoading.test.ts"]

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
    // A server-facing suite runs on each serving path, store and client it covers within its file
    // (`describe.each(Harness.variants(...))`, test/support/Harness.ts), not through a project per variant.
    isolate: false,
    globalSetup: ["test/support/BuildCommand.ts"],
    projects: [
      { extends: true, test: { name: "fast", include: ["test/**/*.test.ts"], exclude: needFreshModules } },
      { extends: true, test: { name: "fresh-modules", include: needFreshModules, isolate: true } }
    ]
  }
})
