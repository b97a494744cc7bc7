// Builds what the package ships, under dist/:
//
// - dist/esm: ES modules, one per source module, with source maps (esbuild transpiles each file; no bundling);
// - dist/cjs: the same as CommonJS (`require("boxkit")`), marked by dist/cjs/package.json;
// - dist/dts: `.d.ts` declarations with declaration maps (tsc -p tsconfig.build.json);
// - dist/boxkit.cjs: the `boxkit` command, one CommonJS bundle of src/bin.ts with its source map, which
//   bin/boxkit.js runs with V8's code cache;
// - the o200k tables of the local model's tokenizer: dist/{esm,cjs}/Server/responses/TokenizerTables.js are bundles of that
//   module with its one encoding inlined, so the package needs no tokenizer package at run time.
//
// `node scripts/build.mjs` builds everything (npm run build; npm pack runs it as `prepack`);
// `node scripts/build.mjs --command` only the command. `ensureCommand()` rebuilds the command when a source is newer:
// bin/boxkit.js calls it in a git checkout, and vitest's global setup (test/support/BuildCommand.ts) before the tests.
// With `BOXKIT_DOCS_CHECK=FILE` the same declarations come from TypeDoc's program, which then also converts the API
// reference into FILE's findings (the package tests' pack: one compile for both; `declarationsAndReference`).
// The package has no `prepare` script: npm would list it among the install scripts of every user's install.
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, sep } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const dist = join(root, "dist")
const src = join(root, "src")
/** The command's bundle. */
export const commandPath = join(dist, "boxkit.cjs")
/** The tokenizer tables the command loads (outside its bundle: read only when the first response needs them). */
const commandTables = join(dist, "cjs", "Server", "responses", "TokenizerTables.js")

/** Source modules that are not part of the library (the command and its subcommands live in the bundle). */
const commandOnly = (path) => path === join(src, "bin.ts") || path.startsWith(join(src, "Cli") + sep)

const sourceFiles = (directory = src) =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : []
  })

const esbuild = () => import("esbuild")

/** Writes `{"type": ...}` as the package.json of `directory`. */
const markFormat = (directory, type) => {
  mkdirSync(directory, { recursive: true })
  writeFileSync(join(directory, "package.json"), JSON.stringify({ type, sideEffects: [] }, null, 2) + "\n")
}

/** The tokenizer tables as one bundle of `format` at `outfile`. */
const buildTables = async (format, outfile) => {
  const { build } = await esbuild()
  await build({
    entryPoints: [join(src, "Server", "responses", "TokenizerTables.ts")],
    bundle: true,
    platform: "node",
    format,
    target: "node20",
    outfile,
    // Data and another package's code: no source map, its licence named on top.
    banner: { js: "/*! gpt-tokenizer's o200k_base encoding, bundled. MIT License, Copyright (c) 2023-2024 Bazyli Brzoska. */" },
    legalComments: "inline",
    logLevel: "error"
  })
}

/** Each library module transpiled to `format` under `outdir`, with source maps pointing at src/. */
const transpile = async (format, outdir) => {
  const { build } = await esbuild()
  await build({
    entryPoints: sourceFiles().filter((path) => !commandOnly(path)),
    outbase: src,
    outdir,
    bundle: false,
    platform: "node",
    format,
    target: "node20",
    sourcemap: true,
    sourcesContent: false,
    // In CommonJS, `import()` becomes `require`, so that one program never loads both builds of a dependency.
    supported: format === "cjs" ? { "dynamic-import": false } : {},
    logLevel: "error"
  })
  await buildTables(format, join(outdir, "Server", "responses", "TokenizerTables.js"))
}

/**
 * The declarations: by tsc, or, when `BOXKIT_DOCS_CHECK` names a file, by TypeDoc from the same program
 * (declarationsAndReference).
 */
const declarations = async (outdir) => {
  const check = process.env.BOXKIT_DOCS_CHECK
  if (check !== undefined && check !== "") await declarationsAndReference(outdir, check)
  else {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
    execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--declarationDir", outdir], {
      cwd: root,
      // Its diagnostics to stderr, like the rest of the build's output: stdout stays for `npm pack --json`.
      stdio: ["ignore", 2, 2]
    })
  }
  // The declarations serve `import` and `require` alike (as Effect's own packages do): CommonJS-format `.d.ts`.
  markFormat(outdir, "commonjs")
}

