/**
 * Settings of one benchmark run: the full run (`npm run bench`) and the quick check (`npm run bench:quick`), and
 * where their results go. The sections whose length depends on the service's speed (cold start, webhooks, memory)
 * have time caps, so that sections 1 to 5 end within 10 minutes even on a slow or busy machine (about 8.5 minutes
 * when every cap is reached); a capped section reports what it measured and says it was capped. Section 6 (durable
 * state) adds up to about 10 minutes more (7 to 8 minutes measured on a busy 2-core machine): its 100,000 durable
 * creations (a few hundred per second there) are capped at 420 s, plus about 3 minutes of throughput runs, restarts
 * and the PostgreSQL rounds.
 *
 * Source: BENCHMARKS.md "Run" and the sections' headings (10 s measured after a few seconds of warm-up, concurrency
 * 64, 10,000 background responses, 100,000 remembered idempotency keys, medians of 10; section 6: 100,000 keys and
 * boxes, a restart, two instances on PostgreSQL); CONTRIBUTING.md "Benchmarks" (the quick check: 1 s runs, 1,000
 * webhooks, 10,000 keys, 3 cold starts).
 *
 * @since 0.1.0
 */
import { join } from "node:path"
import { outDir, root } from "./Child.js"

/** The sections of the suite, in the order they run. */
export const sections = ["coldStart", "throughput", "client", "webhooks", "memory", "durability", "abuse", "orchestration", "clientStock"] as const
/** One section. */
export type Section = (typeof sections)[number]

/** Settings of a run. Durations in seconds. */
export interface BenchSettings {
  readonly mode: "full" | "quick"
  /** The sections to run (all unless `--only`). */
  readonly sections: ReadonlyArray<Section>
  /** Concurrent connections (throughput) and concurrent calls (client, webhook submission): 64. */
  readonly concurrency: number
  /** Warm-up before every measured throughput or client run. */
  readonly warmupSeconds: number
  /** Length of every measured throughput or client run. */
  readonly durationSeconds: number
  /** Background responses with a completion webhook. */
  readonly webhooks: number
  /**
   * The time cap of the webhook section: submissions stop at three quarters of it, and responses not handed over
   * when it ends count as lost.
   */
  readonly webhookMaxSeconds: number
  /** Distinct idempotency keys (box creations) for the memory figure. */
  readonly idempotencyKeys: number
  /** At most this long for those creations, so the run stays within its time; fewer keys are then reported. */
  readonly idempotencyMaxSeconds: number
  /**
   * Section 6: at most this long for the `idempotencyKeys` creations against `boxkit serve --data-dir` (durable
   * creations are slower than in memory); fewer keys and boxes are then reported.
   */
  readonly durableKeysMaxSeconds: number
  /** Section 6: starts per variant of the restart figure (the median is reported). */
  readonly restarts: number
  /** Section 6: rounds of the create-box figure, each measuring in memory then durable (median ratio reported). */
  readonly createRounds: number
  /** Section 6: rounds of the PostgreSQL figure, each measuring one instance and the pair in turn (median reported). */
  readonly postgresRounds: number
  /** Spawns per cold-start variant (the median is reported). */
  readonly coldStarts: number
  /** No new cold-start round begins after this long (so fewer spawns are made on a slow machine). */
  readonly coldStartMaxSeconds: number
  /** Section 8: box workflows per run (the budgets' 1,000 in the full run). */
  readonly orchestrationBoxes: number
  /** Section 8: workflows at once per process (and of the plain loop). */
  readonly orchestrationConcurrency: number
  /** Where the Markdown report and the JSON results are written. */
  readonly markdownPath: string
  readonly jsonPath: string
  /**
   * `--only=... --update` (full mode): the sections measured replace theirs in the committed report (BENCHMARKS.md,
   * bench/results.json) instead of going to a partial file; the rest of the report stays as it was.
   */
  readonly update?: boolean
}

/** The full run: writes BENCHMARKS.md and bench/results.json. */
export const full: Omit<BenchSettings, "sections"> = {
  mode: "full",
  concurrency: 64,
  warmupSeconds: 3,
  durationSeconds: 10,
  webhooks: 10_000,
  webhookMaxSeconds: 100,
  idempotencyKeys: 100_000,
  idempotencyMaxSeconds: 100,
  durableKeysMaxSeconds: 420,
  restarts: 5,
  createRounds: 3,
  postgresRounds: 3,
  coldStarts: 10,
  coldStartMaxSeconds: 100,
  orchestrationBoxes: 1000,
  orchestrationConcurrency: 32,
  markdownPath: join(root, "BENCHMARKS.md"),
  jsonPath: join(root, "bench", "results.json")
}

/** The quick check: 1 s runs, 1,000 webhooks, 10,000 keys, 3 cold starts, 2 restarts; writes under bench/out/. */
export const quick: Omit<BenchSettings, "sections"> = {
  mode: "quick",
  concurrency: 64,
  warmupSeconds: 1,
  durationSeconds: 1,
  webhooks: 1_000,
  webhookMaxSeconds: 40,
  idempotencyKeys: 10_000,
  idempotencyMaxSeconds: 40,
  durableKeysMaxSeconds: 40,
  restarts: 2,
  createRounds: 1,
  postgresRounds: 1,
  coldStarts: 3,
  coldStartMaxSeconds: 40,
  orchestrationBoxes: 100,
  orchestrationConcurrency: 32,
  markdownPath: join(outDir, "BENCHMARKS.quick.md"),
  jsonPath: join(outDir, "results.quick.json")
}

/**
 * Reads the command line: `--quick` for the quick check; `--only=a,b` (section names) to run some sections, whose
 * results then go under bench/out/ so a partial run never replaces the committed report, unless `--update` is
 * given too: then they replace those sections of the committed report (full mode only).
 */
export const fromArgs = (args: ReadonlyArray<string>): BenchSettings => {
  const base = args.includes("--quick") ? quick : full
  const only = args.find((arg) => arg.startsWith("--only="))
  if (only === undefined) return { ...base, sections }
  const wanted = only.slice("--only=".length).split(",").filter((name) => name !== "")
  const unknown = wanted.filter((name) => !(sections as ReadonlyArray<string>).includes(name))
  if (unknown.length > 0) throw new Error(`unknown section(s) ${unknown.join(", ")}; known: ${sections.join(", ")}`)
  if (args.includes("--update")) {
    if (base.mode !== "full") throw new Error("--update folds sections into the full report: not with --quick")
    return { ...base, sections: sections.filter((name) => wanted.includes(name)), update: true }
  }
  return {
    ...base,
    sections: sections.filter((name) => wanted.includes(name)),
    markdownPath: join(outDir, `BENCHMARKS.${base.mode}.partial.md`),
    jsonPath: join(outDir, `results.${base.mode}.partial.json`)
  }
}
