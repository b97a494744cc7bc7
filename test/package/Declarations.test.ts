/**
 * The declarations the package ships stand alone: every subpath's `.d.ts` (and what it imports, transitively) names
 * only the optional peers that subpath needs, and a strict consumer of `boxkit/workflow` on SQLite type-checks with
 * `skipLibCheck: false` in a project whose node_modules lack `@effect/sql-pg` and `pg`.
 *
 * The declarations are the tarball's (test/support/PackedPackage.ts: the one pack every package test of the run
 * shares), copied into a temporary project (no install) whose node_modules links every installed package of the
 * checkout except the PostgreSQL ones; then one tsc run of the fixture test/package/consumer/workflow-sqlite.ts and
 * of the example in boxkit/testing's documentation (`preserveSymlinks`, so that every module resolves through that
 * project's node_modules).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as PackedPackage from "../support/PackedPackage.ts"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const fixtures = join(checkout, "test", "package", "consumer")
const manifest = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")) as {
  readonly exports: Record<string, string | { readonly types: string }>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
}
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")

/** The optional peers, and the packages that come only with them (their drivers). */
const optionalPeers = [...Object.keys(manifest.peerDependenciesMeta), "@libsql/client", "pg"]
/** Left out of the consumer's node_modules: a SQLite user of boxkit/workflow installs none of them. */
const postgresOnly = ["@effect/sql-pg", "pg"]
/** The optional peers each subpath's declarations may name; every other subpath names none. */
const allowed: Record<string, ReadonlyArray<string>> = {
  "./workflow": ["@effect/workflow", "@effect/cluster", "@effect/sql"]
}

let work = ""
let dts = ""

/** Runs node with `args` without blocking this worker: exit status and output. */
const node = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ readonly status: number | null; readonly output: string }>((done) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.on("close", (status) => done({ status, output }))
  })

/** The package a bare specifier names (`@scope/name` or `name`). */
const packageOf = (specifier: string) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")

/** The packages the declarations reachable from `entry` import, with the file that imports each. */
const importsReachableFrom = (entry: string) => {
  const found = new Map<string, string>()
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const match of readFileSync(file, "utf8").matchAll(/(?:from\s+|import\(\s*)"([^"]+)"/g)) {
      const specifier = match[1]!
      if (!specifier.startsWith(".")) {
        if (!found.has(packageOf(specifier))) found.set(packageOf(specifier), relative(dts, file))
        continue
      }
      const target = resolve(dirname(file), specifier).replace(/\.js$/, ".d.ts")
      if (existsSync(target)) visit(target)
      else if (existsSync(join(resolve(dirname(file), specifier), "index.d.ts"))) {
        visit(join(resolve(dirname(file), specifier), "index.d.ts"))
      }
    }
  }
  visit(entry)
  return found
}

/** The example of boxkit/testing's documentation (the first `ts` block of src/testing.ts), as a module. */
const testingExample = () => {
  const block = /```ts\n([\s\S]*?)\n \* ```/.exec(readFileSync(join(checkout, "src", "testing.ts"), "utf8"))
  if (block === null) throw new Error("src/testing.ts has no ts example")
  return block[1]!.split("\n").map((line) => line.replace(/^ \* ?/, "")).join("\n") + "\n"
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "boxkit-declarations-"))
  const modules = join(work, "node_modules")
  const boxkit = join(modules, "boxkit")
  dts = join(boxkit, "dist", "dts")
  // The shipped manifest and declarations (CommonJS-format, as scripts/build.mjs emits them).
  const { unpacked } = await PackedPackage.packed()
  mkdirSync(boxkit, { recursive: true })
  copyFileSync(join(unpacked, "package.json"), join(boxkit, "package.json"))
  cpSync(join(unpacked, "dist", "dts"), dts, { recursive: true })
  // Every installed package but the PostgreSQL ones (scoped packages linked one by one).
  const installed = join(checkout, "node_modules")
  for (const name of readdirSync(installed)) {
    if (name.startsWith(".")) continue
    const names = name.startsWith("@") ? readdirSync(join(installed, name)).map((inner) => `${name}/${inner}`) : [name]
    for (const full of names) {
      if (postgresOnly.includes(full)) continue
      mkdirSync(dirname(join(modules, full)), { recursive: true })
      symlinkSync(join(installed, full), join(modules, full), "dir")
    }
  }
  for (const file of ["workflow-sqlite.ts", "tsconfig.workflow-sqlite.json"]) {
    copyFileSync(join(fixtures, file), join(work, file))
  }
  writeFileSync(join(work, "testing-example.ts"), testingExample())
}, PackedPackage.packLimitMillis)

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true })
})

describe("the declarations of every subpath", () => {
  it("name only the optional peers their subpath needs", () => {
    const reached: Record<string, ReadonlyArray<string>> = {}
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      if (typeof target === "string") continue
      const imports = importsReachableFrom(join(dts, relative("./dist/dts", target.types)))
      const peers = [...imports.keys()].filter((name) => optionalPeers.includes(name))
      const extra = peers.filter((name) => !(allowed[subpath] ?? []).includes(name))
      reached[subpath] = extra.map((name) => `${name} (from ${imports.get(name)})`)
    }
    expect(Object.entries(reached).filter(([, extra]) => extra.length > 0)).toEqual([])
  })

  it("type-check a strict boxkit/workflow consumer on SQLite without @effect/sql-pg installed, and the testing example", async () => {
    expect(existsSync(join(work, "node_modules", "@effect", "sql-pg"))).toBe(false)
    const checked = await node([tsc, "-p", join(work, "tsconfig.workflow-sqlite.json")], work)
    expect(checked.output).toBe("")
    expect(checked.status).toBe(0)
  }, 600_000)
})
