/**
 * The fast serving path is a removable adapter (docs/decisions/0001-two-serving-paths.md): a copy of `src` without
 * src/Server/http/fast/, with src/Server/ServingPathsStock.ts in the place of src/Server/ServingPaths.ts (the one
 * module that names the fast path), type-checks with the project's compiler settings, builds into the `boxkit`
 * command (scripts/build.mjs, as the package's command is built), and that command's `boxkit serve` answers on the
 * stock path: a box is created, read back, replayed under its Idempotency-Key, and an unknown box is a 404 envelope.
 * Nothing else in `src` may import the fast path. The type-check and the build run at once (two processes).
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, execFile } from "node:child_process"
import { copyFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative, resolve, sep } from "node:path"
import * as ServeProcess from "../support/ServeProcess.js"

const fastFolder = resolve("src/Server/http/fast")

/** Every `.ts` file under `directory`. */
const sources = (directory: string): Array<string> =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(directory, entry.name))
      : entry.name.endsWith(".ts")
      ? [join(directory, entry.name)]
      : []
  )

/**
 * A copy of the checkout without the fast path: `src` (but src/Server/http/fast/), `package.json`, the command's
 * build script and launcher (scripts/build.mjs, bin/boxkit.js), the dependencies and a tsconfig with the project's
 * compiler options.
 */
const stockOnlyCopy = (): string => {
  const directory = mkdtempSync(join(tmpdir(), "boxkit-stock-only-"))
  cpSync("src", join(directory, "src"), {
    recursive: true,
    filter: (source) => resolve(source) !== fastFolder && !resolve(source).startsWith(fastFolder + sep)
  })
  copyFileSync("package.json", join(directory, "package.json"))
  cpSync("scripts/build.mjs", join(directory, "scripts/build.mjs"))
  cpSync("bin/boxkit.js", join(directory, "bin/boxkit.js"))
  symlinkSync(resolve("node_modules"), join(directory, "node_modules"), "dir")
  const project = JSON.parse(readFileSync("tsconfig.json", "utf8")) as { compilerOptions: unknown }
  writeFileSync(
    join(directory, "tsconfig.json"),
    JSON.stringify({ compilerOptions: project.compilerOptions, include: ["src"] })
  )
  return directory
}

/** Starts the copy's `boxkit serve --port 0` as users run the command (bin/boxkit.js over the copy's bundle). */
const serve = (directory: string) => ServeProcess.start(["bin/boxkit.js", "serve", "--port", "0"], { cwd: directory })

const send = async (origin: string, path: string, init: { method?: string; body?: unknown; key?: string } = {}) => {
  const response = await fetch(origin + path, {
    method: init.method ?? "GET",
    headers: {
      authorization: "Bearer sk_acme_org",
      "content-type": "application/json",
      ...(init.key !== undefined ? { "idempotency-key": init.key } : {})
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
  })
  return { status: response.status, headers: response.headers, json: await response.json() as any }
}

/** Runs node with `args` in `directory` (asynchronously: the worker keeps answering vitest meanwhile). */
const node = (args: ReadonlyArray<string>, directory: string) =>
  new Promise<{ readonly code: number; readonly output: string }>((resolvePromise) =>
    execFile(
      process.execPath,
      args,
      { cwd: directory, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolvePromise({ code: error === null ? 0 : (error.code as number | undefined) ?? 1, output: stdout + stderr })
    ))

/** Runs `tsc --noEmit` on the copy. */
const typecheck = (directory: string) =>
  node([resolve("node_modules/typescript/bin/tsc"), "--noEmit", "-p", join(directory, "tsconfig.json")], directory)

/** Builds the copy's command (dist/boxkit.cjs and the tables it loads), as `node scripts/build.mjs --command` does. */
const buildCommand = (directory: string) => node(["scripts/build.mjs", "--command"], directory)

const boxBody = { name: "box", app_id: "app_00000000-0000-4000-8000-000000000001", image: { base: "debian" } }

describe("deleting src/Server/http/fast/", () => {
  it("leaves a service that type-checks, builds and answers on the stock path", { timeout: 240_000 }, async () => {
    const directory = stockOnlyCopy()
    let child: ChildProcess | undefined
    try {
      const wiring = join(directory, "src/Server/ServingPaths.ts")
      const importers = sources(join(directory, "src"))
        .filter((file) => file !== wiring && /from "[^"]*\/fast\//.test(readFileSync(file, "utf8")))
        .map((file) => relative(directory, file))
      expect(importers).toEqual([])
      copyFileSync(join(directory, "src/Server/ServingPathsStock.ts"), wiring)

      const [checked, built] = await Promise.all([typecheck(directory), buildCommand(directory)])
      expect(checked).toEqual({ code: 0, output: "" })
      expect({ code: built.code, output: built.output.replace(/^built dist\/ in \d+ ms\n$/, "") }).toEqual({ code: 0, output: "" })

      const served = await serve(directory)
      child = served.child
      const created = await send(served.origin, "/v1/boxes", { method: "POST", body: boxBody, key: "stock-only-1" })
      expect(created.status).toBe(201)
      const boxId = created.json.box_id as string
      const read = await send(served.origin, `/v1/boxes/${boxId}`)
      expect({ status: read.status, boxId: read.json.box_id }).toEqual({ status: 200, boxId })
      const replayed = await send(served.origin, "/v1/boxes", { method: "POST", body: boxBody, key: "stock-only-1" })
      expect({ status: replayed.status, boxId: replayed.json.box_id, replayed: replayed.headers.get("idempotent-replayed") })
        .toEqual({ status: 201, boxId, replayed: "true" })
      const missing = await send(served.origin, "/v1/boxes/sb_00000000-0000-4000-8000-00000000dead")
      expect({ status: missing.status, type: missing.json.error.type }).toEqual({ status: 404, type: "not_found_error" })
    } finally {
      child?.kill("SIGKILL")
      rmSync(directory, { recursive: true, force: true })
    }
  })
})