/**
 * One compile for the declarations and the API reference (the package tests' pack, test/support/PackedPackage.ts):
 * TypeDoc, with typedoc.json's settings and `emit: "both"`, makes the program of tsconfig.build.json (the files and
 * settings tsc reads), fails on its diagnostics as tsc would (type errors and declaration errors), emits the
 * declarations into `outdir`, then converts the same program into the reference of `npm run docs` (its type checker
 * already warm) and validates it, writing no pages. `check` (JSON) gets every message TypeDoc logged from Info up
 * (`{ level, message }`, level "Info", "Warn" or "Error"); the plugins named in `BOXKIT_DOCS_PLUGIN` (paths, comma
 * separated; TypeScript through tsx) are loaded. A warning fails the check (test/package/Docs.test.ts), not the build.
 */
const declarationsAndReference = async (outdir, check) => {
  const plugins = (process.env.BOXKIT_DOCS_PLUGIN ?? "").split(",").filter((path) => path !== "")
  if (plugins.some((path) => path.endsWith(".ts"))) (await import("tsx/esm/api")).register()
  const { Application, ConsoleLogger, LogLevel, TSConfigReader, TypeDocReader } = await import("typedoc")
  const messages = []
  /** TypeDoc's messages kept for `check` and written to stderr (stdout stays for `npm pack --json`). */
  class CheckLogger extends ConsoleLogger {
    log(message, level) {
      this.errorCount += level === LogLevel.Error ? 1 : 0
      this.warningCount += level === LogLevel.Warn ? 1 : 0
      if (level < this.level) return
      messages.push({ level: LogLevel[level], message })
      process.stderr.write(`${message}\n`)
    }
  }
  // Until CheckLogger takes over, TypeDoc's own logger writes; only its warnings and errors, which go to stderr.
  const app = await Application.bootstrapWithPlugins(
    { options: join(root, "typedoc.json"), emit: "both", compilerOptions: { declarationDir: outdir }, plugin: plugins, logLevel: "Warn" },
    [new TypeDocReader(), new TSConfigReader()]
  )
  if (app.logger.hasErrors() || app.logger.hasWarnings()) throw new Error("TypeDoc's settings or plugins have problems (above)")
  app.logger = new CheckLogger()
  app.logger.level = LogLevel.Info
  const project = await app.convert()
  if (project === undefined) throw new Error("the declarations' program has errors (above)")
  app.validate(project)
  writeFileSync(check, JSON.stringify({ messages }, null, 2))
}

