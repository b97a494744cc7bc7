/**
 * What a person sees when a command fails (docs/ASSUMPTIONS.md "Errors on the command line and in logs"): the exact
 * first line, the fix, the exit code, and no stack unless `--verbose`. The command runs as users run it
 * (`node bin/boxkit.js`), against a service in this process or none.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as LocalService from "../../src/Server/LocalService.js"
import * as BoxkitCommand from "../support/BoxkitCommand.js"
import * as Harness from "../support/Harness.js"

const boxkit = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) => BoxkitCommand.boxkit(args, { env })

/** A port something else listens on, for as long as the scope lasts. */
const takenPort = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<Server>((resolve) => {
      const server = createServer()
      server.listen(0, "127.0.0.1", () => resolve(server))
    })
  ),
  (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
).pipe(Effect.map((server) => (server.address() as { port: number }).port))

/** A port nothing listens on (taken, then freed). */
const freePort = Effect.scoped(takenPort)

const noStack = (text: string) => expect(text).not.toMatch(/^\s+at /m)

describe("boxkit failures", () => {
  it.effect("unknown flag: @effect/cli's sentence once, no JSON, the help hint; exit 2", () =>
    Effect.gen(function*() {
      const run = yield* boxkit(["serve", "--bogus"])
      expect(run.stderr.split("\n")[0]).toBe("Received unknown argument: '--bogus'")
      expect(run.stderr).not.toContain("_tag")
      expect(run.stderr).not.toContain("boxkit failed")
      expect(run.stderr.trim().split("\n").at(-1)).toBe("fix: run \"boxkit serve --help\" for the usage")
      noStack(run.stderr)
      expect(run.code).toBe(2)
    }))

  it.effect("the example seed's well-known keys on an address the network reaches: refused, the fix; exit 2", () =>
    Effect.gen(function*() {
      const run = yield* boxkit(["serve", "--port", "0", "--host", "0.0.0.0"])
      expect(run.stderr).toContain("refusing to serve the example seed's well-known API keys")
      expect(run.stderr).toContain("--seed FILE")
      expect(run.stderr).toContain("--allow-example-keys")
      expect(run.stdout).not.toContain("listening on")
      noStack(run.stderr)
      expect(run.code).toBe(2)
    }))

  it.effect("conflicting state flags: --data-dir and --database-url together are refused; exit 2", () =>
    Effect.gen(function*() {
      const run = yield* boxkit(["serve", "--port", "0", "--data-dir", "/tmp/unused", "--database-url", "postgres://u:p@127.0.0.1:1/db"])
      expect(run.stderr).toContain("Give --data-dir or --database-url, not both.")
      expect(run.stderr).not.toContain("u:p@")
      expect(run.code).toBe(2)
    }))

  it.effect("missing seed file: the file named, the fix; exit 1", () =>
    Effect.gen(function*() {
      const path = join(tmpdir(), `boxkit-no-such-seed-${process.pid}.json`)
      const run = yield* boxkit(["serve", "--port", "0", "--seed", path])
      expect(run.stderr.split("\n")).toEqual([
        `boxkit serve: cannot read seed file ${path}: no such file`,
        "fix: pass the path of a JSON seed file to --seed, or leave it out for the example seed",
        ""
      ])
      expect(run.code).toBe(1)
    }))

  it.effect("bad seed field: one line per problem, path: expected, got; no duplicate", () =>
    Effect.gen(function*() {
      const path = join(tmpdir(), `boxkit-bad-seed-${process.pid}.json`)
      writeFileSync(path, JSON.stringify({ organizations: 5, api_keys: [{ key: "k", org: "x" }], users: [{ id: 7, org_id: "o" }] }))
      const run = yield* boxkit(["serve", "--port", "0", "--seed", path])
      expect(run.stderr.split("\n")).toEqual([
        `boxkit serve: invalid seed file ${path}`,
        "  organizations: expected an array (of organization), got 5",
        "  users[0].id: expected string, got 7",
        "  api_keys[0].org: unknown field (expected one of \"key\" | \"org_id\" | \"user_id\")",
        "fix: correct the file (its format: the README, \"The local box service\"), or leave out --seed for the example seed",
        ""
      ])
      expect(run.code).toBe(1)
    }))

  it.scoped("port in use: the port named and the fix; --verbose adds the cause and a stack in the TypeScript sources", () =>
    Effect.gen(function*() {
      const port = yield* takenPort
      const run = yield* boxkit(["serve", "--port", String(port)])
      expect(run.stderr.split("\n")).toEqual([
        `boxkit serve: port ${port} on 127.0.0.1 is in use`,
        "fix: pass --port 0 (any free port) or another port",
        ""
      ])
      expect(run.code).toBe(1)
      const verbose = yield* boxkit(["serve", "--port", String(port), "--verbose"])
      expect(verbose.stderr.split("\n")[0]).toBe(`boxkit serve: port ${port} on 127.0.0.1 is in use`)
      expect(verbose.stderr).toContain("EADDRINUSE")
      expect(verbose.stderr).toMatch(/^\s+at .*src\/Server\/http\/NodeListen\.ts:\d+:\d+/m)
      expect(verbose.code).toBe(1)
      const debug = yield* boxkit(["serve", "--port", String(port)], { BOXKIT_DEBUG: "1" })
      expect(debug.stderr).toContain("EADDRINUSE")
    }))

  it.effect("no service at the URL: the address and the fix", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const baseUrl = `http://127.0.0.1:${port}/v1`
      const run = yield* boxkit(["demo", "--base-url", baseUrl, "--api-key", "sk_acme_org"])
      expect(run.stderr.split("\n")).toEqual([
        `boxkit demo: no service at http://127.0.0.1:${port}: connection refused (POST ${baseUrl}/apps/find)`,
        "fix: start one with \"boxkit serve\", or check --base-url (BOX_BASE_URL)",
        ""
      ])
      expect(run.code).toBe(1)
    }))

  it.scoped("invalid key: type, code and message, the fix; the key itself never printed", () =>
    Effect.gen(function*() {
      const baseUrl = yield* LocalService.baseUrl
      const run = yield* boxkit(["demo", "--base-url", baseUrl, "--api-key", "sk_not_a_real_key"])
      expect(run.stderr.split("\n")).toEqual([
        "boxkit demo: the API key was refused (401 authentication_error, code invalid_api_key): Invalid API key.",
        "fix: check --api-key or BOX_API_KEY",
        ""
      ])
      expect(run.stdout + run.stderr).not.toContain("sk_not_a_real_key")
      expect(run.code).toBe(1)
    }).pipe(Effect.provide(Harness.serviceOn(Harness.fast))))

  it.effect("success still exits 0", () =>
    Effect.gen(function*() {
      const run = yield* boxkit(["--version"])
      expect(run.stderr).toBe("")
      expect(run.code).toBe(0)
    }))
})
