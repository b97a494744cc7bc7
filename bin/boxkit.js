#!/usr/bin/env node
// The `boxkit` command. Runs the esbuild bundle of src/bin.ts (dist/boxkit.cjs) in this process, so signals reach the
// service directly.
//
// Installed, the shipped bundle is used as it is: nothing is built or checked, and nothing needs to be writable.
// In a git checkout (a `.git` next to `package.json`), the bundle is rebuilt first when it is missing or older than
// the sources (scripts/build.mjs).
//
// The bundle runs as a `vm.Script` with V8's code cache, one per command: the first run of a command that ends writes
// what V8 compiled while it ran (dist/boxkit.cjs.serve.cache, ... next to the bundle, so a rebuild drops them), and
// later runs of that command start from it instead of parsing and compiling the whole bundle again. A cache V8
// refuses (another Node version or other flags) is rewritten; a cache that cannot be written (a read-only install,
// files of another user) is simply not used. BOXKIT_CODE_CACHE=off runs without any.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import Module, { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { setFlagsFromString } from "node:v8"
import { Script } from "node:vm"

// `boxkit serve` holds less garbage between full collections: the old generation may grow 25% above what the last
// one left, instead of V8's own factor (up to 4x for a small heap); docs/decisions/0005-serve-heap.md. Set here,
// before the bundle is compiled, because V8's code cache records the flags it was made with. A
// `--heap-growing-percent` given to node itself (its command line or NODE_OPTIONS) is kept.
const nodeArguments = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)]
if (process.argv[2] === "serve" && !nodeArguments.some((argument) => /^--heap[-_]growing[-_]percent/.test(argument))) {
  setFlagsFromString("--heap-growing-percent=25")
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const inCheckout = existsSync(join(root, ".git")) && existsSync(join(root, "scripts", "build.mjs"))
const bundle = inCheckout
  ? await (await import("../scripts/build.mjs")).ensureCommand()
  : join(root, "dist", "boxkit.cjs")
if (!existsSync(bundle)) {
  process.stderr.write(`boxkit: ${bundle} is missing; reinstall the package (npm install boxkit)\n`)
  process.exit(1)
}
// --verbose (or BOXKIT_DEBUG=1) shows the stack of a failure: the bundle is then loaded as a plain CommonJS module
// with Node's source maps on, so that the stack names the TypeScript sources (dist/boxkit.cjs.map), not the bundle.
if (process.argv.includes("--verbose") || process.env.BOXKIT_DEBUG === "1") {
  process.setSourceMapsEnabled(true)
  createRequire(import.meta.url)(bundle)
} else {
  runWithCodeCache()
}

function runWithCodeCache() {
  const command = /^[a-z][a-z-]{0,31}$/.test(process.argv[2] ?? "") ? process.argv[2] : "other"
  const cachePath = `${bundle}.${command}.cache`

  const useCache = process.env.BOXKIT_CODE_CACHE !== "off"

  let cachedData
  try {
    cachedData = useCache ? readFileSync(cachePath) : undefined
  } catch {
    cachedData = undefined
  }

  // The bundle has no `import()` of its own (esbuild turned each into a module initialised on first use), so the script
  // needs no dynamic-import loader.
  const script = new Script(Module.wrap(readFileSync(bundle, "utf8")), { filename: bundle, cachedData })

  const writeCache = useCache && (cachedData === undefined || script.cachedDataRejected === true)
  // V8 has read the cache; its bytes (a few MB) need not stay in memory.
  cachedData = undefined

  if (writeCache) {
    // At exit, V8 holds the code of everything this run compiled. Written to a fresh file, then renamed, so that a
    // concurrent start never reads half a cache.
    process.once("exit", () => {
      try {
        const fresh = `${cachePath}.${process.pid}`
        writeFileSync(fresh, script.createCachedData())
        renameSync(fresh, cachePath)
      } catch {
        // Not writable: every run compiles the bundle.
      }
    })
  }

  const module = { exports: {} }
  script.runInThisContext().call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle))
}