/** Builds into a fresh folder next to `target` and swaps it in, so that nobody sees half an output. */
const swapIn = async (target, make) => {
  mkdirSync(dirname(target), { recursive: true })
  const staging = mkdtempSync(join(dirname(target), ".build-"))
  try {
    await make(staging)
    rmSync(target, { recursive: true, force: true })
    renameSync(staging, target)
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

/**
 * Writes package.json's `version` into src/Client/Version.ts when it differs (the client's `User-Agent` names it, and
 * every build compiles that constant in), so that a version bump reaches the tarball and the command.
 */
const syncVersion = () => {
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
  const path = join(src, "Client", "Version.ts")
  const source = readFileSync(path, "utf8")
  const declaration = /^export const version = "[^"]*"$/m
  if (!declaration.test(source)) throw new Error(`${relative(root, path)} has no \`export const version = "..."\` line`)
  const updated = source.replace(declaration, `export const version = ${JSON.stringify(version)}`)
  if (updated !== source) writeFileSync(path, updated)
}

/** dist/esm, dist/cjs and dist/dts. */
export const buildLibrary = async () => {
  syncVersion()
  await swapIn(join(dist, "esm"), (out) => transpile("esm", out).then(() => markFormat(out, "module")))
  await swapIn(join(dist, "cjs"), (out) => transpile("cjs", out).then(() => markFormat(out, "commonjs")))
  await swapIn(join(dist, "dts"), declarations)
}

/** The command's bundle (dist/boxkit.cjs and its map) and the tables it loads. */
export const buildCommand = async () => {
  syncVersion()
  const { build } = await esbuild()
  if (!existsSync(commandTables)) {
    markFormat(join(dist, "cjs"), "commonjs")
    await buildTables("cjs", commandTables)
  }
  const tablesFromBundle = "./" + relative(dist, commandTables).split("\\").join("/")
  const staging = mkdtempSync(join(root, ".dist-"))
  try {
    await build({
      entryPoints: { boxkit: join(src, "bin.ts") },
      bundle: true,
      platform: "node",
      format: "cjs",
      target: "node20",
      outdir: staging,
      minify: process.env.BOXKIT_BUNDLE_MINIFY !== "off",
      sourcemap: true,
      sourcesContent: false,
      outExtension: { ".js": ".cjs" },
      // Native or optional modules stay outside the bundle (loaded from node_modules when present).
      // The database drivers of durable state come with its optional peers (@effect/sql-libsql, @effect/sql-pg):
      // loaded from node_modules when `serve --data-dir` or `--database-url` asks for them (libsql is native).
      // The workflow engine of `orchestrate` (@effect/workflow, @effect/cluster, @effect/rpc) is JavaScript and
      // bundled like @effect/sql; its program is required only when `orchestrate` runs.
      external: ["msgpackr-extract", "bufferutil", "utf-8-validate", "@libsql/client", "libsql", "pg"],
      plugins: [{
        // The tokenizer tables (about 3 MB, needed only by the first response) stay outside: their `import()`
        // becomes a `require` of dist/cjs/Server/responses/TokenizerTables.js when they are first needed.
        name: "tokenizer-tables-outside",
        setup(build) {
          build.onResolve({ filter: /TokenizerTables\.js$/ }, () => ({ path: tablesFromBundle, external: true }))
        }
      }, {
        // Swagger UI's script and styles (about 3.7 MB of strings, needed only by the first GET /docs) stay outside
        // too: read from the installed @effect/platform (a peer dependency) when /docs is first asked for. Its
        // module holds only those two strings, so no second copy of Effect's modules is loaded. Required on the
        // first read of either string, not when the module is initialised: importing anything from the
        // `@effect/platform` index initialises HttpApiSwagger too, which kept the strings on every command's heap.
        name: "swagger-ui-outside",
        setup(build) {
          build.onResolve({ filter: /^\.\/internal\/httpApiSwagger\.js$/ }, (args) =>
            args.importer.includes(`${sep}@effect${sep}platform${sep}`) ? { path: "swagger-ui", namespace: "outside" } : undefined)
          build.onLoad({ filter: /^swagger-ui$/, namespace: "outside" }, () => ({
            loader: "js",
            contents: "const { dirname, join } = require(\"node:path\")\n" +
              "let strings\n" +
              "const load = () => strings ??= require(join(dirname(require.resolve(\"@effect/platform/package.json\")), " +
              "\"dist\", \"cjs\", \"internal\", \"httpApiSwagger.js\"))\n" +
              "Object.defineProperty(exports, \"javascript\", { enumerable: true, get: () => load().javascript })\n" +
              "Object.defineProperty(exports, \"css\", { enumerable: true, get: () => load().css })\n"
          }))
        }
      }],
      supported: { "dynamic-import": false },
      logLevel: "error",
      legalComments: "none"
    })
    mkdirSync(dist, { recursive: true })
    for (const name of readdirSync(dist)) {
      // A new bundle makes the code caches of the old one useless.
      if (name.startsWith("boxkit.cjs")) rmSync(join(dist, name), { force: true })
    }
    for (const name of readdirSync(staging)) renameSync(join(staging, name), join(dist, name))
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

const newestMtime = (path) => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((newest, name) => Math.max(newest, newestMtime(join(path, name))), stat.mtimeMs)
}

/** True when the command's bundle is missing or older than a source file, package.json or this script. */
export const isCommandStale = () => {
  let built
  try {
    built = statSync(commandPath).mtimeMs
  } catch {
    return true
  }
  if (!existsSync(commandTables)) return true
  return [src, join(root, "package.json"), fileURLToPath(import.meta.url)].some((path) => newestMtime(path) > built)
}

/** Rebuilds the command when it is stale (used in a git checkout only); returns the bundle's path. */
export const ensureCommand = async () => {
  if (isCommandStale()) await buildCommand()
  return commandPath
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const start = Date.now()
  if (!process.argv.includes("--command")) await buildLibrary()
  await buildCommand()
  console.error(`built ${relative(root, dist)}/ in ${Date.now() - start} ms`)
}
