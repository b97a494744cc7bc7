/**
 * The client commands as a person runs them (docs/ASSUMPTIONS.md "Command line (client commands)"): the built command
 * (`node bin/boxkit.js`) against the local service in this process. `--json` prints the resource exactly as the API
 * answers it and nothing else; a person's output is aligned fields without colours off a terminal; failures exit
 * non-zero with type, code, param and message on stderr; keys and secret values never appear in any output.
 */
import { describe, expect, it } from "@effect/vitest"
import { CliConfig, Command, HelpDoc } from "@effect/cli"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import { Effect, HashMap, HashSet } from "effect"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ClientCommands from "../../src/Cli/client/Commands.js"
import { onePixelPng } from "../../src/Cli/DemoProgram.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { boxkit } from "../support/BoxkitCommand.js"
import * as Harness from "../support/Harness.js"

const key = "sk_acme_org"

/** GET `path` on the service with the key: the body as parsed JSON. */
const api = (baseUrl: string, path: string) =>
  Effect.promise(() =>
    fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } }).then((response) => response.json())
  )

/** The command against the service in context (its URL and key from the environment, as BOX_* variables). */
const run = (args: ReadonlyArray<string>, stdin?: string) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    boxkit(args, { env: { BOX_BASE_URL: baseUrl, BOX_API_KEY: key, NO_COLOR: undefined }, ...(stdin !== undefined ? { stdin } : {}) }))

/** The command's stdout as JSON, after checking it succeeded with nothing on stderr. */
const json = (args: ReadonlyArray<string>, stdin?: string) =>
  Effect.map(run([...args, "--json"], stdin), (result) => {
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    return JSON.parse(result.stdout)
  })

