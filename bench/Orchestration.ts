/**
 * Section 8, durable orchestration: the SQLite budget of `boxkit orchestrate` beside its baseline in the same run, and
 * the capacity model of runners on PostgreSQL (BENCHMARKS.md "Budgets"; docs/decisions/0004-durable-orchestration.md).
 *
 * 1. SQLite: `boxkit orchestrate --data-dir <fresh directory> --boxes N --concurrency C` (spawn to exit) against a
 *    fresh `boxkit serve`, beside the same work done by a plain, non-durable loop of the client in this process at
 *    the same concurrency against another fresh service: per box create (with a key), wait until running, clipboard
 *    write, background response submitted and awaited by polling (`Responses.awaitCompletion`), terminate.
 * 2. PostgreSQL: embedded PostgreSQL (test/support/Postgres.ts), a fresh database per run: one `orchestrate
 *    --database-url` runner for N workflows, then two runners started together (each with `--concurrency C`, as the
 *    same command on two machines). Each run measures the CPU-seconds of the runners (`/usr/bin/time`, the process
 *    from spawn to exit), of PostgreSQL (the server, its live backends and those that ended: `/proc/<pid>/stat`) and
 *    of the service (its process group), before and after; and each runner's share of the work (its last progress
 *    line's `ran here`: the workflows whose last step ran in it).
 * 3. Handover: two runners on a fresh database; once a third of the boxes exist and the second runner has ended
 *    workflows of its own, it is killed with SIGKILL; the time from the kill to the survivor's exit is measured.
 * 4. Projection: the throughput of 1 to 16 runners on machines of their own, computed from the CPU-seconds per
 *    workflow of run 2 (two runners) and the stated assumptions ({@link projectionAssumptions}).
 *
 * Each run must end with `orchestrated N boxes` (the survivor's, for the handover); the service is then counted (boxes
 * named `orchestrate-<i>`, not terminated, duplicate names). Every process and directory is removed when its scope
 * closes.
 *
 * @since 0.1.0
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import { defaults as shardingDefaults } from "@effect/cluster/ShardingConfig"
import { Console, Duration, Effect, HashRing, Redacted, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { request } from "undici"
import { Apps } from "../src/Client/Apps.js"
import { Boxes } from "../src/Client/Boxes.js"
import * as Boxkit from "../src/Client/Boxkit.js"
import { Clipboard } from "../src/Client/Clipboard.js"
import { Responses } from "../src/Client/Responses.js"
import * as Child from "./Child.js"
import * as Proc from "./Proc.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"

/** CPU time of one run, in seconds: each runner's own process, PostgreSQL (server and backends), the service. */
export interface CpuSeconds {
  readonly runners: ReadonlyArray<number>
  readonly postgres: number
  readonly service: number
}

/** One timed run: milliseconds, what the service held at the end, and for PostgreSQL runs CPU and shares. */
export interface OrchestrationRun {
  readonly label: string
  readonly millis: number
  readonly boxes: number
  readonly notTerminated: number
  readonly duplicateNames: number
  readonly cpu?: CpuSeconds
  /** Per runner, the workflows whose last step ran in it (its final progress line's `ran here`). */
  readonly ranHere?: ReadonlyArray<number>
}

/** The handover run: two runners, one killed with SIGKILL mid-run. */
export interface HandoverRun extends OrchestrationRun {
  /** From the start of the runners to the kill, milliseconds. */
  readonly killedAtMillis: number
  /** Workflows ended at the kill (the survivor's last progress line before it). */
  readonly doneAtKill: number
  /** The killed runner's `ran here` in its last progress line before the kill. */
  readonly victimRanHere: number
  /** The survivor's final `ran here`. */
  readonly survivorRanHere: number
  /** From the kill to the survivor's exit, milliseconds. */
  readonly millisAfterKill: number
}

/** The section's results. */
export interface OrchestrationResults {
  readonly boxes: number
  readonly concurrency: number
  readonly plainLoop: OrchestrationRun
  readonly sqlite: OrchestrationRun
  readonly postgresOne?: OrchestrationRun
  readonly postgresTwo?: OrchestrationRun
  readonly handover?: HandoverRun
}

/** A fresh `boxkit serve` (in memory) for one run. */
const service = (label: string) => Child.spawnServer({ label, args: Scenarios.serviceArgs() })

