/**
 * Section 4, cold start: from the spawn of a server process to its first successful answer to `GET /openapi.json`
 * (the address is read from its `listening on` line, then the request is sent at once). Four variants, interleaved
 * so that noise spreads evenly: the raw node:http baseline under tsx; the installed `node bin/boxkit.js serve` (the
 * budget's subject), after one start that wrote its code cache (as the first start after an install does); the same
 * without the code cache (`BOXKIT_CODE_CACHE=off`, what a start costs when no cache is there); and `boxkit serve` from
 * its sources (`node <tsx cli> src/bin.ts`, development). The median of N spawns each.
 *
 * Source: BENCHMARKS.md section 4 (cold start) and its budget (`boxkit serve` answering within 500 ms, median).
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { Console, Effect } from "effect"
import { performance } from "node:perf_hooks"
import { request } from "undici"
import * as Child from "./Child.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"
import * as Stats from "./Stats.js"

/** One variant's spawns. Times in milliseconds. */
export interface ColdStartVariant {
  readonly label: string
  readonly command: string
  /** Spawn to first successful answer, every spawn. */
  readonly samplesMs: ReadonlyArray<number>
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
  /** Spawn to the `listening on` line, median. */
  readonly medianListeningMs: number
  /** True for the variant the budget judges (the installed command). */
  readonly budget: boolean
}

/** The results of section 4: the baseline first; `rounds` made, fewer than asked when the time cap stopped them. */
export interface ColdStartResults {
  readonly baseline: ColdStartVariant
  readonly variants: ReadonlyArray<ColdStartVariant>
  readonly rounds: number
  readonly stoppedByTimeCap: boolean
  readonly timeCapSeconds: number
}

/** GET /openapi.json until it answers 200 (at most 200 tries, 10 ms apart); the time it answered. */
const firstAnswer = (origin: string) =>
  Effect.promise(async () => {
    for (let attempt = 0; attempt < 200; attempt++) {
      try {
        const response = await request(`${origin}/openapi.json`)
        await response.body.text()
        if (response.statusCode === 200) return performance.now()
      } catch {
        // Not ready yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error(`${origin}/openapi.json never answered 200`)
  })

const spawnOnce = (label: string, args: ReadonlyArray<string>, env?: Record<string, string>) =>
  Effect.scoped(Effect.gen(function*() {
    // Stopped with SIGKILL: its shutdown is not measured, and a drain would only lengthen the run.
    const server = yield* Child.spawnServer({ label, args, stopSignal: "SIGKILL", ...(env === undefined ? {} : { env }) })
    const answeredAt = yield* firstAnswer(server.origin)
    return { command: server.command, total: answeredAt - server.spawnedAt, listening: server.listeningAt - server.spawnedAt }
  }))

/** Spawns each variant `settings.coldStarts` times, round-robin; no round begins after `coldStartMaxSeconds`. */
export const run = Effect.fn("ColdStart.run")(function*(settings: BenchSettings) {
  const variants: ReadonlyArray<{
    readonly label: string
    readonly args: ReadonlyArray<string>
    readonly env?: Record<string, string>
    readonly budget: boolean
  }> = [
    { label: "raw node:http (tsx bench/RawServer.ts)", args: Scenarios.baselineArgs(), budget: false },
    { label: "boxkit serve (bin/boxkit.js)", args: Scenarios.serviceArgs(), budget: true },
    {
      label: "boxkit serve (bin/boxkit.js, BOXKIT_CODE_CACHE=off)",
      args: Scenarios.serviceArgs(),
      env: { BOXKIT_CODE_CACHE: "off" },
      budget: false
    },
    { label: "boxkit serve (tsx src/bin.ts)", args: Scenarios.tsxServiceArgs(), budget: false }
  ]
  // The command runs dist/boxkit.cjs, rebuilt in a checkout when stale: build it first, so that every spawn
  // measures a start, not a build; then start it once and stop it with SIGTERM, so that it writes its code cache
  // (the first run of a command after an install does the same).
  yield* Effect.sync(() => execFileSync(process.execPath, ["scripts/build.mjs", "--command"], { stdio: "ignore" }))
  yield* Effect.scoped(Effect.gen(function*() {
    const server = yield* Child.spawnServer({ label: "boxkit serve (writes its code cache)", args: Scenarios.serviceArgs() })
    yield* firstAnswer(server.origin)
  }))
  const samples = variants.map(() => ({ command: "", total: [] as Array<number>, listening: [] as Array<number> }))
  const deadline = performance.now() + settings.coldStartMaxSeconds * 1000
  let rounds = 0
  for (let round = 0; round < settings.coldStarts; round++) {
    if (round > 0 && performance.now() > deadline) break
    rounds++
    yield* Console.error(`  round ${round + 1} of ${settings.coldStarts}`)
    for (const [index, variant] of variants.entries()) {
      const sample = yield* spawnOnce(variant.label, variant.args, variant.env)
      samples[index].command = [...Object.entries(variant.env ?? {}).map(([name, value]) => `${name}=${value}`), sample.command]
        .join(" ")
      samples[index].total.push(sample.total)
      samples[index].listening.push(sample.listening)
    }
  }
  const results = variants.map((variant, index): ColdStartVariant => ({
    label: variant.label,
    command: samples[index].command,
    samplesMs: samples[index].total,
    medianMs: Stats.median(samples[index].total),
    minMs: Math.min(...samples[index].total),
    maxMs: Math.max(...samples[index].total),
    medianListeningMs: Stats.median(samples[index].listening),
    budget: variant.budget
  }))
  return {
    baseline: results[0],
    variants: results.slice(1),
    rounds,
    stoppedByTimeCap: rounds < settings.coldStarts,
    timeCapSeconds: settings.coldStartMaxSeconds
  } satisfies ColdStartResults
})
