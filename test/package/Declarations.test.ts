/**
 * The declarations the package ships stand alone: every subpath's `.d.ts` (and what it imports, transitively) names
 * only the optional peers that subpath needs. The declarations are the tarball's (test/support/PackedPackage.ts: the
 * one pack every package test of the run shares), read where the tarball unpacked.
 *
 * That a strict consumer of `boxkit/workflow` on SQLite type-checks with `skipLibCheck: false` in a project without
 * `@effect/sql-pg` and `pg` is Consumer.test.ts's: its one strict compiler run takes place in the installed project
 * before the README's PostgreSQL lines, so that the peers' declarations are checked once for both.
 */
import { beforeAll, describe, expect, it } from "vitest"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as PackedPackage from "../support/PackedPackage.ts"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const manifest = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")) as {
  readonly exports: Record<string, string | { readonly types: string }>
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>
}

/** The optional peers, and the packages that come only with them (their drivers). */
const optionalPeers = [...Object.keys(manifest.peerDependenciesMeta), "@libsql/client", "pg"]
/** The optional peers each subpath's declarations may name; every other subpath names none. */
const allowed: Record<string, ReadonlyArray<string>> = {
  "./workflow": ["@effect/workflow", "@effect/cluster", "@effect/sql"]
}

let dts = ""

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

beforeAll(async () => {
  // The shipped declarations (CommonJS-format, as scripts/build.mjs emits them), read in place.
  dts = join((await PackedPackage.packed()).unpacked, "dist", "dts")
}, PackedPackage.packLimitMillis)

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
    expect(Object.keys(reached).length).toBeGreaterThan(1)
    expect(Object.entries(reached).filter(([, extra]) => extra.length > 0)).toEqual([])
  })
})
