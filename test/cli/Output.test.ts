/**
 * What the client commands print for a person (Cli/client/Output.ts) and the media type `clipboard put --file`
 * reads from a file's content (Cli/client/MediaType.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as MediaType from "../../src/Cli/client/MediaType.js"
import { fieldLines, relativeTime } from "../../src/Cli/client/Output.js"
import { spinning } from "../../src/Cli/client/Spinner.js"
import { onePixelPng } from "../../src/Cli/DemoProgram.js"

const now = Date.parse("2026-11-24T12:00:00Z")

describe("output for a person", () => {
  it("relative times: just now, seconds, minutes, hours, days, and the future", () => {
    expect([0, 1_400, 12_000, 185_000, 5 * 3_600_000, 3 * 86_400_000, -90_000].map((ago) => relativeTime(now - ago, now)))
      .toEqual(["just now", "just now", "12 s ago", "3 min ago", "5 h ago", "3 d ago", "in 1 min"])
  })

  it("fields aligned; times with how long ago (ISO strings and Unix seconds); nested values as JSON; status in colour only when asked", () => {
    const resource = { box_id: "sb_1", status: "running", created_at: "2026-11-24T11:59:00.000Z", listeners: [], usage: { a: 1 }, note: null, updated_at: now / 1000 - 7200 }
    expect(fieldLines(resource, { now, colour: false })).toEqual([
      "box_id      sb_1",
      "status      running",
      "created_at  2026-11-24T11:59:00.000Z (1 min ago)",
      "listeners   -",
      "usage       {\"a\":1}",
      "note        -",
      "updated_at  2026-11-24T10:00:00.000Z (2 h ago)"
    ])
    expect(fieldLines({ status: "failed" }, { now, colour: true })).toEqual(["status  \u001b[31mfailed\u001b[0m"])
  })
})

describe("media type of a file, from its content", () => {
  const bytes = (...values: Array<number>) => Uint8Array.from(values)
  const ascii = (text: string) => new TextEncoder().encode(text)
  it("images by signature, UTF-8 text, and nothing else", () => {
    expect(MediaType.sniff(onePixelPng)).toEqual(Option.some("image/png"))
    expect(MediaType.sniff(bytes(0xff, 0xd8, 0xff, 0xe0))).toEqual(Option.some("image/jpeg"))
    expect(MediaType.sniff(ascii("GIF89a..."))).toEqual(Option.some("image/gif"))
    expect(MediaType.sniff(ascii("RIFF\u0000\u0000\u0000\u0000WEBPVP8 "))).toEqual(Option.some("image/webp"))
    expect(MediaType.sniff(ascii("héllo, wörld\n"))).toEqual(Option.some("text/plain; charset=utf-8"))
    expect(MediaType.sniff(bytes(0xc3, 0x28))).toEqual(Option.none())
    expect(MediaType.sniff(bytes(0x68, 0x00, 0x69))).toEqual(Option.none())
  })
})

describe("the spinner of a wait", () => {
  /** Runs `effect` with stderr taken for a terminal and `NO_COLOR` as given, collecting what is written to stderr. */
  const onTerminal = <A, E>(effect: Effect.Effect<A, E>, noColor?: string) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const written: Array<string> = []
        const saved = { isTTY: process.stderr.isTTY, write: process.stderr.write, noColor: process.env.NO_COLOR, term: process.env.TERM }
        process.stderr.isTTY = true
        process.stderr.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof process.stderr.write
        if (noColor === undefined) delete process.env.NO_COLOR
        else process.env.NO_COLOR = noColor
        process.env.TERM = "xterm-256color"
        return { written, saved }
      }),
      ({ written }) => Effect.map(effect, (value) => ({ value, written })),
      ({ saved }) =>
        Effect.sync(() => {
          process.stderr.isTTY = saved.isTTY
          process.stderr.write = saved.write
          for (const [name, value] of [["NO_COLOR", saved.noColor], ["TERM", saved.term]] as const) {
            if (value === undefined) delete process.env[name]
            else process.env[name] = value
          }
        })
    )

  it.live("on a terminal: the latest status drawn, the line cleared at the end; elsewhere nothing", () =>
    Effect.gen(function*() {
      const wait = (show: (status: string) => Effect.Effect<void>) =>
        Effect.gen(function*() {
          yield* Effect.sleep("200 millis")
          yield* show("sb_1 running")
          yield* Effect.sleep("200 millis")
          return "done"
        })
      const { value, written } = yield* onTerminal(spinning("sb_1 creating", wait))
      expect(value).toBe("done")
      expect(written.some((line) => line.endsWith(" sb_1 creating"))).toBe(true)
      expect(written.some((line) => line.endsWith(" sb_1 running"))).toBe(true)
      expect(written.at(-1)).toBe("\r\u001b[2K")
      const quiet: Array<string> = []
      const write = process.stderr.write
      process.stderr.write = ((chunk: string) => quiet.push(String(chunk)) > 0) as typeof process.stderr.write
      const isTTY = process.stderr.isTTY
      process.stderr.isTTY = false
      yield* spinning("sb_1 creating", (show) => show("sb_1 running")).pipe(
        Effect.ensuring(Effect.sync(() => {
          process.stderr.write = write
          process.stderr.isTTY = isTTY
        }))
      )
      expect(quiet).toEqual([])
    }))

  it.live("on a terminal with NO_COLOR set: the status redrawn after a carriage return, blanked with spaces, no escapes", () =>
    Effect.gen(function*() {
      const wait = (show: (status: string) => Effect.Effect<void>) =>
        Effect.gen(function*() {
          yield* Effect.sleep("200 millis")
          yield* show("sb_1 ok")
          yield* Effect.sleep("200 millis")
        })
      const { written } = yield* onTerminal(spinning("sb_1 creating", wait), "1")
      expect(written.some((line) => line.endsWith(" sb_1 creating"))).toBe(true)
      // The shorter status is padded over what the longer one left.
      expect(written.some((line) => line.startsWith("\r") && line.trimEnd().endsWith(" sb_1 ok") && line.endsWith(" "))).toBe(true)
      expect(written.join("")).not.toContain("\u001b")
      expect(written.at(-1)).toMatch(/^\r +\r$/)
    }))
})
