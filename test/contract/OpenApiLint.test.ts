/**
 * The OpenAPI document (`GET /openapi.json`, derived from the contract) passes the two linters third parties use, with
 * the project's pinned versions and rulesets (docs/ASSUMPTIONS.md "The OpenAPI document"): Stoplight Spectral with
 * `spectral:oas` (`.spectral.yaml`) and Redocly with its `recommended` rules (`redocly.yaml`), zero errors each. The
 * document is the one the service serves, written to a temporary file.
 */
import { describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { openApiJson } from "../../src/Server/LocalService.js"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/** Runs a linter's command (a script under node_modules) and answers its standard output. */
const run = (script: string, args: ReadonlyArray<string>) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(checkout, "node_modules", script), ...args], {
      cwd: checkout,
      // No telemetry, no update check: the linters must not reach the network.
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", CI: "true" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("close", (status) => resolve({ status, stdout, stderr }))
  })

describe("the OpenAPI document", { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "boxkit-openapi-"))
  const file = join(dir, "openapi.json")
  writeFileSync(file, openApiJson())

  it("spectral:oas finds no error", async () => {
    const result = await run("@stoplight/spectral-cli/dist/index.js", ["lint", "-r", ".spectral.yaml", "-f", "json", file])
    const problems = JSON.parse(result.stdout) as Array<{ code: string; severity: number; path: Array<string> }>
    const errors = problems.filter((problem) => problem.severity === 0)
    expect(errors.map((problem) => `${problem.code} at ${problem.path.join(".")}`)).toEqual([])
  })

  it("redocly's recommended rules find no error and no warning", async () => {
    const result = await run("@redocly/cli/bin/cli.js", ["lint", "--format=json", file])
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number; warnings: number }
      problems: Array<{ ruleId: string; message: string }>
    }
    expect(report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`)).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
    rmSync(dir, { recursive: true, force: true })
  })
})
