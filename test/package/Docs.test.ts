/**
 * The API reference (`npm run docs`, TypeDoc over the package's entry points) builds from the docstrings without a
 * warning: links resolve and every entry point documents. Validated here without writing the pages.
 */
import { expect, it } from "vitest"
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

it("npm run docs: TypeDoc finds no error and no warning", async () => {
  const result = await new Promise<{ status: number | null; output: string }>((resolve) => {
    const child = spawn(process.execPath, [join(checkout, "node_modules", "typedoc", "bin", "typedoc"), "--emit", "none"], {
      cwd: checkout,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.on("close", (status) => resolve({ status, output }))
  })
  expect(result.output.split("\n").filter((line) => /warning|error/i.test(line) && !/Found 0 errors and 0 warnings/.test(line)))
    .toEqual([])
  expect(result.status).toBe(0)
}, 300_000)
