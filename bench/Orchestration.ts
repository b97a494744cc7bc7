/**
 * Section 8, durable orchestration: the two budgets of `boxkit orchestrate` (BENCHMARKS.md "Budgets"), each beside
 * its baseline in the same run.
 *
 * 1. SQLite: `boxkit orchestrate --data-dir <fresh directory> --boxes N --concurrency C` (spawn to exit) against a
 *    fresh `boxkit serve`, beside the same work done by a plain, non-durable loop of the client in this process at
 *    the same concurrency against another fresh service: per box create (with a key), wait until running, clipboard
 *    write, background response submitted and awaited by polling (`Responses.awaitCompletion`), terminate.
 * 2. PostgreSQL: embedded PostgreSQL (test/support/Postgres.ts) with two fresh databases: one `orchestrate
 *    --database-url` runner for N workflows, then two runners on the other database started together (each with
 *    `--concurrency C`, as the same command on two machines), until both exit.
 *
 * Each run must end with `orchestrated N boxes`; the service is then counted (boxes named `orchestrate-<i>`, not
 * terminated, duplicate names). Every process and directory is removed when its scope closes.
 *
 * Source: BENCHMARKS.md "Budgets" (the two orchestration rows); docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import { Console, Duration, Effect, Redacted } from "effect"
import { spawn } from "node:child_process"
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
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"

/** One timed run: milliseconds, and what the service held at the end. */
export interface OrchestrationRun {
  readonly label: string
  readonly millis: number
  readonly boxes: number
  readonly notTerminated: number
  readonly duplicateNames: number
}