/** Counts the boxes named `orchestrate-<i>` of the service at `origin`. */
const countBoxes = (origin: string) =>
  Effect.promise(async () => {
    const answer = await request(`${origin}/_local/state`, { headers: Scenarios.jsonHeaders })
    const state = (await answer.body.json()) as { boxes: Array<{ name: string; status: string }> }
    const boxes = state.boxes.filter((box) => /^orchestrate-\d+$/.test(box.name))
    const names = new Set(boxes.map((box) => box.name))
    return {
      boxes: boxes.length,
      notTerminated: boxes.filter((box) => box.status !== "terminated").length,
      duplicateNames: boxes.length - names.size
    }
  })

/** A progress line of `boxkit orchestrate` (src/Workflow/Orchestration.ts `formatProgress`), the parts used here. */
interface ProgressLine {
  readonly done: number
  readonly ranHere: number
}

const progressPattern = /orchestrate: done (\d+)\/\d+, failed \d+, resumed \d+, replayed \d+, reaped \d+, ran here (\d+)/g

/** The last progress line in `output`. */
const lastProgress = (output: string): ProgressLine | undefined => {
  const lines = [...output.matchAll(progressPattern)]
  const last = lines[lines.length - 1]
  return last === undefined ? undefined : { done: Number(last[1]), ranHere: Number(last[2]) }
}

/** A spawned `boxkit orchestrate`. */
interface RunnerProcess {
  readonly child: ChildProcess
  readonly output: () => string
  /** Settles with the exit code (null when killed). */
  readonly exited: Promise<number | null>
}

/** The line `/usr/bin/time` prints at the exit of a timed runner: user and system CPU seconds. */
const cpuLinePattern = /boxkit-bench-cpu ([\d.]+) ([\d.]+)/

/**
 * Spawns `boxkit orchestrate ...args` (the bundle, one process), under `/usr/bin/time` when `timed` (its CPU-seconds
 * from spawn to exit, printed at its exit), killed with SIGKILL when the scope closes if still running.
 */
const startRunner = (args: ReadonlyArray<string>, timed: boolean): Effect.Effect<RunnerProcess, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const command = [process.execPath, "bin/boxkit.js", "orchestrate", ...args]
      const child = timed
        ? spawn("/usr/bin/time", ["-f", "boxkit-bench-cpu %U %S", ...command], { cwd: Child.root, stdio: ["ignore", "pipe", "pipe"] })
        : spawn(command[0], command.slice(1), { cwd: Child.root, stdio: ["ignore", "pipe", "pipe"] })
      let output = ""
      child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, output: () => output, exited }
    }),
    (runner) =>
      runner.child.exitCode === null && runner.child.signalCode === null
        ? Effect.promise(() => (runner.child.kill("SIGKILL"), runner.exited))
        : Effect.void
  )

/** What a runner that ran to its end reports: its CPU-seconds (timed runners; else NaN) and its final `ran here`. */
interface RunnerEnd {
  readonly cpuSeconds: number
  readonly ranHere: number
}

/** Waits for `runner`'s exit; fails unless it exited 0 after printing `orchestrated N boxes`. */
const runnerEnd = (runner: RunnerProcess, boxes: number) =>
  Effect.flatMap(Effect.promise(() => runner.exited), (code) => {
    const output = runner.output()
    if (code !== 0 || !output.includes(`orchestrated ${boxes} boxes`)) {
      return Effect.fail(new Error(`orchestrate exited ${code}: ${output.slice(-2000)}`))
    }
    const cpu = cpuLinePattern.exec(output)
    return Effect.succeed<RunnerEnd>({
      cpuSeconds: cpu === null ? Number.NaN : Number(cpu[1]) + Number(cpu[2]),
      ranHere: lastProgress(output)?.ranHere ?? Number.NaN
    })
  })

/** Runs `boxkit orchestrate ...args` to its exit, timed. */
const orchestrate = (args: ReadonlyArray<string>, boxes: number) =>
  Effect.scoped(Effect.flatMap(startRunner(args, true), (runner) => runnerEnd(runner, boxes)))

/** Times `make` against a fresh service and counts its boxes afterwards; `make` may add fields to the run. */
const timed = <A extends object, E, R>(label: string, make: (served: Child.ServerProcess) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const served = yield* service(`service for ${label}`)
    const started = performance.now()
    const extra = yield* make(served)
    const millis = performance.now() - started
    return { label, millis, ...(yield* countBoxes(served.origin)), ...extra }
  }))

