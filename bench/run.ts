/**
 * The benchmark suite: `npm run bench` (full, writes BENCHMARKS.md and bench/results.json) or `npm run bench:quick`
 * (1 s runs, 1,000 webhooks, 10,000 keys, 3 cold starts; writes bench/out/BENCHMARKS.quick.md and
 * bench/out/results.quick.json). `--only=section,...` runs some sections (coldStart, throughput, client, webhooks, orchestration,
 * memory, durability, abuse, clientStock) and writes under bench/out/. Progress goes to stderr. Every server under test is a child process, stopped
 * when the run ends or is interrupted.
 *
 * Source: CONTRIBUTING.md "Benchmarks"; BENCHMARKS.md "Budgets" (what each section is held to).
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { dirname, relative } from "node:path"
import { performance } from "node:perf_hooks"
import * as ClientOverhead from "./ClientOverhead.js"
import * as ClientStock from "./ClientStock.js"
import { root } from "./Child.js"
import * as ColdStart from "./ColdStart.js"
import * as Abuse from "./Abuse.js"
import * as Durability from "./Durability.js"
import * as Orchestration from "./Orchestration.js"
import * as Machine from "./Machine.js"
import * as Memory from "./Memory.js"
import * as Report from "./Report.js"
import * as Scenarios from "./Scenarios.js"
import * as Settings from "./Settings.js"
import * as Throughput from "./Throughput.js"
import * as Webhooks from "./Webhooks.js"

/** The committed full report, which `--update` folds new sections into. */
const readResults = (path: string): Report.Results => {
  if (!existsSync(path)) throw new Error(`--update needs a full report at ${relative(root, path)}: run npm run bench first`)
  return JSON.parse(readFileSync(path, "utf8")) as Report.Results
}

const program = Effect.gen(function*() {
  const settings = Settings.fromArgs(process.argv.slice(2))
  Scenarios.writeSeedFile()
  const startedAt = new Date().toISOString()
  const began = performance.now()
  const machine = Machine.machine()
  yield* Console.error(`boxkit benchmarks (${settings.mode}): ${settings.sections.join(", ")}`)
  const has = (section: Settings.Section) => settings.sections.includes(section)
  const sectionSeconds: Record<string, number> = {}
  const step = <A, E, R>(title: string, effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      yield* Console.error(title)
      const from = performance.now()
      const value = yield* effect
      sectionSeconds[title] = (performance.now() - from) / 1000
      yield* Console.error(`  (${sectionSeconds[title].toFixed(0)} s)`)
      return value
    })

  const coldStart = has("coldStart") ? yield* step("4. cold start", ColdStart.run(settings)) : undefined
  const throughput = has("throughput") ? yield* step("1. local service throughput", Throughput.run(settings)) : undefined
  const client = has("client") ? yield* step("2. client overhead", ClientOverhead.run(settings)) : undefined
  const webhooks = has("webhooks") ? yield* step("3. webhook fan-out", Webhooks.run(settings)) : undefined
  const memory = has("memory") ? yield* step("5. memory", Memory.run(settings)) : undefined
  const durability = has("durability") ? yield* step("6. durable state", Durability.run(settings)) : undefined
  const abuse = has("abuse") ? yield* step("7. abuse", Abuse.run(settings)) : undefined
  const orchestration = has("orchestration") ? yield* step("8. durable orchestration", Orchestration.run(settings)) : undefined
  const clientStock = has("clientStock") ? yield* step("9. client: own code or stock", ClientStock.run(settings)) : undefined

  const { markdownPath, jsonPath, sections, update, ...measuredWith } = settings
  const partial: Omit<Report.Results, "budgets"> = {
    mode: settings.mode,
    sections,
    settings: measuredWith,
    startedAt,
    totalSeconds: (performance.now() - began) / 1000,
    sectionSeconds,
    machine: { ...machine, loadAverageAtEnd: os.loadavg() },
    versions: Machine.versions(),
    commands: {
      "suite": `npm run ${settings.mode === "full" ? "bench" : "bench:quick"} (tsx bench/run.ts${settings.mode === "full" ? "" : " --quick"})`,
      "service under test, the installed command (cwd: repository root)": ["node", ...Scenarios.serviceArgs()].join(" "),
      "service from its sources (cold start only)": ["node", ...Scenarios.tsxServiceArgs()].join(" "),
      "service with durable state (section 6)": ["node", ...Scenarios.serviceArgs(), "--data-dir", "$TMPDIR/boxkit-bench-XXXXXX/data"].join(" ") +
        "; `--database-url postgres://...` instead for PostgreSQL",
      "baseline server": ["node", ...Scenarios.baselineArgs()].join(" "),
      "seed file": `${Scenarios.seedFile} (src/Server/state/DemoSeed.ts example as JSON), API key ${Scenarios.apiKey}`
    },
    ...(coldStart === undefined ? {} : { coldStart }),
    ...(throughput === undefined ? {} : { throughput }),
    ...(client === undefined ? {} : { client }),
    ...(webhooks === undefined ? {} : { webhooks }),
    ...(memory === undefined ? {} : { memory }),
    ...(durability === undefined ? {} : { durability }),
    ...(abuse === undefined ? {} : { abuse }),
    ...(orchestration === undefined ? {} : { orchestration }),
    ...(clientStock === undefined ? {} : { clientStock })
  }
  const results: Report.Results = update === true ? Report.fold(readResults(jsonPath), partial) : { ...partial, budgets: Report.budgets(partial) }
  for (const path of [markdownPath, jsonPath]) mkdirSync(dirname(path), { recursive: true })
  writeFileSync(jsonPath, JSON.stringify(results, null, 2) + "\n")
  writeFileSync(markdownPath, Report.markdown(results))
  yield* Console.error(`wrote ${relative(root, markdownPath)} and ${relative(root, jsonPath)} in ${results.totalSeconds.toFixed(0)} s`)
  for (const line of results.budgets) {
    yield* Console.error(`  ${line.pass === null ? "n/a " : line.pass ? "PASS" : "FAIL"} ${line.budget}: ${line.measured}`)
  }
})

NodeRuntime.runMain(program)
