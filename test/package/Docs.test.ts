/**
 * The API reference (`npm run docs`, TypeDoc over the package's entry points) builds from the docstrings without a
 * warning: links resolve and every entry point documents. And every export of every entry point, and of every module
 * they re-export, carries a `@category` (Effect's groups: Models, Schemas, Errors, Layers, ...), so that no page of
 * the reference lists exports under TypeDoc's "Other". TypeDoc runs with typedoc.json's settings but writes no
 * output (`--emit none`: no HTML pages into the checkout's docs/api, no JSON model), its project read in memory by the
 * plugin DocsCategories.ts, and without TypeDoc's own type check of the sources (`--skipErrorChecking`): `npm test`
 * type-checks them (`tsc --noEmit -p tsconfig.json`, whose program includes src), and the package tests' pack builds
 * the declarations with a type check too. TypeDoc's link validation and warnings still run.
 */
import { expect, it } from "vitest"
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Categories } from "./DocsCategories.ts"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

it("npm run docs: TypeDoc finds no error and no warning, and every export has a category", async () => {
  const directory = mkdtempSync(join(tmpdir(), "boxkit-docs-"))
  const written = join(directory, "categories.json")
  // typedoc.json without `out`, its paths made absolute (TypeDoc reads them relative to the options file).
  const { out: _pages, ...settings } = JSON.parse(readFileSync(join(checkout, "typedoc.json"), "utf8"))
  const options = join(directory, "typedoc.json")
  writeFileSync(options, JSON.stringify({
    ...settings,
    entryPoints: settings.entryPoints.map((entry: string) => join(checkout, entry)),
    tsconfig: join(checkout, settings.tsconfig),
    readme: join(checkout, settings.readme)
  }))
  try {
    const result = await new Promise<{ status: number | null; output: string }>((resolve) => {
      // TypeDoc's command itself (its bin forks it), with tsx to load the plugin's TypeScript.
      const typedoc = join(checkout, "node_modules", "typedoc", "dist", "cli.js")
      const plugin = join(checkout, "test", "package", "DocsCategories.ts")
      const child = spawn(
        process.execPath,
        ["--import", "tsx", typedoc, "--options", options, "--emit", "none", "--skipErrorChecking", "--plugin", plugin],
        { cwd: checkout, env: { ...process.env, BOXKIT_DOCS_CATEGORIES: written }, stdio: ["ignore", "pipe", "pipe"] }
      )
      let output = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
      child.on("close", (status) => resolve({ status, output }))
    })
    expect(result.output.split("\n").filter((line) => /warning|error/i.test(line) && !/Found 0 errors and 0 warnings/.test(line)))
      .toEqual([])
    expect(result.status).toBe(0)
    expect(existsSync(written), "the plugin read the project").toBe(true)
    const categories = JSON.parse(readFileSync(written, "utf8")) as Categories
    expect(categories.entryPoints).toBe(settings.entryPoints.length)
    expect(categories.uncategorized).toEqual([])
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}, 300_000)
