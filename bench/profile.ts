/**
 * Profiles the local service once: `boxkit serve` runs as `node --cpu-prof --cpu-prof-dir=DIR --import tsx
 * src/bin.ts serve ...` (one node process: the tsx CLI would profile only its wrapper, and NODE_OPTIONS refuses
 * `--cpu-prof`) while autocannon sends `POST /v1/apps/find` at concurrency 64; the service is then stopped with
 * SIGTERM (it drains and exits, which writes the profile) and the top self-time frames and files of the measured
 * run are printed, `(idle)` left out.
 * Usage: `npm run bench:profile [-- --seconds=10 --top=10 --server=platform]` (`--server`: the serving path, default
 * the service's default). Profiles are written to bench/out/profile/ (git-ignored).
 *
 * Source: CONTRIBUTING.md "Benchmarks" (`npm run bench:profile` writes a CPU profile of the service).
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import * as Child from "./Child.js"
import * as CpuProfile from "./CpuProfile.js"
import * as Load from "./Load.js"
import * as Scenarios from "./Scenarios.js"

/** Every `.ts` file under `dir`. */
const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

const option = (name: string, fallback: number) => {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`))
  return found === undefined ? fallback : Number(found.slice(name.length + 3))
}

const program = Effect.gen(function*() {
  const seconds = option("seconds", 10)
  const top = option("top", 10)
  const servingPath = process.argv.find((arg) => arg.startsWith("--server="))?.slice("--server=".length)
  const serverArgs = servingPath === undefined ? [] : ["--server", servingPath]
  const dir = join(Child.outDir, "profile")
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  Scenarios.writeSeedFile()
  // The sources as the profiled process loads them (other people may edit them meanwhile), to map positions back.
  const sources = CpuProfile.snapshot(sourceFiles(join(Child.root, "src")))
  const result = yield* Effect.scoped(Effect.gen(function*() {
    const server = yield* Child.spawnServer({
      label: "boxkit serve (profiled)",
      args: ["--cpu-prof", `--cpu-prof-dir=${relative(Child.root, dir)}`, "--import", "tsx", ...Scenarios.tsxServiceArgs().slice(1), ...serverArgs]
    })
    yield* Console.error(`profiling ${server.command} during ${seconds} s of ${Scenarios.appsFind.title} (after a 3 s warm-up)`)
    yield* Load.autocannonRun(server.origin, Scenarios.appsFind, { connections: 64, durationSeconds: 3 })
    const fromMicros = CpuProfile.monotonicMicros()
    const measured = yield* Load.measure(server, Scenarios.appsFind, { connections: 64, warmupSeconds: 0, durationSeconds: seconds })
    return { measured, window: { fromMicros, toMicros: CpuProfile.monotonicMicros() } }
  }))
  // The scope closed: SIGTERM, drain, exit, profile written (one per thread; the main thread's is the largest).
  const written = readdirSync(dir).filter((name) => name.endsWith(".cpuprofile")).map((name) => join(dir, name))
  if (written.length === 0) return yield* Effect.dieMessage(`no .cpuprofile in ${dir}: the service did not exit normally`)
  const largest = written.reduce((a, b) => (statSync(b).size > statSync(a).size ? b : a))
  const profile = JSON.parse(readFileSync(largest, "utf8")) as CpuProfile.CpuProfile
  const mapper = CpuProfile.tsxSourceMapper(sources)
  const frames = CpuProfile.selfTimes(profile, result.window, mapper)
  const byFile = CpuProfile.selfTimes(profile, result.window, mapper, "file")
  yield* Console.log(`${Scenarios.appsFind.title}: ${result.measured.requestsPerSecond.toFixed(0)} req/s under the profiler, ` +
    `${result.measured.serverCpuMicrosPerRequest.toFixed(0)} µs server CPU per request; profile ${relative(Child.root, largest)}`)
  const idle = frames.find((frame) => frame.frame === "(idle)")
  yield* Console.log(`top ${top} self-time frames during the measured run (share of its sampled time; idle ${((idle?.share ?? 0) * 100).toFixed(1)}% left out):`)
  for (const [index, frame] of frames.filter((frame) => frame !== idle).slice(0, top).entries()) {
    yield* Console.log(`${String(index + 1).padStart(2)}. ${(frame.share * 100).toFixed(1).padStart(5)}%  ${(frame.selfMicros / 1000).toFixed(0).padStart(6)} ms  ${frame.frame}`)
  }
  yield* Console.log(`top ${top} files by self time during the measured run:`)
  for (const [index, file] of byFile.filter((file) => file.frame !== "(idle)").slice(0, top).entries()) {
    yield* Console.log(`${String(index + 1).padStart(2)}. ${(file.share * 100).toFixed(1).padStart(5)}%  ${(file.selfMicros / 1000).toFixed(0).padStart(6)} ms  ${file.frame}`)
  }
})

NodeRuntime.runMain(program)