/** The plain loop: the same steps through the client, no durability, `concurrency` boxes at once. */
const plainLoop = (baseUrl: string, boxes: number, concurrency: number) =>
  Effect.gen(function*() {
    const apps = yield* Apps
    const client = yield* Boxes
    const clipboard = yield* Clipboard
    const responses = yield* Responses
    const app = yield* apps.find("orchestrate", { mintIfMissing: true })
    yield* Effect.forEach(Array.from({ length: boxes }, (_, index) => index), (index) =>
      Effect.gen(function*() {
        const created = yield* client.create({ name: `orchestrate-${index}`, app_id: app.id, image: { base: "debian" } })
        yield* client.awaitStatus(created.value.box_id)
        yield* clipboard.writeText(created.value.box_id, `orchestrated by boxkit: box ${index}`)
        const submitted = yield* responses.submit({ model: "boxkit-local", input: `Summarize the clipboard of box orchestrate-${index}.` })
        yield* responses.awaitCompletion(submitted.value.id)
        yield* client.terminate(created.value.box_id)
      }), { concurrency, discard: true })
  }).pipe(Effect.provide(Boxkit.layer({ apiKey: Redacted.make(Scenarios.apiKey), baseUrl })), Effect.orDie)

/** The common arguments of `orchestrate` against `baseUrl`. */
const orchestrateArgs = (baseUrl: string, boxes: number, concurrency: number) => [
  "--base-url",
  baseUrl,
  "--api-key",
  Scenarios.apiKey,
  "--boxes",
  String(boxes),
  "--concurrency",
  String(concurrency)
]

/** A fresh temporary directory, removed when the scope closes. */
const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(os.tmpdir(), "boxkit-bench-orchestrate-"))),
  (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
)

/** The PostgreSQL server (postmaster) listening on the port of `url`, by its command line: its pid. */
const postmasterOf = (url: string): number | undefined => {
  const port = new URL(url).port
  return Proc.findProcesses((args) => {
    const at = args.indexOf("-p")
    return at >= 0 && args[at + 1] === port && (args[0] ?? "").endsWith("postgres")
  })[0]?.pid
}

/**
 * `runners` timed runners started together on the database at `url` against `served`, to their exits, with the CPU of
 * PostgreSQL (`postmaster`) and of the service around them.
 */
const runnersOnPostgres = (served: Child.ServerProcess, postmaster: number, url: string, runners: number, settings: BenchSettings) =>
  Effect.gen(function*() {
    const args = [...orchestrateArgs(served.baseUrl, settings.orchestrationBoxes, settings.orchestrationConcurrency), "--database-url", url]
    const postgresBefore = Proc.treeCpuTicksWithEnded(postmaster)
    const serviceBefore = Proc.groupCpuTicks(served.pgid)
    const ends = yield* Effect.all(
      Array.from({ length: runners }, () => orchestrate(args, settings.orchestrationBoxes)),
      { concurrency: "unbounded" }
    )
    const seconds = (ticks: number) => ticks / Proc.clockTicksPerSecond
    const cpu: CpuSeconds = {
      runners: ends.map((end) => end.cpuSeconds),
      postgres: seconds(Proc.treeCpuTicksWithEnded(postmaster) - postgresBefore),
      service: seconds(Proc.groupCpuTicks(served.pgid) - serviceBefore)
    }
    return { cpu, ranHere: ends.map((end) => end.ranHere) }
  })

/** Polls `condition` every 250 ms until it holds; fails with `failure` when `giveUp` holds first. */
const waitFor = (condition: Effect.Effect<boolean>, giveUp: () => string | undefined): Effect.Effect<void, Error> =>
  Effect.suspend(() => {
    const reason = giveUp()
    if (reason !== undefined) return Effect.fail(new Error(reason))
    return Effect.flatMap(condition, (holds) =>
      holds ? Effect.void : Effect.zipRight(Effect.sleep(Duration.millis(250)), waitFor(condition, giveUp)))
  })

/**
 * The handover: two runners on the database at `url`; once a third of the boxes exist and the second (the victim)
 * has ended workflows of its own, the victim is killed with SIGKILL; the survivor must finish all N.
 */
