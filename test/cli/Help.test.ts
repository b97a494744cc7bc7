/**
 * The help of `boxkit` and its commands (Cli/Help.ts), colours only on a terminal (Output.colours), and the answer
 * to a mistyped command (Cli/CommandLine.ts): the renderer on the command descriptors, then the built command as a
 * person runs it, with stdout piped.
 */
import { describe, expect, it } from "@effect/vitest"
import { Command } from "@effect/cli"
import { Effect, Option } from "effect"
import { help } from "../../src/Cli/client/ClientOptions.js"
import * as ClientCommands from "../../src/Cli/client/Commands.js"
import { colours } from "../../src/Cli/client/Output.js"
import * as CommandLine from "../../src/Cli/CommandLine.js"
import * as Demo from "../../src/Cli/Demo.js"
import * as Help from "../../src/Cli/Help.js"
import * as Orchestrate from "../../src/Cli/Orchestrate.js"
import * as Serve from "../../src/Cli/Serve.js"
import { boxkit } from "../support/BoxkitCommand.js"

/** The command tree of `boxkit`, as src/bin.ts builds it. */
const root = Help.descriptorOf(
  Command.make("boxkit").pipe(
    Command.withDescription(help("The root.", "boxkit serve")),
    Command.withSubcommands([Serve.command, Demo.command, Orchestrate.command, ...ClientCommands.commands])
  )
)

/** Every command under `node` with its path, `node` first. */
const everyCommand = (
  node: Help.Descriptor,
  path: ReadonlyArray<string>
): ReadonlyArray<readonly [Help.Descriptor, ReadonlyArray<string>]> => [
  [node, path],
  ...Help.childrenOf(node).flatMap((child) => everyCommand(child, [...path, Help.nameOf(child)]))
]

/** The help text of the command at `args` (words after `boxkit`), without colours. */
const helpOf = (args: ReadonlyArray<string>, layout: Help.Layout = { width: 100, colour: false }) => {
  const resolution = CommandLine.resolve(root, args)
  if (resolution._tag !== "Found") throw new Error(`no command ${args.join(" ")}`)
  return Help.render(Help.describe(resolution.node, resolution.path), layout)
}

/** @effect/cli's own filler lines, which our help must not show. */
const filler = [
  "A user-defined piece of text",
  "This setting is optional",
  "An integer.",
  "A true or false value",
  "This option can be set from environment variables",
  "This option may be repeated",
  "One of the following"
]

const widest = (text: string) => Math.max(...text.split("\n").map((line) => line.length))

