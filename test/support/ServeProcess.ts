/**
 * `boxkit serve` as a child process, for the tests that run the command as users do: started with `--port 0`, it is
 * ready when it prints `listening on http://HOST:PORT/v1`. Resolves with the child, the origin (`http://HOST:PORT`)
 * and what it wrote to stderr so far; rejects when the process exits before it listens.
 */
import { type ChildProcess, spawn } from "node:child_process"

/** A started `boxkit serve`: the child process, its origin, and its stderr so far. */
export interface Started {
  readonly child: ChildProcess
  readonly origin: string
  readonly stderr: () => string
}

/**
 * Runs `node ...argv` in `cwd` (default: the checkout) and waits until it listens. `argv` names the program and its
 * arguments, e.g. `["bin/boxkit.js", "serve", "--port", "0"]` (the command as installed) or
 * `["--import", "tsx", "src/bin.ts", "serve", "--port", "0"]` (from the sources).
 */
export const start = (argv: ReadonlyArray<string>, options: { readonly cwd?: string } = {}) =>
  new Promise<Started>((resolve, reject) => {
    const child = spawn(process.execPath, argv, { cwd: options.cwd ?? process.cwd(), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /listening on (http:\/\/\S+)\/v1/.exec(stdout)
      if (match !== null) resolve({ child, origin: match[1], stderr: () => stderr })
    })
    child.on("exit", (code) => reject(new Error(`serve exited early with ${code}: ${stderr}`)))
  })
