/**
 * The README's block markers (scripts/readme-blocks.ts) and the install commands taken from them, without packing:
 * a block without a marker, with an unknown check or without the file its check needs is a problem; links and
 * backticked paths are found in the prose only; the README of the checkout has no problem. Consumer.test.ts runs the
 * blocks themselves against the packed package.
 */
import { describe, expect, it } from "vitest"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as ReadmeBlocks from "../../scripts/readme-blocks.ts"
import * as Readme from "./Readme.ts"

const fence = "```"
const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

describe("README blocks", () => {
  it("reads each block with its marker's check, file, expect and until", () => {
    const { blocks, problems } = ReadmeBlocks.parse([
      "# Title",
      "<!-- readme-block check=run file=main.ts expect=\"two words\" -->",
      `${fence}ts`,
      "console.log(1)",
      fence,
      "",
      "<!-- readme-block check=signal file=daemon.ts until=ready -->",
      `${fence}ts`,
      "loop()",
      fence,
      "<!-- readme-block check=output -->",
      `${fence}console`,
      "$ ls",
      fence
    ].join("\n"))
    expect(problems).toEqual([])
    expect(blocks.map(({ check, code, expect, file, language, line, until }) => ({ check, code, expect, file, language, line, until })))
      .toEqual([
        { check: "run", code: "console.log(1)\n", expect: "two words", file: "main.ts", language: "ts", line: 3, until: undefined },
        { check: "signal", code: "loop()\n", expect: undefined, file: "daemon.ts", language: "ts", line: 8, until: "ready" },
        { check: "output", code: "$ ls\n", expect: undefined, file: undefined, language: "console", line: 12, until: undefined }
      ])
  })

  it("reports a block without a marker, an unknown check, a missing file or until, and a file used twice", () => {
    const { problems } = ReadmeBlocks.parse([
      "Some text",
      `${fence}sh`,
      "npm test",
      fence,
      "<!-- readme-block check=maybe -->",
      `${fence}ts`,
      fence,
      "<!-- readme-block check=run -->",
      `${fence}ts`,
      fence,
      "<!-- readme-block check=signal file=a.ts -->",
      `${fence}ts`,
      fence,
      "<!-- readme-block check=typecheck file=a.ts -->",
      `${fence}ts`,
      fence,
      "<!-- readme-block check=typecheck file=a.ts -->",
      `${fence}ts`,
      fence
    ].join("\n"))
    expect(problems).toEqual([
      "line 2: the `sh` block has no \"<!-- readme-block check=... -->\" marker on the line before it",
      "line 6: check=maybe is not one of install, shell, run, signal, vitest, typecheck, seed, serve, output, illustration",
      "line 9: check=run needs file=NAME",
      "line 12: check=signal needs until=\"TEXT\"",
      "file=a.ts names more than one block"
    ])
  })

  it("finds relative links and named package files in the prose, not in blocks", () => {
    const markdown = [
      "See [the guide](CONTRIBUTING.md#layout), [Effect](https://effect.website), [above](#install),",
      "![a picture](docs/screenshots/page.png) and `docs/ASSUMPTIONS.md`, `src/Client/Boxes.ts`, `quickstart.mjs`.",
      "<!-- readme-block check=illustration -->",
      `${fence}md`,
      "[inside](nowhere.md) `docs/inside.md`",
      fence
    ].join("\n")
    expect(ReadmeBlocks.relativeLinks(markdown)).toEqual(["CONTRIBUTING.md", "docs/screenshots/page.png"])
    expect(ReadmeBlocks.mentionedFiles(markdown)).toEqual(["docs/ASSUMPTIONS.md", "src/Client/Boxes.ts"])
    const entries = new Set(["package/README.md", "package/docs/ASSUMPTIONS.md", "package/src/Client/Boxes.ts"])
    expect(Readme.inTarball(entries, "docs/ASSUMPTIONS.md")).toBe(true)
    expect(Readme.inTarball(entries, "./src/Client")).toBe(true)
    expect(Readme.inTarball(entries, "CONTRIBUTING.md")).toBe(false)
    expect(Readme.inTarball(entries, "../README.md")).toBe(false)
  })

  it("runs a serve block's service on a free port and its commands against the address it printed", () => {
    const { blocks, problems } = ReadmeBlocks.parse([
      "<!-- readme-block check=serve expect='\"offset_seconds\":3600' -->",
      `${fence}sh`,
      "npx boxkit serve --port 8787 --clock virtual",
      "curl -s http://127.0.0.1:8787/_local/clock/advance -d '{\"seconds\": 3600}'",
      "curl -s http://127.0.0.1:8787/_local/clock",
      fence,
      "<!-- readme-block check=serve -->",
      `${fence}sh`,
      "npx boxkit serve --clock virtual",
      fence,
      "<!-- readme-block check=serve -->",
      `${fence}sh`,
      "boxkit serve --port 8787",
      fence
    ].join("\n"))
    expect(problems).toEqual([
      "line 8: check=serve needs \"npx boxkit serve ... --port PORT\" on the block's first line",
      "line 12: check=serve needs \"npx boxkit serve ... --port PORT\" on the block's first line"
    ])
    expect(blocks[0]?.expect).toBe("\"offset_seconds\":3600")
    const serve = ReadmeBlocks.serveBlock(blocks[0]!)
    expect(serve.serveArgs).toEqual(["serve", "--port", "0", "--clock", "virtual"])
    expect(serve.commands("http://127.0.0.1:40123")).toBe([
      "curl -s http://127.0.0.1:40123/_local/clock/advance -d '{\"seconds\": 3600}'",
      "curl -s http://127.0.0.1:40123/_local/clock",
      ""
    ].join("\n"))
  })

  it("takes npm install commands from install blocks, the package's name replaced by the tarball", () => {
    const { blocks } = ReadmeBlocks.parse([
      "<!-- readme-block check=install -->",
      `${fence}sh`,
      "npm install boxkit effect@^3.22.4",
      "npm install -D vitest@^3.2.7",
      fence
    ].join("\n"))
    expect(Readme.installCommands(blocks, "/tmp/boxkit-0.1.0.tgz")).toEqual([
      ["install", "/tmp/boxkit-0.1.0.tgz", "effect@^3.22.4"],
      ["install", "-D", "vitest@^3.2.7"]
    ])
    const { blocks: wrong } = ReadmeBlocks.parse(["<!-- readme-block check=install -->", `${fence}sh`, "yarn add boxkit", fence].join("\n"))
    expect(() => Readme.installCommands(wrong, "/tmp/boxkit.tgz")).toThrow("not an npm install command")
  })

  it("the checkout's README: every block marked, every install line on the Effect 3 ranges", () => {
    const { blocks, problems } = ReadmeBlocks.parse(readFileSync(join(checkout, "README.md"), "utf8"))
    expect(problems).toEqual([])
    const installed = Readme.installCommands(blocks, "boxkit.tgz").flat().filter((word) => word.startsWith("@effect/") || word.startsWith("effect") || word.startsWith("vitest"))
    expect(installed.length).toBeGreaterThan(0)
    // A package named without a range gets npm's latest, an Effect 4 release for effect and several @effect packages.
    expect(installed.filter((word) => !/^(@effect\/[\w-]+|effect|vitest)@\^\d/.test(word))).toEqual([])
  })
})