describe("help", () => {
  it("serve: the whole usage line, defaults, optional and repeatable marks, our descriptions only, 100 columns", () => {
    const help = helpOf(["serve"])
    expect(help).toMatch(/^Usage: boxkit serve \[--host HOST\] \[--port PORT\] \[--seed FILE\]/)
    expect(help).toMatch(/^ {2}--port PORT +Port to listen on \(0 picks a free one\)\. Default: 8787\.$/m)
    expect(help).toMatch(/^ {2}--host HOST +Interface \(address\) to listen on\. Default: 127\.0\.0\.1\.$/m)
    expect(help).toMatch(/Default: fast\./)
    expect(help).toMatch(/^Example:\n {2}boxkit serve /m)
    expect(widest(help)).toBeLessThanOrEqual(100)
    for (const line of filler) expect(help).not.toContain(line)
    // The package ships docs/ASSUMPTIONS.md of docs/, no decision records.
    expect(help).not.toContain("docs/decisions")
  })

  it("a client command: required options bare, optional ones in brackets, a repeatable one with ...", () => {
    const help = helpOf(["boxes", "create"])
    const usage = help.slice(0, help.indexOf("\n\n")).replace(/\s+/g, " ")
    expect(usage).toMatch(/^Usage: boxkit boxes create \[--base-url URL\] /)
    expect(usage).toContain(" --name NAME --app APP_ID [--image-base IMAGE] [--size s|m|l] [--port PORT]... ")
    expect(usage).toContain("[--wait]")
    expect(help).toMatch(/^ {2}--port PORT +A guest port to publish[^-]*Repeatable\.$/m)
    expect(help).toMatch(/^ {2}--image-base IMAGE +Base image\. Default: debian\.$/m)
    expect(help).toMatch(/Default:\s+http:\/\/127\.0\.0\.1:8787\/v1\./)
    expect(help).toMatch(/^Arguments:|^Options:/m)
    expect(helpOf(["boxes", "get"])).toMatch(/^Usage: boxkit boxes get .* BOX_ID$/m)
    expect(helpOf(["policies", "create"])).toContain("[--allow HOST]... NAME")
    for (const line of filler) expect(help).not.toContain(line)
  })

  it("every command: at most 100 columns, an example of itself, no filler, no file the package does not ship", () => {
    for (const [node, path] of everyCommand(root, ["boxkit"])) {
      const help = Help.render(Help.describe(node, path), { width: 100, colour: false })
      const name = path.join(" ")
      expect(widest(help), name).toBeLessThanOrEqual(100)
      const examples = /\nExamples?:\n((?: {2}.*\n?)+)/.exec(help)
      expect(examples, name).not.toBeNull()
      if (path.length > 1) expect(examples![1], name).toContain(name)
      for (const line of filler) expect(help, name).not.toContain(line)
      expect(help, name).not.toMatch(/docs\/(?!ASSUMPTIONS\.md)/)
      expect(help, name).not.toContain("\u001b")
    }
  })

  it("a narrower width wraps descriptions and the usage line; colours make the headings bold", () => {
    const narrow = helpOf(["serve"], { width: 60, colour: false })
    expect(widest(narrow)).toBeLessThanOrEqual(60)
    expect(helpOf(["serve"], { width: 100, colour: true })).toContain("\u001b[1mOptions:\u001b[22m")
    // A word longer than the line (a URL, a list) is cut, never left over the width.
    expect(Help.wrap(`see ${"a,".repeat(40)}b`, 30).every((line) => line.length <= 30)).toBe(true)
  })

  it("a command with subcommands lists them with their summaries", () => {
    const help = helpOf(["listeners"])
    expect(help).toMatch(/^Usage: boxkit listeners COMMAND$/m)
    expect(help).toMatch(/^ {2}publish +Publish a guest port of a box;/m)
    expect(help).toMatch(/^ {2}add-domain +Add a custom domain/m)
    expect(help).toContain(`Run "boxkit listeners COMMAND --help" for the usage of a command.`)
    expect(helpOf([])).toMatch(/^ {2}--verbose +On a failure/m)
  })
})

describe("colours", () => {
  it("only on a terminal, never with NO_COLOR set to anything, whatever forces them", () => {
    const tty = { isTTY: true }
    const pipe = { isTTY: false }
    expect(colours(tty, {})).toBe(true)
    expect(colours(tty, { NO_COLOR: "" })).toBe(true)
    expect(colours(tty, { NO_COLOR: "1" })).toBe(false)
    expect(colours(tty, { NO_COLOR: "0" })).toBe(false)
    expect(colours(tty, { TERM: "dumb" })).toBe(false)
    expect(colours(pipe, { FORCE_COLOR: "3", CLICOLOR_FORCE: "1" })).toBe(false)
    expect(colours({}, {})).toBe(false)
  })
})

describe("a mistyped command", () => {
  it("the closest name at every level: by prefix, by edit distance, else none", () => {
    const boxes = ["create", "get", "upgrade", "pause", "resume", "sleep", "terminate"]
    expect(CommandLine.suggest("creat", boxes)).toEqual(Option.some("create"))
    expect(CommandLine.suggest("term", boxes)).toEqual(Option.some("terminate"))
    expect(CommandLine.suggest("gte", boxes)).toEqual(Option.none())
    expect(CommandLine.suggest("paus", boxes)).toEqual(Option.some("pause"))
    expect(CommandLine.suggest("zzz", boxes)).toEqual(Option.none())
    const resolved = CommandLine.resolve(root, ["boxes", "creat", "--name", "x"])
    expect(resolved).toMatchObject({ _tag: "Unknown", path: ["boxkit", "boxes"], word: "creat" })
    expect(CommandLine.resolve(root, ["bxes"])).toMatchObject({ _tag: "Unknown", path: ["boxkit"], word: "bxes" })
    expect(CommandLine.resolve(root, ["boxes", "create", "--name", "x"])).toMatchObject({
      _tag: "Found",
      path: ["boxkit", "boxes", "create"],
      rest: ["--name", "x"]
    })
  })
})

