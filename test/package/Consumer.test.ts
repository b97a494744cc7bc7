/**
 * The package as users get it: the checkout is packed once (`npm pack`, which runs the build), and one fresh project
 * takes it in two steps, checked after each.
 *
 * First the tarball alone, with the peers npm installs from its peer ranges: that project imports it from plain Node
 * ESM and runs the quickstart against the embedded service, `require`s it, bundles a client-only program with esbuild
 * (no local-service module may be inside), holds no build tool, fits the install budget, and the installed `boxkit`
 * command says which optional peers `--data-dir` needs. These checks only read the project: they run at once.
 *
 * Then the README's own install lines in the same project ("the README", below; the package's name replaced by the
 * tarball), in order. Once the lines before the first PostgreSQL package have run (the project then has the workflow
 * peers on SQLite and neither `@effect/sql-pg` nor `pg`), a hard-linked copy of the project is type-checked in one
 * compiler run with `skipLibCheck: false` (each run checks the peers' declarations again, which is most of its
 * time): every TypeScript block of the README, the strict consumer fixtures (ESM and CommonJS), a strict consumer of
 * `boxkit/workflow` on SQLite and the example of boxkit/testing's documentation. So the SQLite consumer proves that
 * the shipped declarations stand without the PostgreSQL packages, in the same run. Meanwhile the remaining install
 * lines run in the project itself; then the README's programs, daemon, test files, commands and seed run against a
 * `boxkit serve` of the installed package, `boxkit serve --data-dir` keeps its state over a restart with the optional
 * peers the README installed, and last the command runs from a read-only install as a user who does not own its files.
 *
 * That no subpath's declarations import an optional peer beyond their own is Declarations.test.ts's (every subpath's
 * import graph).
 *
 * Installs ask the registry as npm does by default (its metadata cached for minutes at most, the tarballs from npm's
 * cache): the peers installed are the newest the ranges allow on the registry now, which is what the test is for.
 * The tarball is the one every package test of the run shares (test/support/PackedPackage.ts: packed once per tree
 * content, away from the checkout's own dist/). Figures (tarball, footprint, bundle, tsc time) are printed for the
 * closing note.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFileSync, spawn } from "node:child_process"
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { rm } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import * as ReadmeBlocks from "../../scripts/readme-blocks.ts"
import * as PackedPackage from "../support/PackedPackage.ts"
import * as Readme from "./Readme.ts"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const fixtures = join(checkout, "test", "package", "consumer")
const checkoutPackage = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8"))

let work = ""
let project = ""
/** The consumer fixtures inside the project, beside the README's blocks (both have a `quickstart.mjs`). */
let fixturesCopy = ""
let tarball: PackedPackage.Tarball

/**
 * Runs a command without blocking this worker (vitest's worker must keep answering its runner while npm works):
 * its exit status and output.
 */
const run = (command: string, args: ReadonlyArray<string>, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? project,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 240_000
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", (error) => resolve({ status: null, stdout, stderr: stderr + String(error) }))
    child.on("close", (status) => resolve({ status, stdout, stderr }))
  })