const handoverOnPostgres = (served: Child.ServerProcess, url: string, settings: BenchSettings) =>
  Effect.scoped(Effect.gen(function*() {
    const boxes = settings.orchestrationBoxes
    const args = [...orchestrateArgs(served.baseUrl, boxes, settings.orchestrationConcurrency), "--database-url", url]
    const started = performance.now()
    const survivor = yield* startRunner(args, false)
    const victim = yield* startRunner(args, false)
    const ended = (runner: RunnerProcess) => runner.child.exitCode !== null || runner.child.signalCode !== null
    yield* waitFor(
      Effect.map(countBoxes(served.origin), (counted) =>
        counted.boxes >= boxes / 3 && (lastProgress(victim.output())?.ranHere ?? 0) > 0),
      () =>
        ended(victim) || ended(survivor)
          ? `a runner ended before the kill:\n${survivor.output().slice(-1000)}\n${victim.output().slice(-1000)}`
          : undefined
    )
    const killedAt = performance.now()
    const doneAtKill = lastProgress(survivor.output())?.done ?? 0
    const victimRanHere = lastProgress(victim.output())?.ranHere ?? 0
    victim.child.kill("SIGKILL")
    yield* Effect.promise(() => victim.exited)
    const end = yield* runnerEnd(survivor, boxes)
    const finished = performance.now()
    return {
      killedAtMillis: killedAt - started,
      doneAtKill,
      victimRanHere,
      survivorRanHere: end.ranHere,
      millisAfterKill: finished - killedAt
    }
  }))

/** The PostgreSQL runs: one runner, two runners, the handover; each on a fresh database and a fresh service. */
const postgresRuns = (settings: BenchSettings) =>
  Effect.scoped(Effect.gen(function*() {
    const Postgres = yield* Effect.promise(() => import("../test/support/Postgres.js"))
    const database = yield* Effect.acquireRelease(
      Effect.promise(() => Postgres.startTestDatabase()),
      (database) => Effect.promise(() => database.stop())
    )
    const urlOf = (name: string) => Effect.promise(() => Postgres.createDatabase(database, name))
    const postmaster = postmasterOf(database.url)
    if (postmaster === undefined) return yield* Effect.dieMessage(`no PostgreSQL server process for ${database.url}`)
    const oneUrl = yield* urlOf("bench_orchestrate_one")
    const one = yield* timed("orchestrate --database-url, one runner", (served) =>
      runnersOnPostgres(served, postmaster, oneUrl, 1, settings))
    yield* Console.error(`  orchestrate on PostgreSQL, one runner: ${(one.millis / 1000).toFixed(1)} s`)
    const twoUrl = yield* urlOf("bench_orchestrate_two")
    const two = yield* timed("orchestrate --database-url, two runners", (served) =>
      runnersOnPostgres(served, postmaster, twoUrl, 2, settings))
    yield* Console.error(`  orchestrate on PostgreSQL, two runners: ${(two.millis / 1000).toFixed(1)} s, ran here ${two.ranHere.join(" + ")}`)
    const handoverUrl = yield* urlOf("bench_orchestrate_handover")
    const handover = yield* timed("orchestrate --database-url, two runners, one killed", (served) =>
      handoverOnPostgres(served, handoverUrl, settings))
    yield* Console.error(`  handover: survivor exited ${(handover.millisAfterKill / 1000).toFixed(1)} s after the kill`)
    return { postgresOne: one, postgresTwo: two, handover }
  })).pipe(Effect.timeout(Duration.minutes(30)), Effect.orDie)

/** Runs the section with `settings.orchestrationBoxes` workflows at `settings.orchestrationConcurrency`. */
export const run = (settings: BenchSettings) =>
  Effect.gen(function*() {
    const boxes = settings.orchestrationBoxes
    const concurrency = settings.orchestrationConcurrency
    // The command's bundle is rebuilt at its first start when a source is newer: not inside a measured run.
    // @ts-expect-error: a JavaScript module without declarations
    yield* Effect.promise(() => import("../scripts/build.mjs").then((build: any) => build.ensureCommand()))
    const plain = yield* timed("plain client loop", (served) => Effect.as(plainLoop(served.baseUrl, boxes, concurrency), {}))
    yield* Console.error(`  plain loop: ${(plain.millis / 1000).toFixed(1)} s`)
    const sqlite = yield* Effect.scoped(Effect.gen(function*() {
      const directory = yield* temporaryDirectory
      return yield* timed("orchestrate --data-dir", (served) =>
        Effect.as(orchestrate([...orchestrateArgs(served.baseUrl, boxes, concurrency), "--data-dir", directory], boxes), {}))
    })).pipe(Effect.orDie)
    yield* Console.error(`  orchestrate on SQLite: ${(sqlite.millis / 1000).toFixed(1)} s`)
    const postgres = yield* postgresRuns(settings)
    return { boxes, concurrency, plainLoop: plain, sqlite, ...postgres } satisfies OrchestrationResults
  })