describe("through the built command, stdout piped", () => {
  /** Settings that ask other programs for colours; none of them may put escapes into a pipe. */
  const forcing = { FORCE_COLOR: "3", CLICOLOR_FORCE: "1", COLORTERM: "truecolor", TERM: "xterm-256color" }

  it.live("serve --help: plain text in 100 columns, with and without NO_COLOR; a mistyped command's suggestion", () =>
    Effect.gen(function*() {
      const [plain, noColor, clientHelp, mistyped, mistypedRoot, groupAlone, optionFirst] = yield* Effect.all([
        boxkit(["serve", "--help"], { env: { ...forcing, NO_COLOR: undefined } }),
        boxkit(["serve", "--help"], { env: { ...forcing, NO_COLOR: "1" } }),
        boxkit(["listeners", "publish", "-h"], { env: forcing }),
        boxkit(["boxes", "creat", "--name", "web"], { env: forcing }),
        boxkit(["bxes", "get"]),
        boxkit(["exec"]),
        boxkit(["--log-level", "debug", "boxes", "--json"])
      ])
      for (const run of [plain, noColor, clientHelp]) {
        expect(run.code).toBe(0)
        // (Node itself warns on stderr that FORCE_COLOR overrides NO_COLOR for its own output.)
        expect(run.stderr).not.toContain("\u001b")
        expect(run.stdout).not.toContain("\u001b")
        expect(widest(run.stdout)).toBeLessThanOrEqual(100)
      }
      expect(plain.stderr).toBe("")
      expect(plain.stdout).toMatch(/^Usage: boxkit serve \[--host HOST\] \[--port PORT\]/)
      expect(plain.stdout).toContain("Default: 8787.")
      expect(noColor.stdout).toBe(plain.stdout)
      expect(clientHelp.stdout).toMatch(/^Usage: boxkit listeners publish /)
      expect(clientHelp.stdout).toContain("[--protocol http|tcp] BOX_ID PORT")
      expect(mistyped.code).toBe(2)
      expect(mistyped.stdout).toBe("")
      expect(mistyped.stderr).toBe(
        "boxkit boxes: unknown command creat; did you mean create?\nfix: run \"boxkit boxes --help\" for its commands\n"
      )
      expect(mistypedRoot.code).toBe(2)
      expect(mistypedRoot.stderr).toContain("boxkit: unknown command bxes; did you mean boxes?")
      // A command that needs a subcommand, given none: its help.
      expect(groupAlone.code).toBe(0)
      expect(groupAlone.stdout).toMatch(/^Usage: boxkit exec COMMAND$/m)
      // An option where a command is needed, --log-level before it: the commands it takes, exit 2.
      expect(optionFirst.code).toBe(2)
      expect(optionFirst.stderr).toContain("boxkit boxes: expected a command before --json: one of create, get,")
    }), 300_000)
})

describe("the words read before @effect/cli runs", () => {
  it("--log-level and its value are left out wherever they are; an option where a command is needed is refused", () => {
    expect(CommandLine.withoutLogLevel(["--log-level", "debug", "boxes", "creat"])).toEqual(["boxes", "creat"])
    expect(CommandLine.withoutLogLevel(["boxes", "get", "--log-level=debug", "sb_1"])).toEqual(["boxes", "get", "sb_1"])
    const resolution = CommandLine.resolve(root, ["boxes", "--json"])
    expect(resolution._tag).toBe("Found")
    if (resolution._tag === "Found") {
      expect(CommandLine.missingCommand(resolution)).toMatchObject({
        message: "expected a command before --json: one of create, get, upgrade, pause, resume, sleep, terminate",
        usage: true
      })
    }
  })

  it("help's width: the terminal's up to 100 columns (at least 40), 100 off a terminal", () => {
    expect(CommandLine.layout({ isTTY: false, columns: 50 })).toEqual({ width: 100, colour: false })
    expect(CommandLine.layout({ isTTY: true, columns: 72 }).width).toBe(72)
    expect(CommandLine.layout({ isTTY: true, columns: 20 }).width).toBe(40)
    expect(CommandLine.layout({ isTTY: true, columns: 300 }).width).toBe(100)
  })
})
