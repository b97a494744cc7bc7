/**
 * Every operation of the contract has a command (src/Cli/client/*), and the commands of the operations added last
 * (`listeners publish`, `listeners add-domain`, `exec resize`, `policies get`) work through the built command
 * (`node bin/boxkit.js`) against the local service in this process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Command } from "@effect/cli"
import { Effect } from "effect"
import * as ClientCommands from "../../src/Cli/client/Commands.js"
import * as CommandLine from "../../src/Cli/CommandLine.js"
import * as Help from "../../src/Cli/Help.js"
import { BoxServiceApi } from "../../src/Contract/Api.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { boxkit } from "../support/BoxkitCommand.js"
import * as Harness from "../support/Harness.js"

const key = "sk_acme_org"

/** The command of each operation of the contract (`group.endpoint`). */
const commandOf: Record<string, string> = {
  "apps.find": "apps find",
  "secrets.retrieve": "secrets get",
  "secrets.create": "secrets create",
  "egressPolicies.create": "policies create",
  "egressPolicies.retrieve": "policies get",
  "egressPolicies.rename": "policies rename",
  "boxes.create": "boxes create",
  "boxes.retrieve": "boxes get",
  "boxes.upgrade": "boxes upgrade",
  "boxes.pause": "boxes pause",
  "boxes.resume": "boxes resume",
  "boxes.sleep": "boxes sleep",
  "boxes.terminate": "boxes terminate",
  "exec.resize": "exec resize",
  "listeners.publish": "listeners publish",
  "listeners.addDomain": "listeners add-domain",
  "listeners.unpublish": "listeners unpublish",
  "clipboard.write": "clipboard put",
  "responses.create": "responses create",
  "responses.retrieve": "responses get"
}

/** The command against the service in context (its URL and key from the environment). */
const run = (args: ReadonlyArray<string>) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) => boxkit(args, { env: { BOX_BASE_URL: baseUrl, BOX_API_KEY: key } }))

/** The command's stdout as JSON, after checking it succeeded with nothing on stderr. */
const json = (args: ReadonlyArray<string>) =>
  Effect.map(run([...args, "--json"]), (result) => {
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    return JSON.parse(result.stdout)
  })

describe("a command for every operation", () => {
  it("each operation of the contract names a command that exists and runs (no subcommands under it)", () => {
    const operations = Object.entries(BoxServiceApi.groups as Record<string, { readonly endpoints: object }>)
      .flatMap(([group, { endpoints }]) => Object.keys(endpoints).map((endpoint) => `${group}.${endpoint}`))
    expect(operations.sort()).toEqual(Object.keys(commandOf).sort())
    const root = Help.descriptorOf(
      Command.make("boxkit").pipe(Command.withSubcommands([...ClientCommands.commands]))
    )
    for (const command of Object.values(commandOf)) {
      const resolution = CommandLine.resolve(root, command.split(" "))
      expect(resolution._tag, command).toBe("Found")
      if (resolution._tag === "Found") {
        expect(resolution.path.join(" ")).toBe(`boxkit ${command}`)
        expect(Help.childrenOf(resolution.node)).toEqual([])
      }
    }
  })

  it.scopedLive("listeners publish and add-domain, exec resize, policies get: through the built command", () =>
    Effect.gen(function*() {
      const app = yield* json(["apps", "find", "cli-operations", "--mint"])
      const [box, policy] = yield* Effect.all([
        json(["boxes", "create", "--name", "cli-ops", "--app", app.id, "--size", "s", "--wait"]),
        json(["policies", "create", "cli-ops-policy", "--allow", "api.github.com"])
      ])
      const boxId: string = box.box_id

      const tcp = yield* json(["listeners", "publish", boxId, "5432", "--protocol", "tcp"])
      expect(tcp).toMatchObject({ guest_port: 5432, protocol: "tcp", address: expect.stringMatching(/:\d+$/) })
      const http = yield* run(["listeners", "publish", boxId, "8080"])
      expect(http.code).toBe(0)
      expect(http.stdout).toMatch(/^protocol +http$/m)
      expect(http.stdout).toMatch(/^address +https:\/\//m)
      const [again, domain, resized, resizedForPerson, badSize, read] = yield* Effect.all([
        // Published already: the service's conflict, exit 1.
        run(["listeners", "publish", boxId, "5432", "--protocol", "tcp"]),
        json(["listeners", "add-domain", boxId, "8080", "App.Example.com"]),
        json(["exec", "resize", boxId, "exec_42", "--cols", "120", "--rows", "40"]),
        // An exec id that does not fit a path segment goes as `-` with exec_request_id (the client's rule).
        run(["exec", "resize", boxId, "job/7", "--cols", "80", "--rows", "24"]),
        run(["exec", "resize", boxId, "exec_42", "--cols", "0", "--rows", "40"]),
        json(["policies", "get", policy.id])
      ])
      expect(again.code).toBe(1)
      expect(again.stderr).toContain("boxkit listeners publish: 409 conflict_error")
      expect(domain).toMatchObject({ guest_port: 8080, protocol: "http", custom_domains: ["app.example.com"] })
      expect(resized).toEqual({})
      expect(resizedForPerson.code).toBe(0)
      expect(resizedForPerson.stdout).toBe("resized the terminal of exec job/7 to 80x24\n")
      expect(badSize.code).toBe(1)
      expect(badSize.stderr).toContain("cols")
      expect(read).toEqual(policy)

      const fetched = yield* json(["boxes", "get", boxId])
      expect(fetched.listeners.map((listener: { readonly guest_port: number }) => listener.guest_port).sort()).toEqual([5432, 8080])
    }).pipe(Effect.provide(Harness.serviceOn(Harness.fast))), 300_000)
})