/**
 * The budgets of durable orchestration: 1,000 workflows on SQLite; on PostgreSQL, each of two runners runs at least
 * `minimumShare` of the workflows, and a runner killed mid-run loses no workflow.
 */
export const limits = {
  /** orchestrate on SQLite over the plain loop, same N and concurrency. */
  sqliteRatio: 2,
  /** The least share of the workflows each of two runners runs. */
  minimumShare: 0.35,
  boxes: 1000
} as const

/**
 * What the projection assumes: each runner on a machine of its own, one core busy (a runner is one Node process);
 * PostgreSQL on a machine of its own with `postgresCores` cores and the service on one with `serviceCores`, each
 * spending the CPU-seconds per workflow measured here and scaling with its cores; the workflows spread over the
 * runners by their shards (`shardsPerGroup` of @effect/cluster's defaults, assigned by its hash ring), so the busiest
 * runner sets the pace.
 */
export const projectionAssumptions = {
  postgresCores: 4,
  serviceCores: 4,
  runnerCounts: [1, 2, 3, 4, 6, 8, 12, 16]
} as const

/** True when a run ended clean: N boxes, all terminated, no duplicate name. */
const cleanRun = (run: OrchestrationRun | undefined, boxes: number) =>
  run !== undefined && run.boxes === boxes && run.notTerminated === 0 && run.duplicateNames === 0

const sum = (values: ReadonlyArray<number>) => values.reduce((total, value) => total + value, 0)

/** Milliseconds of CPU per workflow of `seconds` over `boxes` workflows. */
const perWorkflowMillis = (seconds: number, boxes: number) => (seconds * 1000) / boxes

/** The largest share of the shards one of `runners` runners holds (@effect/cluster's hash ring over their addresses). */
export const busiestShare = (runners: number): number => {
  const ring = HashRing.make<RunnerAddress.RunnerAddress>()
  for (let index = 0; index < runners; index++) HashRing.add(ring, RunnerAddress.make(`10.0.0.${index + 1}`, 34431))
  const shards = HashRing.getShards(ring, shardingDefaults.shardsPerGroup) ?? []
  const held = new Map<string, number>()
  for (const address of shards) held.set(address.host, (held.get(address.host) ?? 0) + 1)
  return Math.max(...held.values()) / shardingDefaults.shardsPerGroup
}

/** One row of the projection: workflows per second each part allows, the least of them and the part it is. */
export interface ProjectionRow {
  readonly runners: number
  readonly busiestShare: number
  readonly runnersLimit: number
  readonly postgresLimit: number
  readonly serviceLimit: number
  readonly projected: number
  readonly boundBy: "runners" | "PostgreSQL" | "service"
}

/** The projection from the two-runner run's CPU-seconds per workflow (undefined without it). */
export const projection = (results: OrchestrationResults): Array<ProjectionRow> | undefined => {
  const cpu = results.postgresTwo?.cpu
  if (cpu === undefined) return undefined
  const runner = sum(cpu.runners) / results.boxes
  const postgres = cpu.postgres / results.boxes
  const service = cpu.service / results.boxes
  return projectionAssumptions.runnerCounts.map((runners) => {
    const share = busiestShare(runners)
    const limitsOf = {
      runners: 1 / (runner * share),
      PostgreSQL: projectionAssumptions.postgresCores / postgres,
      service: projectionAssumptions.serviceCores / service
    }
    const boundBy = (Object.keys(limitsOf) as Array<keyof typeof limitsOf>).reduce((a, b) => (limitsOf[b] < limitsOf[a] ? b : a))
    return {
      runners,
      busiestShare: share,
      runnersLimit: limitsOf.runners,
      postgresLimit: limitsOf.PostgreSQL,
      serviceLimit: limitsOf.service,
      projected: limitsOf[boundBy],
      boundBy
    }
  })
}

