import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * Test files that need modules no other file has loaded in their process (what is loaded at start): they run in a
 * project of their own with `isolate: true`; every other file shares its worker's modules with the files before it.
 */
const needFreshModules = ["test/server/TokenizerLoading.test.ts"]

/**
 * The longest test files, about longest first: each starts as soon as a worker is free, so that none of them is left
 * to run alone at the end of the run while the other worker is idle. Vitest orders files by the durations of its last
 * run where it has them, else by size, which put these small files last in a fresh clone. Consumer first: it packs the
 * checkout (test/support/PackedPackage.ts; the pack's build also converts the API reference), whose results Docs and
 * Declarations only read: they are not listed, so that they come toward the end (small, and short in the last run)
 * and find the pack done instead of holding a worker while they wait for it. PostgresCrash, whose survivors must take over within a bound, comes after
 * four others, so that it does not run beside the pack's build, the heaviest minute of the run.
 */
const longestFirst = [
  "test/package/Consumer.test.ts",
  "test/server/FastPathRemovable.test.ts",
  "test/resilience/HostileBoxes.test.ts",
  "test/conformance/Fuzz.test.ts",
  "test/responses/EngineEquivalence.test.ts",
  "test/durability/PostgresCrash.test.ts",
  "test/responses/Webhooks.test.ts",
  "test/conformance/OneAnswer.test.ts"
]

/** Vitest's order, with the files of {@link longestFirst} moved to the front in that list's order. */
class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const rank = (file: TestSpecification) => {
      const index = longestFirst.findIndex((path) => file.moduleId.endsWith(`/${path}`))
      return index === -1 ? longestFirst.length : index
    }
    // Array.prototype.sort is stable: the other files keep vitest's order.
    return sorted.sort((left, right) => rank(left) - rank(right))
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    sequence: { sequencer: LongestFirst },
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