const runOk = async (command: string, args: ReadonlyArray<string>, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) => {
  const result = await run(command, args, options)
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited ${result.status}\n${result.stdout}\n${result.stderr}`)
  }
  return result.stdout
}

const kilobytes = (path: string) => Number(execFileSync("du", ["-sk", path], { encoding: "utf8" }).split("\t")[0])

/** Runs as `nobody` when this process is root (so that file permissions hold), else as this user. */
const asOtherUser = (args: ReadonlyArray<string>) => {
  const runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].find((path) => existsSync(path))
  return process.getuid?.() === 0 && runuser !== undefined
    ? run(runuser, ["-u", "nobody", "--", ...args])
    : run(args[0]!, args.slice(1))
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "boxkit-consumer-"))
  chmodSync(work, 0o755)
  tarball = (await PackedPackage.packed()).tarball
}, PackedPackage.packLimitMillis)

// A project with its node_modules (about 200 MB) to remove: longer than a hook's default 30 s on a busy machine.
afterAll(async () => {
  await (await readmePrepared?.catch(() => undefined))?.service.stop()
  if (work !== "") {
    await run("chmod", ["-R", "u+w", work], { cwd: tmpdir() })
    await rm(work, { recursive: true, force: true })
  }
}, 180_000)

/** The project with the tarball alone (npm installs the peers from their ranges) and the programs of its checks. */
const installConsumer = async () => {
  project = join(work, "project")
  fixturesCopy = join(project, "package-checks")
  mkdirSync(fixturesCopy, { recursive: true })
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
  for (const name of ["quickstart.mjs", "require.cjs", "client-only.mjs"]) {
    cpSync(join(fixtures, name), join(fixturesCopy, name))
  }
  await runOk("npm", ["install", ...Readme.npmInstallFlags, tarball.filename])
  chmodSync(project, 0o755)
}

describe("the installed package", { timeout: 240_000, concurrent: true }, () => {
  beforeAll(installConsumer, 300_000)

  // Concurrent tests take `expect` from their context, which ties each assertion to its own test.

  it("ships compiled output, declarations, the command and no build tool", ({ expect }) => {
    const installed = join(project, "node_modules", "boxkit")
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"))
    for (const [subpath, target] of Object.entries<any>(manifest.exports)) {
      if (typeof target === "string") continue
      for (const condition of ["types", "import", "require"]) {
        expect(existsSync(join(installed, target[condition])), `${subpath} ${condition}`).toBe(true)
      }
    }
    expect(existsSync(join(installed, "dist", "boxkit.cjs"))).toBe(true)
    expect(existsSync(join(installed, "dist", "boxkit.cjs.map"))).toBe(true)
    expect(Object.keys(manifest.dependencies ?? {})).toEqual(["find-my-way-ts", "uuid"])
    // npm 11 lists a dependency's install-time scripts in a warning on every user's install: the package has none.
    const installScripts = ["preinstall", "install", "postinstall", "prepare"].filter((name) => manifest.scripts?.[name])
    expect(installScripts).toEqual([])
    for (const tool of ["esbuild", "tsx", "typescript", "gpt-tokenizer", "@effect/cli"]) {
      expect(existsSync(join(project, "node_modules", tool)), tool).toBe(false)
    }
    const types = join(project, "node_modules", "@types")
    const footprint = kilobytes(join(project, "node_modules")) - (existsSync(types) ? kilobytes(types) : 0)
    const peers = [
      "effect",
      "@effect/platform",
      "@effect/platform-node",
      "@effect/experimental"
    ].map((name) =>
      `${name} ${JSON.parse(readFileSync(join(project, "node_modules", name, "package.json"), "utf8")).version}`
    )
    console.log(`peers installed: ${peers.join(", ")}`)
    console.log(
      `tarball: ${(tarball.size / 1024).toFixed(0)} KiB packed, ${(tarball.unpackedSize / 1024).toFixed(0)} KiB unpacked, ` +
        `${tarball.entryCount} files; install with peers: ${(footprint / 1024).toFixed(1)} MiB ` +
        `(boxkit ${(kilobytes(installed) / 1024).toFixed(1)} MiB)`
    )
    expect(footprint).toBeLessThanOrEqual(100 * 1024)
  })

  it("imports from plain Node ESM and runs the quickstart against the embedded service", async ({ expect }) => {
    expect((await runOk(process.execPath, ["quickstart.mjs"], { cwd: fixturesCopy })).trim()).toBe("esm: box running, response completed")
  })

  it("is require()d from CommonJS", async ({ expect }) => {
    expect((await runOk(process.execPath, ["require.cjs"], { cwd: fixturesCopy })).trim()).toBe(
      "cjs: secret GITHUB_TOKEN, missing is NotFoundError: true"
    )
  })

  it("bundles a client-only program without the local service", async ({ expect }) => {
    const esbuild = await import("esbuild")
    const bundle = async (entry: string) => {
      const result = await esbuild.build({
        absWorkingDir: project,
        entryPoints: [entry],
        bundle: true,
        minify: true,
        platform: "node",
        format: "esm",
        target: "node20",
        outfile: join(project, "out", `${entry}.js`),
        metafile: true,
        logLevel: "error"
      })
      return Object.keys(result.metafile.inputs)
    }
    const local = /boxkit\/dist\/esm\/(Server\/|local\.js|testing\.js)|TokenizerTables|gpt-tokenizer/
    const clientOnly = await bundle("package-checks/client-only.mjs")
    expect(clientOnly.filter((input) => input.includes("boxkit/dist/esm/Client/Apps.js"))).toHaveLength(1)
    expect(clientOnly.filter((input) => local.test(input))).toEqual([])
    // The same check sees the local service where a program does use it.
    expect((await bundle("package-checks/quickstart.mjs")).filter((input) => local.test(input)).length).toBeGreaterThan(10)
    const size = statSync(join(project, "out", "package-checks/client-only.mjs.js")).size
    console.log(`client-only bundle: ${(size / 1024).toFixed(0)} KiB minified, ${clientOnly.length} modules`)
  })

  it("says which optional peers boxkit serve --data-dir needs while they are missing", async ({ expect }) => {
    const boxkit = join(project, "node_modules", ".bin", "boxkit")
    // Without the optional SQL peers the command says what to install: the README's own install line.
    const missing = await run(boxkit, ["serve", "--port", "0", "--data-dir", join(work, "unused")])
    expect(missing.status).toBe(1)
    expect(missing.stderr).toContain("npm install @effect/sql@^0.52.1 @effect/sql-libsql@^0.42.0 libsql@^0.4.7")
  })
})

/** The README and its blocks (scripts/readme-blocks.ts). */
const readme = readFileSync(join(checkout, "README.md"), "utf8")
const { blocks, problems } = ReadmeBlocks.parse(readme)

type ProcessResult = { status: number | null; stdout: string; stderr: string }

/** The README's project: installed, its blocks written and type-checked, a `boxkit serve` for them to use. */
interface ReadmeProject {
  readonly compiled: ProcessResult
  /** The PostgreSQL packages in the type-checked copy's node_modules: none, else its SQLite consumer proves nothing. */
  readonly postgresTypeChecked: ReadonlyArray<string>
  /** The PostgreSQL packages in the project once every install line ran (the README installs them last). */
  readonly postgresInstalled: ReadonlyArray<string>
  readonly service: Readme.Started
  readonly environment: NodeJS.ProcessEnv
  /** Figures for the time budget of npm test. */
  readonly millis: { install: number; typeCheck: number }
}

let readmePrepared: Promise<ReadmeProject> | undefined

/**
 * The longest the README's project may take to prepare (its six install lines, the strict compiler run, a serve): a
 * bound of a hang, not an expected duration; a 2-core machine under a load of 18 took over 5 minutes.
 */
const readmeLimitMillis = 600_000

/** The packages only a PostgreSQL user installs: a SQLite consumer of boxkit/workflow must type-check without them. */
const postgresOnly = ["@effect/sql-pg", "pg"]

/** Whether npm's arguments name one of {@link postgresOnly} (`name` or `name@range`). */
const namesPostgres = (args: ReadonlyArray<string>) =>
  args.some((word) => postgresOnly.some((name) => word === name || word.startsWith(`${name}@`)))

/** The fixtures of the strict compiler run (test/package/consumer), beside the README's TypeScript blocks. */
const strictFixtures = ["strict.ts", "strict.cts", "workflow-sqlite.ts"]

/** The example of boxkit/testing's documentation (the first `ts` block of src/testing.ts), as a module. */
const testingExample = () => {
  const block = /```ts\n([\s\S]*?)\n \* ```/.exec(readFileSync(join(checkout, "src", "testing.ts"), "utf8"))
  if (block === null) throw new Error("src/testing.ts has no ts example")
  return block[1]!.split("\n").map((line) => line.replace(/^ \* ?/, "")).join("\n") + "\n"
}

/**
 * The compiler settings of the one strict run: the README's (Readme.strictTsconfig) with the consumer fixtures'
 * `noPropertyAccessFromIndexSignature`, over the README's TypeScript blocks, the fixtures `strict.ts` (ESM),
 * `strict.cts` (CommonJS) and `workflow-sqlite.ts`, and boxkit/testing's example; its JavaScript goes to `outDir`
 * (the project's `out/`, where the README's programs are run from).
 */
const strictProject = (outDir: string) => ({
  compilerOptions: { ...Readme.strictTsconfig.compilerOptions, noPropertyAccessFromIndexSignature: true, outDir },
  include: [...Readme.strictTsconfig.include, ...strictFixtures.map((name) => `package-checks/${name}`), "package-checks/testing-example.ts"]
})

/**
 * A copy of the project as it is now, for the strict compiler run: its node_modules hard-linked (npm replaces files
 * rather than writing into them, so the copy keeps this moment's packages while the install lines go on in the
 * project), the README's blocks, the fixtures and the compiler settings. Also which PostgreSQL packages it holds.
 */
const copyForTypeCheck = async (): Promise<{ directory: string; postgres: ReadonlyArray<string> }> => {
  const directory = join(work, "type-checked")
  mkdirSync(join(directory, "package-checks"), { recursive: true })
  await runOk("cp", ["-al", join(project, "node_modules"), join(directory, "node_modules")])
  cpSync(join(project, "package.json"), join(directory, "package.json"))
  for (const name of strictFixtures) cpSync(join(fixtures, name), join(directory, "package-checks", name))
  writeFileSync(join(directory, "package-checks", "testing-example.ts"), testingExample())
  ReadmeBlocks.writeBlocks(blocks, directory)
  writeFileSync(join(directory, "tsconfig.json"), JSON.stringify(strictProject(join(project, "out")), null, 2))
  return { directory, postgres: postgresOnly.filter((name) => existsSync(join(directory, "node_modules", name))) }
}

/** The one strict compiler run (the checkout's TypeScript) in `directory`: its result and how long it took. */
const typeCheck = async (directory: string) => {
  const started = Date.now()
  const compiled = await run(process.execPath, [join(checkout, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], {
    cwd: directory
  })
  return { compiled, millis: Date.now() - started }
}

/** Runs npm install lines one after the other in the project; resolves with the time they took. */
const installLines = async (commands: ReadonlyArray<ReadonlyArray<string>>) => {
  const started = Date.now()
  for (const args of commands) await runOk("npm", [...args, ...Readme.npmInstallFlags])
  return Date.now() - started
}

/**
 * The README's own install lines in the consumer's project, in order (the package's name replaced by the tarball);
 * the strict compiler run starts, over a copy (copyForTypeCheck), once the lines before the first PostgreSQL package
 * have run, and runs beside the remaining lines; then the blocks are written and a `boxkit serve` of the installed
 * package started.
 */
const prepareReadme = async (): Promise<ReadmeProject> => {
  const commands = Readme.installCommands(blocks, tarball.filename)
  const firstPostgres = commands.findIndex(namesPostgres)
  const split = firstPostgres === -1 ? commands.length : firstPostgres
  const installedBefore = await installLines(commands.slice(0, split))
  // The environment of the type-check, not the README's business: the Node types (TypeScript is the checkout's). Not
  // saved: a later install line may remove it again, which the README's programs do not mind.
  await runOk("npm", ["install", ...Readme.npmInstallFlags, "--no-save", `@types/node@${checkoutPackage.devDependencies["@types/node"]}`])
  const copy = await copyForTypeCheck()
  // Both are awaited, so that a failed install does not leave the compiler running while the project is removed.
  const [checked, installed] = await Promise.allSettled([typeCheck(copy.directory), installLines(commands.slice(split))])
  if (installed.status === "rejected") throw installed.reason
  if (checked.status === "rejected") throw checked.reason
  const millis = { install: installedBefore + installed.value, typeCheck: checked.value.millis }
  ReadmeBlocks.writeBlocks(blocks, project)
  const service = await Readme.startUntil(join(project, "node_modules", ".bin", "boxkit"), ["serve", "--port", "0"], {
    cwd: project,
    until: /listening on (http:\/\/\S+\/v1)/,
    timeoutMillis: 60_000
  })
  // A user's shell: the README's variables, and none of the variables vitest sets for its own workers.
  const testRunnerVariables = Object.keys(process.env).filter((key) => key.startsWith("VITEST") || key === "TEST" || key === "NODE_ENV")
  const environment = {
    ...Object.fromEntries(testRunnerVariables.map((key) => [key, undefined])),
    BOX_API_KEY: "sk_acme_org",
    BOX_BASE_URL: service.matched[1]
  }
  const postgresInstalled = postgresOnly.filter((name) => existsSync(join(project, "node_modules", name)))
  return { compiled: checked.value.compiled, postgresTypeChecked: copy.postgres, postgresInstalled, service, environment, millis }
}

/**
 * Runs one block of the README as its marker says, in the project with the README's `environment`; install, output
 * and illustration blocks have nothing more to run.
 */
const checkBlock = async (
  block: ReadmeBlocks.ReadmeBlock,
  environment: NodeJS.ProcessEnv
): Promise<{ status: number | null; output: string; problems: ReadonlyArray<string> }> => {
  const options = { cwd: project, env: environment }
  const finished = (result: { status: number | null; stdout: string; stderr: string }) => ({
    status: result.status,
    output: result.stdout + result.stderr,
    problems: []
  })
  switch (block.check) {
    case "run":
      return finished(await run(process.execPath, [Readme.emittedFile(block.file!)], options))
    case "vitest":
      return finished(await run(process.execPath, [join(project, "node_modules", "vitest", "vitest.mjs"), "run", block.file!], options))
    case "shell":
      return finished(await run("bash", ["-e", "-c", block.code], options))
    case "seed": {
      const served = await Readme.startUntil(join(project, "node_modules", ".bin", "boxkit"), ["serve", "--port", "0", "--seed", block.file!], {
        ...options,
        until: /listening on http/,
        timeoutMillis: 60_000
      })
      return { status: await served.stop(), output: served.output(), problems: [] }
    }
    case "signal":
      return checkDaemon(block, environment)
    case "serve":
      return checkServe(block, environment)
    default:
      return { status: 0, output: "", problems: [] }
  }
}

/**
 * A service and the commands that use it (scripts/readme-blocks.ts `serveBlock`): `boxkit serve` started on a free
 * port until it says where it listens, the other lines run with bash against that address; then the service is sent
 * SIGTERM and must exit 0.
 */
const checkServe = async (block: ReadmeBlocks.ReadmeBlock, environment: NodeJS.ProcessEnv) => {
  const serve = ReadmeBlocks.serveBlock(block)
  const served = await Readme.startUntil(join(project, "node_modules", ".bin", "boxkit"), serve.serveArgs, {
    cwd: project,
    env: environment,
    until: /listening on (http:\/\/\S+)\/v1/,
    timeoutMillis: 60_000
  })
  const commands = await run("bash", ["-e", "-c", serve.commands(served.matched[1]!)], { cwd: project, env: environment })
  const stopped = await served.stop("SIGTERM")
  const problems = stopped === 0 ? [] : [`boxkit serve exited ${stopped} on SIGTERM:\n${served.output()}`]
  return { status: commands.status, output: commands.stdout + commands.stderr, problems }
}

/**
 * A daemon: started, sent SIGTERM once its output says it runs; it must exit 0 and leave every box it named
 * terminated.
 */
const checkDaemon = async (block: ReadmeBlocks.ReadmeBlock, environment: NodeJS.ProcessEnv) => {
  const daemon = await Readme.startUntil(process.execPath, [Readme.emittedFile(block.file!)], {
    cwd: project,
    env: environment,
    until: new RegExp(block.until!.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
    timeoutMillis: 120_000
  })
  const status = await daemon.stop("SIGTERM")
  const boxIds = [...new Set(daemon.output().match(/sb_[0-9a-f-]{36}/g) ?? [])]
  const problems = boxIds.length === 0 ? ["it printed no box id"] : []
  for (const boxId of boxIds) {
    const response = await fetch(`${environment.BOX_BASE_URL}/boxes/${boxId}`, { headers: { authorization: `Bearer ${environment.BOX_API_KEY}` } })
    const box = await response.json() as { readonly status?: string }
    if (box.status !== "terminated") problems.push(`box ${boxId} is ${box.status} after SIGTERM`)
  }
  return { status, output: daemon.output(), problems }
}

/**
 * The README as a user follows it: every fenced block is marked with how it is checked (scripts/readme-blocks.ts);
 * the README's own install lines run in the project (the package's name replaced by the tarball), every TypeScript
 * block is type-checked strictly in one compiler run with the consumer fixtures (before the PostgreSQL lines, so that
 * the same run proves a SQLite consumer of boxkit/workflow needs no PostgreSQL package), and the programs, the daemon,
 * the test files, the commands and the seed are run against a `boxkit serve` of the installed package, with the
 * README's variables.
 */
describe("the README", { timeout: 240_000 }, () => {
  let environment: NodeJS.ProcessEnv = {}
  let compiled: ProcessResult | undefined
  let postgres = { typeChecked: [] as ReadonlyArray<string>, installed: [] as ReadonlyArray<string> }
  let millis = { install: 0, typeCheck: 0 }

  beforeAll(async () => {
    if (project === "") throw new Error("the package was not installed")
    readmePrepared = prepareReadme()
    const prepared = await readmePrepared
    environment = prepared.environment
    compiled = prepared.compiled
    postgres = { typeChecked: prepared.postgresTypeChecked, installed: prepared.postgresInstalled }
    millis = prepared.millis
  }, readmeLimitMillis)

  it("marks every block with how it is checked, and checks blocks of every kind", () => {
    expect(problems).toEqual([])
    const kinds = new Set(blocks.map((block) => block.check))
    for (const kind of ["install", "run", "signal", "vitest", "shell", "seed"] as const) expect(kinds.has(kind), kind).toBe(true)
  })

  it("links and names only files the package ships", async () => {
    const entries = new Set((await runOk("tar", ["-tzf", tarball.filename], { cwd: work })).split("\n").filter((line) => line !== ""))
    const targets = [...ReadmeBlocks.relativeLinks(readme), ...ReadmeBlocks.mentionedFiles(readme)]
    expect(targets.length).toBeGreaterThan(0)
    expect(targets.filter((target) => !Readme.inTarball(entries, target))).toEqual([])
  })

  it("type-checks every TypeScript block and the strict consumer (strict, exactOptionalPropertyTypes, NodeNext, skipLibCheck false)", () => {
    expect(compiled?.stdout.split("\n").filter((line) => line.includes("error TS"))).toEqual([])
    expect(compiled?.status).toBe(0)
    // The fixtures were part of the program: the compiler wrote their JavaScript.
    for (const emitted of ["strict.js", "strict.cjs"]) expect(existsSync(join(project, "out", "package-checks", emitted)), emitted).toBe(true)
    const typeScript = blocks.filter((block) => block.file !== undefined && /\.[cm]?ts$/.test(block.file)).length
    console.log(
      `README: install lines in ${millis.install} ms; ${typeScript} TypeScript blocks and the strict consumers type-checked ` +
        `in ${millis.typeCheck} ms, beside the PostgreSQL lines`
    )
  })

  it("type-checks a strict boxkit/workflow consumer on SQLite without the PostgreSQL packages, and boxkit/testing's example", () => {
    // The same compiler run as above, over a copy of the project taken before the README installs PostgreSQL.
    expect(postgres.typeChecked).toEqual([])
    expect(postgres.installed).toContain("@effect/sql-pg")
    expect(compiled?.stdout.split("\n").filter((line) => line.includes("error TS"))).toEqual([])
    expect(compiled?.status).toBe(0)
    for (const emitted of ["workflow-sqlite.js", "testing-example.js"]) {
      expect(existsSync(join(project, "out", "package-checks", emitted)), emitted).toBe(true)
    }
  })

  it("runs every program, daemon, test file, command and seed of the README", async () => {
    const started = Date.now()
    const failures = await Promise.all(blocks.map(async (block): Promise<ReadonlyArray<string>> => {
      const name = `line ${block.line} (${block.check}${block.file === undefined ? "" : ` ${block.file}`})`
      const outcome = await checkBlock(block, environment)
      if (outcome.status !== 0) return [`${name} exited ${outcome.status}:\n${outcome.output}`]
      if (block.expect !== undefined && !outcome.output.includes(block.expect)) {
        return [`${name}: no "${block.expect}" in its output:\n${outcome.output}`]
      }
      return outcome.problems.map((problem) => `${name}: ${problem}`)
    }))
    expect(failures.flat()).toEqual([])
    console.log(`README: ${blocks.length} blocks checked (at once) in ${Date.now() - started} ms`)
  })

})

/**
 * The same project once the README's install lines ran in it ("the README", above): the optional SQL peers are there,
 * and the read-only install comes last, since nothing may write into the package after it.
 */
describe("the installed package with the README's optional peers", { timeout: 240_000 }, () => {
  beforeAll(async () => {
    if (readmePrepared === undefined) throw new Error("the README's project was not prepared")
    await readmePrepared
  }, 300_000)

  it("serves with --data-dir once its optional peers are installed, and the state outlives a restart", async () => {
    const boxkit = join(project, "node_modules", ".bin", "boxkit")
    const directory = join(work, "data")
    const serve = () =>
      new Promise<{ stop: () => Promise<void>; origin: string; output: () => string }>((resolve, reject) => {
        const child = spawn(boxkit, ["serve", "--port", "0", "--data-dir", directory], { cwd: project, stdio: ["ignore", "pipe", "pipe"] })
        let output = ""
        const exited = new Promise<void>((done) => child.on("exit", () => done()))
        const collect = (chunk: Buffer) => {
          output += chunk.toString()
          const listening = /listening on (http:\/\/\S+)\/v1/.exec(output)
          if (listening !== null && /^state: .*\n/m.test(output)) {
            resolve({ origin: listening[1], output: () => output, stop: () => (child.kill("SIGTERM"), exited) })
          }
        }
        child.stdout.on("data", collect)
        child.stderr.on("data", collect)
        child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${output}`)))
      })
    const find = (origin: string, body: unknown) =>
      fetch(`${origin}/v1/apps/find`, {
        method: "POST",
        headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then(async (response) => ({ status: response.status, json: await response.json() as { app_id?: string } }))
    const first = await serve()
    expect(first.output()).toContain("state: SQLite")
    const minted = await find(first.origin, { name: "kept-app", mint_if_missing: true })
    expect(minted.status).toBe(200)
    await first.stop()
    const second = await serve()
    try {
      expect(second.output()).toContain("(existing")
      const found = await find(second.origin, { name: "kept-app" })
      expect(found.status).toBe(200)
      expect(found.json.app_id).toBe(minted.json.app_id)
    } finally {
      await second.stop()
    }
  })

  it("runs the installed command from a read-only install, as a user who does not own it", async () => {
    await run("chmod", ["-R", "a-w", join(project, "node_modules", "boxkit")])
    const boxkit = join(project, "node_modules", ".bin", "boxkit")
    for (let round = 0; round < 2; round++) {
      const result = await asOtherUser([boxkit, "--version"])
      expect(result.stderr).toBe("")
      expect(result.stdout.trim()).toBe(checkoutPackage.version)
      expect(result.status).toBe(0)
    }
    const demo = await asOtherUser([boxkit, "demo"])
    expect(demo.stderr).toBe("")
    expect(demo.stdout).toMatch(/demo finished in \d+ ms/)
    expect(demo.status).toBe(0)
  })
})