/** The two PostgreSQL budgets: the split between two runners and the handover. */
const postgresBudgets = (results: OrchestrationResults, decide: (ok: boolean, clean: boolean) => boolean | null) => {
  const lines: Array<{ budget: string; measured: string; pass: boolean | null }> = []
  const two = results.postgresTwo
  if (two?.ranHere !== undefined) {
    const shares = two.ranHere.map((count) => count / results.boxes)
    lines.push({
      budget: `two runners on PostgreSQL: each runs >= ${limits.minimumShare * 100}% of ${limits.boxes} workflows`,
      measured: `${two.ranHere.join(" + ")} of ${results.boxes} (${shares.map((share) => `${(share * 100).toFixed(0)}%`).join(", ")}; ` +
        `${(two.millis / 1000).toFixed(1)} s, each runner --concurrency ${results.concurrency})`,
      pass: decide(shares.length === 2 && Math.min(...shares) >= limits.minimumShare, cleanRun(two, results.boxes))
    })
  }
  const handover = results.handover
  if (handover !== undefined) {
    const one = results.postgresOne
    const alone = one === undefined ? "" : `; one runner alone runs them in about ` +
      `${(((results.boxes - handover.doneAtKill) * one.millis) / results.boxes / 1000).toFixed(1)} s`
    lines.push({
      budget: `one of two runners killed (SIGKILL) mid-run: the survivor finishes all ${limits.boxes}, none lost or duplicated`,
      measured: `${handover.boxes} boxes, ${handover.notTerminated} not terminated, ${handover.duplicateNames} duplicate names; ` +
        `the survivor exited ${(handover.millisAfterKill / 1000).toFixed(1)} s after the kill, with ` +
        `${results.boxes - handover.doneAtKill} workflows not ended at the kill${alone}`,
      pass: decide(true, cleanRun(handover, results.boxes))
    })
  }
  return lines
}

/** The budget lines of the section (`pass` null on a quick run with fewer than the budget's N). */
export const budgets = (results: OrchestrationResults) => {
  const full = results.boxes >= limits.boxes
  const note = full ? {} : { note: `quick run: ${results.boxes} workflows, not the budget's ${limits.boxes}` }
  const decide = (ok: boolean, clean: boolean) => (!clean ? false : full ? ok : null)
  const sqliteRatio = results.sqlite.millis / results.plainLoop.millis
  const lines = [{
    budget: `${limits.boxes} box workflows on SQLite <= ${limits.sqliteRatio}x a plain client loop (same concurrency)`,
    measured: `${sqliteRatio.toFixed(2)}x (${(results.sqlite.millis / 1000).toFixed(1)} s vs ` +
      `${(results.plainLoop.millis / 1000).toFixed(1)} s, ${results.boxes} workflows at concurrency ${results.concurrency})`,
    pass: decide(sqliteRatio <= limits.sqliteRatio, cleanRun(results.sqlite, results.boxes) && cleanRun(results.plainLoop, results.boxes))
  }, ...postgresBudgets(results, decide)]
  return lines.map((line) => ({ ...line, ...note }))
}

/** The CPU table of the PostgreSQL runs: seconds, milliseconds per workflow, cores busy. */
const cpuTable = (results: OrchestrationResults): Array<string> => {
  const runs = [results.postgresOne, results.postgresTwo].filter((run): run is OrchestrationRun => run?.cpu !== undefined)
  const per = (seconds: number) => perWorkflowMillis(seconds, results.boxes).toFixed(1)
  return [
    "| run | runners' CPU s | PostgreSQL CPU s | service CPU s | runner ms/workflow | PostgreSQL ms/workflow | service ms/workflow | cores busy |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...runs.map((run) => {
      const cpu = run.cpu!
      const runners = sum(cpu.runners)
      const busy = (runners + cpu.postgres + cpu.service) / (run.millis / 1000)
      return `| ${run.label} | ${runners.toFixed(1)} (${cpu.runners.map((seconds) => seconds.toFixed(1)).join(" + ")}) | ` +
        `${cpu.postgres.toFixed(1)} | ${cpu.service.toFixed(1)} | ${per(runners)} | ${per(cpu.postgres)} | ${per(cpu.service)} | ${busy.toFixed(2)} |`
    })
  ]
}

