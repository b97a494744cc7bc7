/**
 * The client commands as a person runs them (issue 16): the built command (`node bin/boxkit.js`) against the local
 * service in this process. `--json` prints the resource exactly as the API answers it and nothing else; a person's
 * output is aligned fields without colours off a terminal; failures exit non-zero with type, code, param and message
 * on stderr; keys and secret values never appear in any output.
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

  it.scopedLive("apps, boxes (create --wait, replay by key, get, lifecycle), listeners", () =>
    Effect.gen(function*() {
      const baseUrl = yield* LocalService.baseUrl
      const [app, badId] = yield* Effect.all([json(["apps", "find", "cli-app", "--mint"]), run(["boxes", "get", "sb_nope"])], { concurrency: 2 })
      expect(app).toMatchObject({ name: "cli-app", id: expect.stringMatching(/^app_/) })
      expect(badId.code).toBe(2)
      expect(badId.stderr).toContain("box_id must be `sb_`")

      const createArgs = ["boxes", "create", "--name", "cli-box", "--app", app.id, "--size", "s", "--port", "8080/http", "--idempotency-key", "cli-key-1"]
      const waited = yield* json([...createArgs, "--wait"])
      expect(waited).toMatchObject({ status: "running", name: "cli-box", size: "s", listeners: [{ guest_port: 8080, protocol: "http" }] })
      const [fetched, replay, human] = yield* Effect.all([
        json(["boxes", "get", waited.box_id]),
        // The same key again: the first answer, replayed; for a person, aligned fields and the key.
        run(createArgs),
        run(["boxes", "get", waited.box_id])
      ], { concurrency: 3 })
      // --json is the answer of the API, field for field.
      expect(fetched).toEqual(yield* api(baseUrl, `/boxes/${waited.box_id}`))
      expect(replay.code).toBe(0)
      expect(replay.stdout).toMatch(new RegExp(`^box_id {2}${waited.box_id}$`, "m"))
      expect(replay.stdout).toContain("idempotency key: cli-key-1 (replayed: the first answer)")
      expect(replay.stdout).not.toContain("\u001b[")
      expect(human.stdout).toMatch(/^status +running$/m)
      expect(human.stdout).toMatch(/^created_at +\S+ \((just now|\d+ s ago)\)$/m)
      expect(human.stdout).toMatch(/^listeners +8080\/http https:\/\//m)

      expect((yield* json(["boxes", "pause", waited.box_id])).status).toBe("paused")
      expect(yield* json(["listeners", "unpublish", waited.box_id, "8080"])).toEqual({ box_id: waited.box_id, guest_port: 8080 })
      const again = yield* run(["listeners", "unpublish", waited.box_id, "8080"])
      expect(again.code).toBe(1)
      expect(again.stdout).toBe("")
      expect(again.stderr).toContain("boxkit listeners unpublish: 404 not_found_error, param guest_port: Port 8080 is not published")
      expect((yield* json(["boxes", "terminate", waited.box_id])).status).toBe("terminated")
    }).pipe(Effect.provide(Harness.service())), 60_000)

  it.scopedLive("secrets (value from stdin, never printed), policies, clipboard, responses, a refused key", () =>
    Effect.gen(function*() {
      const value = `value-${crypto.randomUUID()}`
      const secrets = Effect.gen(function*() {
        const created = yield* run(["secrets", "create", "CLI_TOKEN"], `${value}\n`)
        expect(created.code).toBe(0)
        const secret = yield* json(["secrets", "get", "CLI_TOKEN"])
        expect(Object.keys(secret).sort()).toEqual(["created_at", "name", "org_id", "updated_at"])
        expect(created.stdout + created.stderr + JSON.stringify(secret)).not.toContain(value)
        const empty = yield* run(["secrets", "create", "CLI_EMPTY"], "")
        expect(empty.code).toBe(2)
        expect(empty.stderr).toContain("no value on stdin")
      })
      const policies = Effect.gen(function*() {
        const policy = yield* json(["policies", "create", "cli-policy", "--allow", "API.GitHub.com", "--allow", "uploads.github.com"])
        expect(policy.document.allowlist).toEqual(["api.github.com", "uploads.github.com"])
        expect((yield* json(["policies", "rename", policy.id, "cli-policy-2"])).name).toBe("cli-policy-2")
      })
      const clipboard = Effect.gen(function*() {
        const app = yield* json(["apps", "find", "cli-app", "--mint"])
        const box = yield* json(["boxes", "create", "--name", "clip-box", "--app", app.id, "--wait"])
        const png = join(tmpdir(), `boxkit-cli-${process.pid}.png`)
        writeFileSync(png, onePixelPng)
        const [put, both, refused] = yield* Effect.all([
          json(["clipboard", "put", box.box_id, "--file", png]),
          run(["clipboard", "put", box.box_id, "--text", "x", "--file", png]),
          run(["boxes", "get", box.box_id, "--api-key", "sk_not_a_real_key"])
        ], { concurrency: 3 })
        expect(put).toEqual({})
        const state = yield* LocalService.localState
        expect(state.boxes.find((candidate) => candidate.id === box.box_id)?.clipboard).toEqual({ media_type: "image/png", bytes: onePixelPng.byteLength })
        expect(both.code).toBe(2)
        expect(both.stderr).toContain("give either --text TEXT or --file PATH")
        expect(refused.code).toBe(1)
        expect(refused.stderr).toContain("401 authentication_error, code invalid_api_key): Invalid API key.")
        expect(refused.stdout + refused.stderr).not.toContain("sk_not_a_real_key")
      })
      const responses = Effect.gen(function*() {
        const [streamed, queued] = yield* Effect.all([
          run(["responses", "create", "--model", "boxkit-local", "--stream", "Say hello."]),
          json(["responses", "create", "--model", "boxkit-local", "--background", "Hi"])
        ], { concurrency: 2 })
        expect(streamed.code).toBe(0)
        expect(streamed.stdout).toContain("You said: \"Say hello.\"")
        expect(queued).toMatchObject({ object: "response", background: true, id: expect.stringMatching(/^resp_/) })
        expect((yield* json(["responses", "get", queued.id])).id).toBe(queued.id)
      })
      yield* Effect.all([secrets, policies, clipboard, responses], { concurrency: "unbounded" })
    }).pipe(Effect.provide(Harness.service())), 60_000)
})
