/**
 * The byte scanner behind the request pipeline's checks before a body is parsed (Json.ts `checkBody`,
 * `topLevelMembers`): on random JSON objects written with random escapes and whitespace, its top-level members are
 * the ones `JSON.parse` finds, their values' text parses to the same values, and a member's counted bytes are its
 * text without the whitespace between tokens, so that a cap refuses exactly what is over it; a string member's length
 * is counted as the parse decodes it. The caps of the create-response and create-secret requests never refuse a valid
 * member, however escaped.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Json from "../../src/Domain/Json.js"
import { createRequestCaps, requestLimits } from "../../src/Domain/ModelResponse.js"
import * as Secret from "../../src/Domain/Secret.js"

/** A small deterministic random source (a linear congruential generator) from `seed`. */
const random = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const escaped = (unit: number) => `\\u${unit.toString(16).padStart(4, "0")}`

/** A JSON string of `text`, each code point escaped as `\uXXXX` when `escape()` says so (always for lone surrogates). */
const writeString = (text: string, escape: () => boolean): string => {
  let out = "\""
  for (const point of text) {
    const code = point.codePointAt(0)!
    const lone = point.length === 1 && code >= 0xd800 && code <= 0xdfff
    if (lone || escape()) {
      for (let unit = 0; unit < point.length; unit++) out += escaped(point.charCodeAt(unit))
    } else if (point === "\"" || point === "\\") out += `\\${point}`
    else if (code < 0x20) out += escaped(code)
    else out += point
  }
  return `${out}"`
}

/**
 * JSON text of `value` with random escapes (`escape`) and, when `space` is given, random whitespace between tokens.
 * The escapes drawn do not depend on the whitespace, so two writings with the same `escape` seed differ only in it.
 */
const write = (value: unknown, escape: () => boolean, space?: () => number): string => {
  const gap = () => (space === undefined ? "" : [" ", "\n", "\t", "\r\n", "  "][Math.floor(space() * 8)] ?? "")
  if (typeof value === "string") return writeString(value, escape)
  if (value === null || typeof value !== "object") return JSON.stringify(value)
  if (Array.isArray(value)) return `[${gap()}${value.map((item) => write(item, escape, space) + gap()).join(`,${gap()}`)}]`
  const members = Object.entries(value).map(([name, member]) =>
    `${gap()}${writeString(name, escape)}${gap()}:${gap()}${write(member, escape, space)}${gap()}`
  )
  return `{${members.join(",")}${gap()}}`
}

const documents = fc.record({
  value: fc.dictionary(fc.string({ unit: "binary" }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 8 }),
  escapeSeed: fc.integer(),
  spaceSeed: fc.integer()
})

describe("Json.topLevelMembers", () => {
  it("finds the members JSON.parse finds, with the same values, on random documents with random escapes and whitespace", () => {
    fc.assert(
      fc.property(documents, ({ escapeSeed, spaceSeed, value }) => {
        const escapeRandom = random(escapeSeed)
        const text = ` ${write(value, () => escapeRandom() < 0.3, random(spaceSeed))} `
        const bytes = Buffer.from(text, "utf8")
        const parsed = JSON.parse(text) as Record<string, unknown>
        const members = Json.topLevelMembers(bytes)
        expect(members.map((member) => member.name).sort()).toEqual(Object.keys(parsed).sort())
        for (const member of members) {
          expect(JSON.parse(bytes.toString("utf8", member.start, member.end))).toEqual(parsed[member.name!])
        }
      }),
      { numRuns: 400, seed: 12 }
    )
  })

  it("counts a member's bytes as its text without the whitespace between tokens, so a cap refuses exactly past it", () => {
    fc.assert(
      fc.property(documents, ({ escapeSeed, spaceSeed, value }) => {
        const names = Object.keys(value)
        fc.pre(names.length > 0)
        const compactRandom = random(escapeSeed)
        const compact = Buffer.from(write(value, () => compactRandom() < 0.3))
        const spacedRandom = random(escapeSeed)
        const spaced = Buffer.from(write(value, () => spacedRandom() < 0.3, random(spaceSeed)))
        const compactMembers = Json.topLevelMembers(compact)
        const spacedMembers = Json.topLevelMembers(spaced)
        expect(spacedMembers.map((member) => member.bytes)).toEqual(compactMembers.map((member) => member.end - member.start))
        // A cap of exactly a member's bytes passes; one byte less is refused, naming it.
        const member = spacedMembers[(spaceSeed >>> 0) % spacedMembers.length]!
        const name = member.name!
        expect(Json.checkBody(spaced, { [name]: member.bytes })).toBeUndefined()
        expect(Json.checkBody(spaced, { [name]: member.bytes - 1 })).toEqual({ _tag: "OverCap", field: name, cap: member.bytes - 1 })
      }),
      { numRuns: 400, seed: 13 }
    )
  })

  it("reads member names with their escapes, so an escaped name is capped as the parse will read it", () => {
    const body = Buffer.from(`{"\\u006detadata": {"k": "${"v".repeat(100_000)}"}}`)
    expect(Json.checkBody(body, createRequestCaps)).toEqual({
      _tag: "OverCap",
      field: "metadata",
      cap: createRequestCaps.metadata
    })
  })

  it("measures a member each time it is sent (JSON.parse keeps the last one)", () => {
    const body = Buffer.from(`{"model": "${"m".repeat(10_000)}", "model": "m"}`)
    expect(Json.checkBody(body, createRequestCaps)).toMatchObject({ _tag: "OverCap", field: "model" })
  })
})