/** The projection's part of the section: its assumptions and its table. */
const projectionText = (results: OrchestrationResults): Array<string> => {
  const rows = projection(results)
  if (rows === undefined) return []
  const fmt = (value: number) => Math.round(value).toLocaleString("en-US")
  return [
    "",
    "Projected throughput of 1 to 16 runners (bench/Orchestration.ts `projection`), computed from the two-runner run's " +
    "CPU-seconds per workflow above, assuming: each runner on a machine of its own with one core busy (a runner is one " +
    `Node process, CPU-bound: see its cores busy); PostgreSQL on a machine of its own with ${projectionAssumptions.postgresCores} ` +
    `cores and the service on one with ${projectionAssumptions.serviceCores}, each spending the CPU per workflow measured ` +
    "here and scaling with its cores (an upper bound: locks and connections are not modelled); the workflows spread " +
    `over the runners by their shards (${shardingDefaults.shardsPerGroup} per group, assigned by @effect/cluster's hash ` +
    "ring; runners at 10.0.0.1, 10.0.0.2, ...), so the runner with the most shards sets the pace; the network and the " +
    "shard locks' refreshes (every 2 s per runner) are not counted. Workflows per second:",
    "",
    "| runners | busiest runner's shards | runners allow | PostgreSQL allows | service allows | projected | bound by |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((row) =>
      `| ${row.runners} | ${(row.busiestShare * 100).toFixed(1)}% | ${fmt(row.runnersLimit)} | ${fmt(row.postgresLimit)} | ` +
      `${fmt(row.serviceLimit)} | ${fmt(row.projected)} | ${row.boundBy} |`
    )
  ]
}

/** The handover's paragraph. */
const handoverText = (results: OrchestrationResults): Array<string> => {
  const handover = results.handover
  if (handover === undefined) return []
  return [
    "",
    `Handover: two runners on a fresh database; ${(handover.killedAtMillis / 1000).toFixed(1)} s after their start ` +
    `(${handover.doneAtKill} workflows ended, the killed runner had ended ${handover.victimRanHere}), one was killed with ` +
    `SIGKILL; the survivor exited ${(handover.millisAfterKill / 1000).toFixed(1)} s later, having run ` +
    `${handover.survivorRanHere} of the ${results.boxes} itself. A killed runner's shard locks expire after 8 s ` +
    "(src/Workflow/Runner.ts `postgresShardingDefaults`), then its workflows resume on the survivor from their last " +
    "stored step."
  ]
}

/** The section of the Markdown report. */
export const section = (results: OrchestrationResults): string => {
  const runs = [results.plainLoop, results.sqlite, results.postgresOne, results.postgresTwo, results.handover].filter(
    (run): run is OrchestrationRun => run !== undefined
  )
  return [
    "## 8. Durable orchestration",
    "",
    `${results.boxes} box workflows (create, wait until running, clipboard, background response awaited, terminate) at ` +
    `concurrency ${results.concurrency} per runner, each run against a fresh \`boxkit serve\` and, on PostgreSQL, a ` +
    "fresh database (bench/Orchestration.ts). Time from the spawn of `boxkit orchestrate` to its exit (the plain loop: " +
    "in this process, no durability); boxes counted in the service afterwards; \"ran here\": each runner's own count " +
    "of the workflows whose last step ran in it. CPU-seconds: each runner from spawn to exit (`/usr/bin/time`), " +
    "PostgreSQL (the server, its backends and those that ended) and the service (`boxkit serve`) from `/proc/<pid>/stat` " +
    "before and after. The machine is shared and two cores run the runners, PostgreSQL and the service together: the " +
    "CPU-seconds per workflow, not the seconds, are what carries to other machines. They include each runner's start " +
    "and its timers (storage read every second, the ledger's ends every 500 ms, response polling every second, shard " +
    "locks every 2 s), which cost more the longer a run takes: on a loaded machine they are an upper bound.",
    "",
    "| run | seconds | boxes | not terminated | duplicate names | ran here |",
    "| --- | --- | --- | --- | --- | --- |",
    ...runs.map((run) =>
      `| ${run.label} | ${(run.millis / 1000).toFixed(1)} | ${run.boxes} | ${run.notTerminated} | ${run.duplicateNames} | ` +
      `${run.ranHere === undefined ? "" : run.ranHere.join(" + ")} |`
    ),
    "",
    ...cpuTable(results),
    ...handoverText(results),
    ...projectionText(results)
  ].join("\n")
}
