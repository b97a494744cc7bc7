// Bundles the `boxkit` command (src/bin.ts) with esbuild into dist/boxkit.cjs, so that `boxkit serve` starts from
// one pre-compiled file instead of compiling TypeScript and resolving hundreds of modules at every start.
// `node scripts/bundle.mjs` builds it; bin/boxkit.js calls `ensureBundle()` and rebuilds when a source is newer.
//
// CommonJS, one file: bin/boxkit.js runs it as a `vm.Script` with V8's code cache (dist/boxkit.cjs.cache), which
// Node 20 offers for scripts but not for ES modules. Code the command needs only later is still loaded later: esbuild
// turns each dynamic `import()` into a module initialised on first use (undici, the demo's client), or into a
// `require` of the package (the tokenizer).
import { mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const dist = join(root, "dist")
/** The bundle's entry file. */
export const bundlePath = join(dist, "boxkit.cjs")

const newestMtime = (path) => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((newest, name) => Math.max(newest, newestMtime(join(path, name))), stat.mtimeMs)
}

/** True when the bundle is missing or older than a source file, package.json or the lockfile. */
export const isStale = () => {
  let built
  try {
    built = statSync(bundlePath).mtimeMs
  } catch {
    return true
  }
  return [join(root, "src"), join(root, "package.json"), join(root, "package-lock.json"), fileURLToPath(import.meta.url)]
    .some((path) => newestMtime(path) > built)
}

/** Builds the bundle into a fresh folder and swaps it in, so concurrent starts never see half a bundle. */
export const build = async () => {
  const esbuild = await import("esbuild")
  const staging = mkdtempSync(join(root, ".dist-"))
  try {
    await esbuild.build({
      entryPoints: { boxkit: join(root, "src", "bin.ts") },
      bundle: true,
      platform: "node",
      format: "cjs",
      target: "node20",
      outdir: staging,
      minify: process.env.BOXKIT_BUNDLE_MINIFY !== "off",
      outExtension: { ".js": ".cjs" },
      // Native or optional modules stay outside the bundle (loaded from node_modules when present), and so does the
      // tokenizer (2.9 MB, needed only by the first response): its `import()` becomes a `require` when it is loaded.
      external: ["msgpackr-extract", "bufferutil", "utf-8-validate", "gpt-tokenizer", "gpt-tokenizer/*"],
      supported: { "dynamic-import": false },
      logLevel: "error",
      legalComments: "none"
    })
    rmSync(dist, { recursive: true, force: true })
    renameSync(staging, dist)
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

/** Builds the bundle when it is stale; returns its path. */
export const ensureBundle = async () => {
  if (isStale()) await build()
  return bundlePath
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const start = Date.now()
  await build()
  console.log(`bundled ${bundlePath} in ${Date.now() - start} ms`)
}