describe("string length caps", () => {
  it("count a string member's UTF-16 code units as JSON.parse decodes them, however escaped", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 64 }), fc.integer(), (text, escapeSeed) => {
        const escapeRandom = random(escapeSeed)
        const body = Buffer.from(`{"n": 1, "s": ${writeString(text, () => escapeRandom() < 0.4)}, "m": 2}`)
        const length = (JSON.parse(body.toString()) as { s: string }).s.length
        expect(length).toBe(text.length)
        expect(Json.checkBody(body, { s: { maxLength: length } })).toBeUndefined()
        if (length > 0) {
          expect(Json.checkBody(body, { s: { maxLength: length - 1 } })).toEqual({ _tag: "OverLength", field: "s", cap: length - 1 })
        }
      }),
      { numRuns: 400, seed: 15 }
    )
  })

  it("leave a member that is not a string to the schema", () => {
    const items = Buffer.from(`{"input": [{"role": "user", "content": "${"x".repeat(100)}"}]}`)
    expect(Json.checkBody(items, { input: { maxLength: 10 } })).toBeUndefined()
  })
})

/** Strings of at most `max` UTF-16 code units, astral characters and lone surrogates among them. */
const textUpTo = (max: number) =>
  fc.string({ unit: "binary", maxLength: max }).map((text) => (text.length > max ? text.slice(0, max) : text))

describe("member caps", () => {
  it("never refuse a valid create-response member or secret name, every character escaped and whitespace added", () => {
    const request = fc.record({
      model: textUpTo(requestLimits.modelLength),
      user: textUpTo(requestLimits.userLength),
      prompt_cache_key: textUpTo(requestLimits.promptCacheKeyLength),
      metadata: fc.dictionary(textUpTo(requestLimits.metadataKeyLength), textUpTo(requestLimits.metadataValueLength), {
        maxKeys: requestLimits.metadataPairs
      }),
      stream: fc.constantFrom(true, false, null),
      truncation: fc.constantFrom("disabled", null),
      max_output_tokens: fc.oneof(fc.integer({ min: 1 }), fc.constant(null)),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      top_p: fc.double({ min: 0, max: 1, noNaN: true })
    })
    fc.assert(
      fc.property(request, fc.integer(), (value, spaceSeed) => {
        const text = write(value, () => true, random(spaceSeed))
        expect(Json.checkBody(Buffer.from(text), createRequestCaps)).toBeUndefined()
      }),
      { numRuns: 200, seed: 14 }
    )
    const longest = {
      model: "\u{1F600}".repeat(requestLimits.modelLength / 2),
      metadata: Object.fromEntries(Array.from({ length: requestLimits.metadataPairs }, (_, index) => [
        `${index}`.padEnd(requestLimits.metadataKeyLength, "k"),
        "\u{1F600}".repeat(requestLimits.metadataValueLength / 2)
      ]))
    }
    expect(Json.checkBody(Buffer.from(write(longest, () => true)), createRequestCaps)).toBeUndefined()
    const name = { name: "n".repeat(128), value: "v" }
    expect(Json.checkBody(Buffer.from(write(name, () => true)), Secret.createRequestCaps)).toBeUndefined()
  })

  it("have the floor for small members, so a small value of the wrong type is left to the schema", () => {
    expect(createRequestCaps.stream).toBe(Json.memberCapFloor)
    expect(Json.checkBody(Buffer.from(`{"stream": "${"x".repeat(1000)}", "model": "m", "input": "x"}`), createRequestCaps))
      .toBeUndefined()
  })
})
