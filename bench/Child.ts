/**
 * Servers under test as child processes: each is spawned `detached` (its own process group, so the tsx wrapper and
 * the node process it starts are stopped together), its address is read from the `listening on URL` line it prints,
 * and it is stopped with SIGTERM to the group (SIGKILL after 10 s) when the scope closes.
 *
 * Source: CONTRIBUTING.md "Benchmarks" (the service under test is the command, run as its own child process, the
 * baseline too, so that the bench process's own load is not measured with it).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schema, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { performance } from "node:perf_hooks"
import * as Proc from "./Proc.js"

/** The repository root (the parent of `bench/`); every child runs with it as its working directory. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/** Where the suite writes scratch files (seed file, profiles); git-ignored. */
export const outDir = join(root, "bench", "out")

/** The tsx CLI, relative to the repository root (e.g. `node_modules/tsx/dist/cli.mjs`). */
export const tsxCli = relative(
  root,
  join(dirname(createRequire(import.meta.url).resolve("tsx/package.json")), "dist", "cli.mjs")
)

/** A child process failed to start, exited early, or did not print its address in time. */
export class ChildError extends Schema.TaggedError<ChildError>()("ChildError", {
  message: Schema.String
}) {}

/** A running server child. */
export interface ServerProcess {
  /** What it is, for reports. */
  readonly label: string
  /** The command line, relative to the repository root (`node ...`). */
  readonly command: string
  /** The pid of the spawned process, which is also its process group id. */
  readonly pgid: number
  /** The pid of the process that serves (the deepest node process of the group: the one under tsx). */
  readonly servingPid: number
  /** The printed base URL, e.g. `http://127.0.0.1:40123/v1`. */
  readonly baseUrl: string
  /** The origin of {@link baseUrl}, e.g. `http://127.0.0.1:40123`. */
  readonly origin: string
  /** `performance.now()` just before the spawn, in milliseconds. */
  readonly spawnedAt: number
  /** `performance.now()` when the `listening on` line arrived, in milliseconds. */
  readonly listeningAt: number
  /** Everything the child printed so far (stdout and stderr). */
  readonly output: () => string
}

/** Options of {@link spawnServer}. */
export interface SpawnOptions {
  /** What it is, for reports. */
  readonly label: string
  /** Arguments after `node`, relative to the repository root. */
  readonly args: ReadonlyArray<string>
  /** Extra environment variables. */
  readonly env?: Record<string, string>
  /** How long to wait for the `listening on` line (default 60 s). */
  readonly timeout?: Duration.DurationInput
  /** The signal that stops it when the scope closes (default SIGTERM: the service drains; SIGKILL: at once). */
  readonly stopSignal?: NodeJS.Signals
}

const listeningLine = /listening on (http:\/\/[^\s/]+)(\/v1)?/

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

/**
 * Stops a process group: `signal` (default SIGTERM), then SIGKILL when members are left after `graceMillis`; waits
 * for the end.
 */
export const stopGroup = (child: ChildProcess, graceMillis = 10_000, signal: NodeJS.Signals = "SIGTERM"): Effect.Effect<void> =>
  Effect.promise(async () => {
    const pgid = child.pid
    if (pgid === undefined) return
    const send = (name: NodeJS.Signals) => {
      try {
        process.kill(-pgid, name)
      } catch {
        // The group is already gone.
      }
    }
    if (!exited(child) || Proc.groupMembers(pgid).length > 0) send(signal)
    const deadline = performance.now() + graceMillis
    while ((!exited(child) || Proc.groupMembers(pgid).length > 0) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    if (!exited(child) || Proc.groupMembers(pgid).length > 0) {
      send("SIGKILL")
      while (!exited(child)) await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

/**
 * Spawns `node ARGS` in its own process group and waits for its `listening on URL` line. The server is stopped
 * (SIGTERM to the group, then SIGKILL) when the scope closes. Fails with {@link ChildError} when the child exits
 * first or prints nothing in time.
 */
export const spawnServer = (options: SpawnOptions): Effect.Effect<ServerProcess, ChildError, Scope.Scope> =>
  Effect.gen(function*() {
    const chunks: Array<string> = []
    const output = () => chunks.join("")
    // BENCH_NODE_ARGS: extra options for every spawned node (e.g. `--cpu-prof --cpu-prof-dir=DIR` to profile a section).
    const args = [...(process.env.BENCH_NODE_ARGS?.split(" ").filter((arg) => arg !== "") ?? []), ...options.args]
    const command = ["node", ...args].join(" ")
    const spawnedAt = performance.now()
    const child = spawn(process.execPath, args, {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...options.env }
    })
    yield* Effect.addFinalizer(() => stopGroup(child, 10_000, options.stopSignal ?? "SIGTERM"))
    const address = yield* Effect.async<{ origin: string; at: number }, ChildError>((resume) => {
      let done = false
      const onData = (chunk: Buffer) => {
        chunks.push(chunk.toString("utf8"))
        if (done) return
        const match = listeningLine.exec(output())
        if (match !== null) {
          done = true
          resume(Effect.succeed({ origin: match[1], at: performance.now() }))
        }
      }
      child.stdout?.on("data", onData)
      child.stderr?.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")))
      child.once("error", (error) => {
        if (done) return
        done = true
        resume(Effect.fail(new ChildError({ message: `${options.label}: cannot spawn ${command}: ${error.message}` })))
      })
      child.once("exit", (code, signal) => {
        if (done) return
        done = true
        resume(Effect.fail(new ChildError({
          message: `${options.label}: ${command} exited (${code ?? signal}) before listening:\n${output()}`
        })))
      })
    }).pipe(
      Effect.timeoutFail({
        duration: options.timeout ?? Duration.seconds(60),
        onTimeout: () => new ChildError({ message: `${options.label}: no "listening on" line from ${command}:\n${output()}` })
      })
    )
    const pgid = child.pid!
    return {
      label: options.label,
      command,
      pgid,
      servingPid: Proc.servingPid(pgid) ?? pgid,
      baseUrl: `${address.origin}/v1`,
      origin: address.origin,
      spawnedAt,
      listeningAt: address.at,
      output
    }
  })
