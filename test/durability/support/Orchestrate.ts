/**
 * Kill tests of `boxkit orchestrate` (docs/decisions/0004-durable-orchestration.md): the orchestrator runs as users run
 * it (`node bin/boxkit.js`, the bundle, one process, so that SIGKILL reaches it), is killed with SIGKILL at random
 * points and started again with the same arguments; then the service and the workflow database are counted: boxes named
 * `orchestrate-<i>`, their statuses, responses, and the ownership ledger.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Crash from "./Crash.js"

/** A running `boxkit orchestrate`. */
export interface Orchestrator {
  readonly child: ChildProcess
  readonly output: () => string
  /** Settles with the exit code (null when killed). */
  readonly exited: Promise<number | null>
  /** Settles when the engine is up (its first line is printed); rejects when the process ends before. */
  readonly ready: Promise<void>
}

/** Starts `boxkit orchestrate` with `args` against `base` (http://host:port) with the example seed's org key. */
export const start = (base: URL, args: ReadonlyArray<string>): Orchestrator => {
  const child = spawn(
    process.execPath,
    ["bin/boxkit.js", "orchestrate", "--base-url", `${base.origin}/v1`, "--api-key", "sk_acme_org", ...args],
    { cwd: process.cwd(), env: { ...process.env, BOXKIT_DEBUG: "" }, stdio: ["ignore", "pipe", "pipe"] }
  )
  let output = ""
  let markReady: () => void = () => {}
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
  const ready = Promise.race([
    new Promise<void>((resolve) => (markReady = resolve)),
    exited.then((code) => Promise.reject(new Error(`orchestrate ended (${code}) before it was up:\n${output}`)))
  ])
  // Handled here too: a caller that does not wait for readiness must not see an unhandled rejection.
  ready.catch(() => undefined)
  const collect = (chunk: Buffer) => {
    output += chunk.toString()
    if (/workflows on .*; webhooks at/.test(output)) markReady()
  }
  child.stdout!.on("data", collect)
  child.stderr!.on("data", collect)
  return { child, output: () => output, exited, ready }
}

/** Kills `orchestrator` with SIGKILL and waits until it is gone. */
export const kill = async (orchestrator: Orchestrator) => {
  orchestrator.child.kill("SIGKILL")
  await orchestrator.exited
}

/** What the service holds at the end. */
export interface Counted {
  /** Boxes named `orchestrate-<i>`. */
  readonly boxes: number
  /** Names with more than one box. */
  readonly duplicates: number
  /** Boxes named `orchestrate-<i>` that are not terminated. */
  readonly orphans: number
  /** Model responses of the organization (a fresh service: only the orchestrator's). */
  readonly responses: number
  /** Responses completed. */
  readonly responsesCompleted: number
}

/** Counts the boxes and responses of the service at `base`. */
export const count = async (base: URL): Promise<Counted> => {
  const state = await Crash.send(base, "/_local/state")
  const boxes = (state.json.boxes as Array<{ name: string; status: string }>).filter((box) => /^orchestrate-\d+$/.test(box.name))
  const names = new Map<string, number>()
  for (const box of boxes) names.set(box.name, (names.get(box.name) ?? 0) + 1)
  const responses = state.json.responses as Array<{ status: string }>
  return {
    boxes: boxes.length,
    duplicates: [...names.values()].filter((count) => count > 1).length,
    orphans: boxes.filter((box) => box.status !== "terminated").length,
    responses: responses.length,
    responsesCompleted: responses.filter((response) => response.status === "completed").length
  }
}

/**
 * Runs `boxkit orchestrate` with `args`, killing it with SIGKILL `kills` times, each at a random point between
 * `minMillis` and `maxMillis` after its engine is up (a run that ends first is not killed: it counts as no kill), then
 * lets a last run finish. Returns the kills made, the delays used and the last run's output and exit code.
 */
export const killAndRestart = async (
  base: URL,
  args: ReadonlyArray<string>,
  options: { readonly kills: number; readonly minMillis: number; readonly maxMillis: number }
) => {
  const delays: Array<number> = []
  let kills = 0
  for (let round = 0; round < options.kills; round++) {
    const run = start(base, args)
    await run.ready.catch(() => undefined)
    const delay = Math.round(options.minMillis + Math.random() * (options.maxMillis - options.minMillis))
    delays.push(delay)
    const ended = await Promise.race([
      run.exited.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), delay))
    ])
    if (ended) {
      if (!/orchestrated \d+ boxes/.test(run.output())) throw new Error(`orchestrate failed: ${run.output()}`)
      continue
    }
    await kill(run)
    kills++
  }
  const last = start(base, args)
  const code = await last.exited
  return { kills, delays, output: last.output(), code }
}

/** The ledger's counts: boxes owned and terminated, responses awaited, completed, and distinct deferred tokens. */
export interface LedgerCounts {
  readonly boxes: number
  readonly terminated: number
  readonly responses: number
  readonly completed: number
  readonly tokens: number
}

/** The queries of {@link LedgerCounts} (SQL that SQLite and PostgreSQL both run). */
export const ledgerQueries = {
  boxes: "SELECT count(*) AS boxes, count(terminated_at) AS terminated FROM boxkit_workflow_boxes",
  responses:
    "SELECT count(*) AS responses, count(completed_at) AS completed, count(DISTINCT token) AS tokens FROM boxkit_workflow_responses"
} as const

/** {@link LedgerCounts} from the rows of {@link ledgerQueries}. */
export const ledgerCounts = (boxes: Record<string, unknown>, responses: Record<string, unknown>): LedgerCounts => ({
  boxes: Number(boxes.boxes),
  terminated: Number(boxes.terminated),
  responses: Number(responses.responses),
  completed: Number(responses.completed),
  tokens: Number(responses.tokens)
})

/** What a clean end of N workflows looks like: in the service and in the ledger. */
export const clean = (boxes: number) => ({
  counted: { boxes, duplicates: 0, orphans: 0, responses: boxes, responsesCompleted: boxes },
  ledger: { boxes, terminated: boxes, responses: boxes, completed: boxes, tokens: boxes }
})