describe("boxkit client commands", () => {
  it("every command has --help with an example of itself", () => {
    for (const group of ClientCommands.commands as ReadonlyArray<Command.Command<string, unknown, unknown, unknown>>) {
      const [groupName] = HashSet.toValues(Command.getNames(group))
      for (const [name, subcommand] of HashMap.toEntries(Command.getSubcommands(group))) {
        const help = HelpDoc.toAnsiText(Descriptor.getHelp(subcommand, CliConfig.defaultConfig))
        expect(help, `${groupName} ${name}`).toMatch(new RegExp(`Example: .*boxkit ${groupName} ${name}`))
      }
    }
  })

  it.scopedLive("every area through the built command: --json as answered, a person's output, failures, keys and values never printed", () =>
    Effect.gen(function*() {
      const baseUrl = yield* LocalService.baseUrl
      const value = `value-${crypto.randomUUID()}`
      // Independent commands run side by side, in a few rounds.
      const [app, badId, noKey, created, policy, streamed, queued] = yield* Effect.all([
        json(["apps", "find", "cli-app", "--mint"]),
        run(["boxes", "get", "sb_nope"]),
        boxkit(["apps", "find", "cli-app", "--base-url", baseUrl], { env: { BOX_API_KEY: undefined } }),
        run(["secrets", "create", "CLI_TOKEN"], `${value}\n`),
        json(["policies", "create", "cli-policy", "--allow", "API.GitHub.com", "--allow", "uploads.github.com"]),
        run(["responses", "create", "--model", "boxkit-local", "--stream", "Say hello."]),
        json(["responses", "create", "--model", "boxkit-local", "--background", "Hi"])
      ], { concurrency: "unbounded" })
      expect(app).toMatchObject({ name: "cli-app", id: expect.stringMatching(/^app_/) })
      expect(badId.code).toBe(2)
      expect(badId.stderr).toContain("box_id must be `sb_`")
      expect(noKey.code).toBe(2)
      expect(noKey.stderr).toContain("fix: pass --api-key KEY or set BOX_API_KEY")
      expect(created.code).toBe(0)
      expect(policy.document.allowlist).toEqual(["api.github.com", "uploads.github.com"])
      expect(streamed.code).toBe(0)
      expect(streamed.stdout).toContain("You said: \"Say hello.\"")
      expect(queued).toMatchObject({ object: "response", background: true, id: expect.stringMatching(/^resp_/) })

      const createArgs = ["boxes", "create", "--name", "cli-box", "--app", app.id, "--size", "s", "--port", "8080/http", "--idempotency-key", "cli-key-1"]
      const [waited, secret, empty, renamed, read] = yield* Effect.all([
        run([...createArgs, "--wait"]),
        json(["secrets", "get", "CLI_TOKEN"]),
        run(["secrets", "create", "CLI_EMPTY"], ""),
        json(["policies", "rename", policy.id, "cli-policy-2"]),
        json(["responses", "get", queued.id])
      ], { concurrency: "unbounded" })
      // For a person: aligned fields, times with how long ago, listeners, the key; no colours off a terminal.
      expect(waited.code).toBe(0)
      expect(waited.stdout).toMatch(/^status +running$/m)
      expect(waited.stdout).toMatch(/^created_at +\S+ \((just now|\d+ s ago)\)$/m)
      expect(waited.stdout).toMatch(/^listeners +8080\/http https:\/\//m)
      expect(waited.stdout).toContain("idempotency key: cli-key-1\n")
      expect(waited.stdout).not.toContain("\u001b[")
      const boxId = /^box_id +(\S+)$/m.exec(waited.stdout)![1]
      expect(Object.keys(secret).sort()).toEqual(["created_at", "name", "org_id", "updated_at"])
      expect(created.stdout + created.stderr + JSON.stringify(secret)).not.toContain(value)
      expect(empty.code).toBe(2)
      expect(empty.stderr).toContain("no value on stdin")
      expect(renamed.name).toBe("cli-policy-2")
      expect(read.id).toBe(queued.id)

      const png = join(tmpdir(), `boxkit-cli-${process.pid}.png`)
      writeFileSync(png, onePixelPng)
      const [fetched, replay, put, both, refused] = yield* Effect.all([
        json(["boxes", "get", boxId]),
        // The same key again: the first answer, replayed.
        run(createArgs),
        json(["clipboard", "put", boxId, "--file", png]),
        run(["clipboard", "put", boxId, "--text", "x", "--file", png]),
        run(["boxes", "get", boxId, "--api-key", "sk_not_a_real_key"])
      ], { concurrency: "unbounded" })
      // --json is the answer of the API, field for field.
      expect(fetched).toEqual(yield* api(baseUrl, `/boxes/${boxId}`))
      expect(replay.stdout).toMatch(new RegExp(`^box_id {2}${boxId}$`, "m"))
      expect(replay.stdout).toContain("idempotency key: cli-key-1 (replayed: the first answer)")
      expect(put).toEqual({})
      const state = yield* LocalService.localState
      expect(state.boxes.find((box) => box.id === boxId)?.clipboard).toEqual({ media_type: "image/png", bytes: onePixelPng.byteLength })
      expect(both.code).toBe(2)
      expect(both.stderr).toContain("give either --text TEXT or --file PATH")
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("401 authentication_error, code invalid_api_key): Invalid API key.")
      expect(refused.stdout + refused.stderr).not.toContain("sk_not_a_real_key")

      expect(yield* json(["listeners", "unpublish", boxId, "8080"])).toEqual({ box_id: boxId, guest_port: 8080 })
      const [again, paused] = yield* Effect.all([
        run(["listeners", "unpublish", boxId, "8080"]),
        json(["boxes", "pause", boxId])
      ], { concurrency: "unbounded" })
      expect(again.code).toBe(1)
      expect(again.stdout).toBe("")
      expect(again.stderr).toContain("boxkit listeners unpublish: 404 not_found_error, param guest_port: Port 8080 is not published")
      expect(paused.status).toBe("paused")
    }).pipe(Effect.provide(Harness.serviceOn(Harness.fast))), 300_000)
})
