/**
 * Helpers of the README's test (Consumer.test.ts, "the README"): the install commands of its install blocks, a
 * long-running process watched until its output says it is ready, the files of the packed tarball, and the strict
 * compiler settings its TypeScript blocks are checked with. The blocks themselves come from
 * scripts/readme-blocks.ts.
 */
import { spawn } from "node:child_process"
import { posix } from "node:path"
import type { ReadmeBlock } from "../../scripts/readme-blocks.ts"

/**
 * The options npm gets on every install of the test: no audit, no funding notes. Not `--prefer-offline`, which would
 * take the registry's metadata from npm's cache however old: the peers installed must be the newest the ranges allow on
 * the registry now (npm's default revalidates metadata older than a few minutes; tarballs still come from its cache).
 */
export const npmInstallFlags = ["--no-audit", "--no-fund"] as const

/**
 * The `npm install` commands of the install blocks, in order, as npm's arguments: the package's own name replaced by
 * the packed tarball's path (nothing else changed). A line that is not an `npm install` command is an error.
 */
export const installCommands = (blocks: ReadonlyArray<ReadmeBlock>, tarball: string): ReadonlyArray<ReadonlyArray<string>> =>
  blocks.filter((block) => block.check === "install").flatMap((block) =>
    block.code.split("\n").filter((line) => line.trim() !== "").map((line) => {
      const words = line.trim().split(/\s+/)
      if (words[0] !== "npm" || !["install", "i"].includes(words[1] ?? "")) {
        throw new Error(`README line ${block.line}: an install block holds "${line}", not an npm install command`)
      }
      return words.slice(1).map((word) => word === "boxkit" ? tarball : word)
    })
  )

/** A process started by {@link startUntil}. */
export interface Started {
  /** Its stdout and stderr so far, interleaved. */
  readonly output: () => string
  /** The match of `until` in its output. */
  readonly matched: RegExpExecArray
  /** Sends it `signal` (default SIGTERM) and resolves with its exit code (null when a signal ended it). */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/**
 * Starts `command` and resolves once its output matches `until`; rejects when it exits first or after
 * `timeoutMillis` (then it is killed), with its output.
 */
export const startUntil = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv; readonly until: RegExp; readonly timeoutMillis: number }
) =>
  new Promise<Started>((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    let ready = false
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${command} ${args.join(" ")}: no ${options.until} after ${options.timeoutMillis} ms:\n${output}`))
    }, options.timeoutMillis)
    const collect = (chunk: Buffer) => {
      output += chunk.toString()
      const matched = options.until.exec(output)
      if (matched === null || ready) return
      ready = true
      clearTimeout(timer)
      resolve({
        output: () => output,
        matched,
        stop: (signal = "SIGTERM") => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal)
          return exited
        }
      })
    }
    child.stdout.on("data", collect)
    child.stderr.on("data", collect)
    child.on("exit", (code) => {
      clearTimeout(timer)
      if (!ready) reject(new Error(`${command} ${args.join(" ")} exited ${code} before ${options.until}:\n${output}`))
    })
  })

/**
 * True when `target`, a link of the README (relative to the package's root), names a file of the tarball, whose
 * entries are listed as `package/<path>`.
 */
export const inTarball = (entries: ReadonlySet<string>, target: string): boolean => {
  const path = posix.normalize(target).replace(/^\.\//, "").replace(/\/$/, "")
  if (path.startsWith("..")) return false
  return entries.has(`package/${path}`) || [...entries].some((entry) => entry.startsWith(`package/${path}/`))
}

/**
 * The compiler settings of the README's TypeScript blocks: a strict NodeNext project whose declarations are checked
 * too (`skipLibCheck: false`), emitting JavaScript into `out/` for the blocks that are run.
 */
export const strictTsconfig = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    skipLibCheck: false,
    outDir: "out",
    rootDir: ".",
    types: ["node"]
  },
  include: ["*.ts", "*.mts", "*.cts"]
}

/** The file the compiler writes for the TypeScript block saved as `file` (`daemon.ts` is run as `out/daemon.js`). */
export const emittedFile = (file: string): string =>
  /\.[cm]?js$/.test(file) ? file : posix.join("out", file.replace(/\.ts$/, ".js").replace(/\.mts$/, ".mjs").replace(/\.cts$/, ".cjs"))
