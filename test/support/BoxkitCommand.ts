/**
 * Runs the `boxkit` command as users run it (`node bin/boxkit.js`, the built bundle) and collects what it printed.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const bin = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "bin", "boxkit.js")

/** What a run of the command printed, and its exit code. */
export interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `boxkit ARGS` with `env` added to this process's environment and `stdin` (if any) piped in. */
export const boxkit = (args: ReadonlyArray<string>, options: { readonly env?: NodeJS.ProcessEnv; readonly stdin?: string } = {}) =>
  Effect.promise(() =>
    new Promise<Run>((resolve) => {
      const child = spawn(process.execPath, [bin, ...args], {
        env: { ...process.env, ...options.env },
        stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
      child.on("close", (code) => resolve({ code, stdout, stderr }))
      if (options.stdin !== undefined) child.stdin!.end(options.stdin)
    })
  )
