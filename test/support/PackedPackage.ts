/**
 * The checkout packed once (`npm pack`, which runs the build) for every package test of a run, and of the next runs
 * while the tree does not change: the tarball and its unpacked `package/` live in a directory of the system's temporary
 * folder named by a hash of the tree (every file git sees, tracked and new, not ignored: path and content). The first
 * test file to ask packs; a file that asks meanwhile (another worker, another run) waits for that directory to appear.
 *
 * The checkout's files are copied and packed there, so the build never touches the checkout's own dist/ (which other
 * test files' processes may be running).
 *
 * The pack's build also checks the API reference (scripts/build.mjs, `BOXKIT_DOCS_CHECK`): TypeDoc makes the program
 * the declarations are emitted from and converts it into the reference of `npm run docs`, so that the package's
 * sources are compiled once for both. What it found is kept beside the tarball for Docs.test.ts.
 */
import { execFileSync, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, watch, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/** What `npm pack --json` says of the tarball (bytes, file count), with the tarball's absolute path. */
export interface Tarball {
  readonly filename: string
  readonly size: number
  readonly unpackedSize: number
  readonly entryCount: number
}

/** What TypeDoc logged while the pack's build converted the API reference (Info and up). */
export interface DocsMessage {
  readonly level: "Info" | "Warn" | "Error"
  readonly message: string
}

/**
 * The API reference as the pack's build converted it: TypeDoc's messages, and what test/package/DocsCategories.ts
 * (loaded as its plugin) wrote: the entry points documented and the exports outside a category.
 */
export interface DocsCheck {
  readonly messages: ReadonlyArray<DocsMessage>
  /** Undefined when the plugin wrote nothing (it did not run). */
  readonly categories: { readonly entryPoints: number; readonly uncategorized: ReadonlyArray<string> } | undefined
}

/** The packed checkout: the tarball, the directory it unpacks to (the installed package's files), the reference. */
export interface Packed {
  readonly tarball: Tarball
  readonly unpacked: string
  readonly docs: DocsCheck
}

/**
 * The longest a pack may take (the whole build, with tsc's declarations; over 5 minutes on a 2-core machine under a load
 * of 18): hook timeouts use it.
 */
export const packLimitMillis = 600_000

/** The files of the checkout as git sees them (tracked and new, not ignored), relative to the checkout. */
const treeFiles = () =>
  execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: checkout })
    .toString("utf8").split("\0").filter((file) => file !== "" && existsSync(join(checkout, file)))
    .sort()

/** A hash of every file's path and content: equal hashes pack to the same tarball. */
const treeKey = (files: ReadonlyArray<string>) => {
  const hash = createHash("sha256")
  for (const file of files) hash.update(file).update("\0").update(readFileSync(join(checkout, file))).update("\0")
  return hash.digest("hex").slice(0, 16)
}

/** Runs a command without blocking this worker (vitest's worker must keep answering its runner): its stdout. */
const runOk = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = {}) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], timeout: packLimitMillis })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (status) =>
      status === 0 ? resolve(stdout) : reject(new Error(`${command} ${args.join(" ")} exited ${status}\n${stdout}\n${stderr}`))
    )
  })

/** Copies the tree into `staging`, packs it there, unpacks the tarball; the source copy is removed after. */
const pack = async (files: ReadonlyArray<string>, staging: string): Promise<void> => {
  const source = join(staging, "source")
  for (const file of files) {
    mkdirSync(dirname(join(source, file)), { recursive: true })
    cpSync(join(checkout, file), join(source, file))
  }
  symlinkSync(join(checkout, "node_modules"), join(source, "node_modules"), "dir")
  const docs = {
    BOXKIT_DOCS_CHECK: join(staging, "docs-check.json"),
    BOXKIT_DOCS_PLUGIN: join(source, "test", "package", "DocsCategories.ts"),
    BOXKIT_DOCS_CATEGORIES: join(staging, "docs-categories.json")
  }
  const packed = JSON.parse(await runOk("npm", ["pack", "--json", "--pack-destination", staging], source, docs))[0]
  rmSync(source, { recursive: true, force: true })
  await runOk("tar", ["-xzf", packed.filename], staging)
  writeFileSync(
    join(staging, "packed.json"),
    JSON.stringify({ filename: packed.filename, size: packed.size, unpackedSize: packed.unpackedSize, entryCount: packed.entryCount })
  )
}

/** Reads a finished pack directory. */
const read = (directory: string): Packed => {
  const tarball = JSON.parse(readFileSync(join(directory, "packed.json"), "utf8")) as Tarball
  const { messages } = JSON.parse(readFileSync(join(directory, "docs-check.json"), "utf8")) as Pick<DocsCheck, "messages">
  const written = join(directory, "docs-categories.json")
  const categories = existsSync(written) ? JSON.parse(readFileSync(written, "utf8")) as DocsCheck["categories"] : undefined
  return {
    tarball: { ...tarball, filename: join(directory, tarball.filename) },
    unpacked: join(directory, "package"),
    docs: { messages, categories }
  }
}

/** Whether the process that holds a lock (its pid in the lock's `pid` file) still runs. */
const holderRuns = (lock: string) => {
  try {
    process.kill(Number(readFileSync(join(lock, "pid"), "utf8")), 0)
    return true
  } catch (error) {
    // EPERM: it runs as another user. No pid file yet: the holder has just made the lock.
    return (error as NodeJS.ErrnoException).code === "EPERM" || (!existsSync(join(lock, "pid")) && existsSync(lock))
  }
}

/** Resolves when `directory` exists or the lock's holder has gone (then the caller tries again). */
const waitForPack = (directory: string, lock: string) =>
  new Promise<void>((resolve) => {
    const parent = dirname(directory)
    const check = () => {
      if (existsSync(directory) || !holderRuns(lock)) {
        watcher.close()
        clearInterval(liveness)
        resolve()
      }
    }
    const watcher = watch(parent, check)
    // A holder that died leaves its lock without a rename to watch for: its liveness is checked each second.
    const liveness = setInterval(check, 1_000)
    check()
  })

/** Removes packs of other trees older than a day (each is a few MB). */
const removeOldPacks = (keep: string) => {
  const dayAgo = Date.now() - 24 * 60 * 60 * 1_000
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name)
    if (!name.startsWith("boxkit-pack-") || path === keep || name.endsWith(".lock")) continue
    try {
      if (statSync(path).mtimeMs < dayAgo) rmSync(path, { recursive: true, force: true })
    } catch {
      // Another run removed it first.
    }
  }
}

let packing: Promise<Packed> | undefined

/**
 * The checkout packed: made once per tree content (see the module's note), then the same tarball for every caller.
 * Fails with npm's output when the build or the pack fails.
 */
export const packed = (): Promise<Packed> => (packing ??= packOnce())

const packOnce = async (): Promise<Packed> => {
  const files = treeFiles()
  const directory = join(tmpdir(), `boxkit-pack-${treeKey(files)}`)
  const lock = `${directory}.lock`
  while (!existsSync(join(directory, "packed.json"))) {
    try {
      mkdirSync(lock)
    } catch {
      if (holderRuns(lock)) await waitForPack(directory, lock)
      else rmSync(lock, { recursive: true, force: true })
      continue
    }
    try {
      writeFileSync(join(lock, "pid"), String(process.pid))
      removeOldPacks(directory)
      const staging = mkdtempSync(`${directory}.staging-`)
      try {
        await pack(files, staging)
        renameSync(staging, directory)
      } finally {
        rmSync(staging, { recursive: true, force: true })
      }
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  }
  return read(directory)
}