/** The section's results. */
export interface OrchestrationResults {
  readonly boxes: number
  readonly concurrency: number
  readonly plainLoop: OrchestrationRun
  readonly sqlite: OrchestrationRun
  readonly postgresOne?: OrchestrationRun
  readonly postgresTwo?: OrchestrationRun
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

/** Runs `node bin/boxkit.js orchestrate ...args` to its exit; fails unless it printed `orchestrated N boxes`. */
const orchestrate = (args: ReadonlyArray<string>, boxes: number) =>
  Effect.async<void, Error>((resume) => {
    const child = spawn(process.execPath, ["bin/boxkit.js", "orchestrate", ...args], {
      cwd: Child.root,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.on("exit", (code) =>
      resume(
        code === 0 && output.includes(`orchestrated ${boxes} boxes`)
          ? Effect.void
          : Effect.fail(new Error(`orchestrate exited ${code}: ${output.slice(-2000)}`))
      ))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Times `effect` against a fresh service and counts its boxes afterwards. */
const timed = <E, R>(label: string, make: (baseUrl: string) => Effect.Effect<void, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const served = yield* service(`service for ${label}`)
    const started = performance.now()
    yield* make(served.baseUrl)
    const millis = performance.now() - started
    return { label, millis, ...(yield* countBoxes(served.origin)) } satisfies OrchestrationRun
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

/** Runs the section with `settings.orchestrationBoxes` workflows at `settings.orchestrationConcurrency`. */
export const run = (settings: BenchSettings) =>
  Effect.gen(function*() {
    const boxes = settings.orchestrationBoxes
    const concurrency = settings.orchestrationConcurrency
    // The command's bundle is rebuilt at its first start when a source is newer: not inside a measured run.
    // @ts-expect-error: a JavaScript module without declarations
    yield* Effect.promise(() => import("../scripts/build.mjs").then((build: any) => build.ensureCommand()))
    const plain = yield* timed("plain client loop", (baseUrl) => plainLoop(baseUrl, boxes, concurrency))
    yield* Console.error(`  plain loop: ${(plain.millis / 1000).toFixed(1)} s`)
    const sqlite = yield* Effect.scoped(Effect.gen(function*() {
      const directory = yield* temporaryDirectory
      return yield* timed("orchestrate --data-dir", (baseUrl) =>
        orchestrate([...orchestrateArgs(baseUrl, boxes, concurrency), "--data-dir", directory], boxes))
    }))
    yield* Console.error(`  orchestrate on SQLite: ${(sqlite.millis / 1000).toFixed(1)} s`)
    const postgres = yield* Effect.scoped(Effect.gen(function*() {
      const Postgres = yield* Effect.promise(() => import("../test/support/Postgres.js"))
      const database = yield* Effect.acquireRelease(
        Effect.promise(() => Postgres.startTestDatabase()),
        (database) => Effect.promise(() => database.stop())
      )
      const oneUrl = yield* Effect.promise(() => Postgres.createDatabase(database, "bench_orchestrate_one"))
      const twoUrl = yield* Effect.promise(() => Postgres.createDatabase(database, "bench_orchestrate_two"))
      const one = yield* timed("orchestrate --database-url, one runner", (baseUrl) =>
        orchestrate([...orchestrateArgs(baseUrl, boxes, concurrency), "--database-url", oneUrl], boxes))
      yield* Console.error(`  orchestrate on PostgreSQL, one runner: ${(one.millis / 1000).toFixed(1)} s`)
      const two = yield* timed("orchestrate --database-url, two runners", (baseUrl) => {
        const args = [...orchestrateArgs(baseUrl, boxes, concurrency), "--database-url", twoUrl]
        return Effect.all([orchestrate(args, boxes), orchestrate(args, boxes)], { concurrency: 2, discard: true })
      })
      yield* Console.error(`  orchestrate on PostgreSQL, two runners: ${(two.millis / 1000).toFixed(1)} s`)
      return { postgresOne: one, postgresTwo: two }
    })).pipe(Effect.timeout(Duration.minutes(30)), Effect.orDie)
    return { boxes, concurrency, plainLoop: plain, sqlite, ...postgres } satisfies OrchestrationResults
  })

/** The budgets of durable orchestration: 1,000 workflows on SQLite, and two runners on PostgreSQL against one. */
export const limits = {
  /** orchestrate on SQLite over the plain loop, same N and concurrency. */
  sqliteRatio: 2,
  /** two PostgreSQL runners over one. */
  postgresTwoRatio: 0.7,
  boxes: 1000
} as const

/** True when a run ended clean: N boxes, all terminated, no duplicate name. */
const cleanRun = (run: OrchestrationRun | undefined, boxes: number) =>
  run !== undefined && run.boxes === boxes && run.notTerminated === 0 && run.duplicateNames === 0

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
    pass: decide(sqliteRatio <= limits.sqliteRatio, cleanRun(results.sqlite, results.boxes) && cleanRun(results.plainLoop, results.boxes)),
    ...note
  }]
  if (results.postgresOne !== undefined && results.postgresTwo !== undefined) {
    const ratio = results.postgresTwo.millis / results.postgresOne.millis
    lines.push({
      budget: `two runners on PostgreSQL finish ${limits.boxes} workflows in <= ${limits.postgresTwoRatio}x one runner's time`,
      measured: `${ratio.toFixed(2)}x (${(results.postgresTwo.millis / 1000).toFixed(1)} s vs ` +
        `${(results.postgresOne.millis / 1000).toFixed(1)} s; each runner --concurrency ${results.concurrency})`,
      pass: decide(ratio <= limits.postgresTwoRatio, cleanRun(results.postgresOne, results.boxes) && cleanRun(results.postgresTwo, results.boxes)),
      ...note
    })
  }
  return lines
}

/** The section of the Markdown report. */
export const section = (results: OrchestrationResults): string => {
  const runs = [results.plainLoop, results.sqlite, results.postgresOne, results.postgresTwo].filter(
    (run): run is OrchestrationRun => run !== undefined
  )
  return [
    "## 8. Durable orchestration",
    "",
    `${results.boxes} box workflows (create, wait until running, clipboard, background response awaited, terminate) at ` +
    `concurrency ${results.concurrency}, each run against a fresh \`boxkit serve\` (bench/Orchestration.ts). Time from ` +
    "the spawn of `boxkit orchestrate` to its exit (the plain loop: in this process, no durability); boxes counted " +
    "in the service afterwards.",
    "",
    "| run | seconds | boxes | not terminated | duplicate names |",
    "| --- | --- | --- | --- | --- |",
    ...runs.map((run) =>
      `| ${run.label} | ${(run.millis / 1000).toFixed(1)} | ${run.boxes} | ${run.notTerminated} | ${run.duplicateNames} |`
    )
  ].join("\n")
}
