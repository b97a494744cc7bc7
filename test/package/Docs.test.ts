/**
 * The API reference (`npm run docs`, TypeDoc over the package's entry points) builds from the docstrings without a
 * warning: links resolve and every entry point documents. And every export of every entry point, and of every module
 * they re-export, carries a `@category` (Effect's groups: Models, Schemas, Errors, Layers, ...), so that no page of
 * the reference lists exports under TypeDoc's "Other". Validated here from TypeDoc's JSON only: typedoc.json's
 * settings but its `out` (which would render the HTML pages into the checkout's docs/api as well), and without
 * TypeDoc's own type check of the sources (`--skipErrorChecking`): `npm test` type-checks them first (`tsc --noEmit -p
 * tsconfig.json`, whose program includes src), and the package tests' pack builds the declarations with a type check
 * too. TypeDoc's link validation and warnings still run.
 */
import { expect, it } from "vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/** The part of TypeDoc's JSON output read here: a reflection, its children and their categories by child id. */
interface Reflection {
  readonly id: number
  readonly name: string
  readonly kind: number
  readonly children?: ReadonlyArray<Reflection>
  readonly categories?: ReadonlyArray<{ readonly title: string; readonly children: ReadonlyArray<number> }>
}

/** TypeDoc's kinds of a module and of a namespace (`export * as X`), whose exports are listed by category. */
const moduleKinds = new Set([2, 4])

/** `path: name` of every export listed outside a category (TypeDoc's "Other"), in every module and namespace. */
const uncategorized = (reflection: Reflection, path: string): Array<string> => {
  const here = path === "" ? reflection.name : `${path}.${reflection.name}`
  const children = reflection.children ?? []
  const categorized = new Set(
    (reflection.categories ?? []).filter((category) => category.title !== "Other").flatMap((category) => category.children)
  )
  const own = moduleKinds.has(reflection.kind)
    ? children.filter((child) => !categorized.has(child.id)).map((child) => `${here}: ${child.name}`)
    : []
  return [...own, ...children.filter((child) => moduleKinds.has(child.kind)).flatMap((child) => uncategorized(child, here))]
}

it("npm run docs: TypeDoc finds no error and no warning, and every export has a category", async () => {
  const directory = mkdtempSync(join(tmpdir(), "boxkit-docs-"))
  const json = join(directory, "api.json")
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
      const child = spawn(process.execPath, [join(checkout, "node_modules", "typedoc", "bin", "typedoc"), "--options", options, "--json", json, "--skipErrorChecking"], {
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
    const project = JSON.parse(readFileSync(json, "utf8")) as Reflection
    expect(project.children?.length).toBeGreaterThan(0)
    expect((project.children ?? []).flatMap((entry) => uncategorized(entry, ""))).toEqual([])
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}, 300_000)
