/**
 * Property-based tests of every validator at its boundaries (just inside, just outside), with fast-check through
 * `effect`: each property compares a schema (or a check of the service) with an oracle written from the spec's
 * words. Seeds are fixed, so runs are deterministic. The last block drives the same boundaries over HTTP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Either, FastCheck as fc, Schema } from "effect"
import { OwnerOverrideReason } from "../../src/Contract/Api.js"
import * as Box from "../../src/Domain/Box.js"
import * as EgressPolicy from "../../src/Domain/EgressPolicy.js"
import * as Secret from "../../src/Domain/Secret.js"
import { clipboardMediaType } from "../../src/Server/handlers/Clipboard.js"
import * as IdempotencyKey from "../../src/Contract/IdempotencyKey.js"
import * as C from "./support/Conformance.js"
import * as Harness from "../support/Harness.js"

const settings = { seed: 20261004, numRuns: 400 }

const accepts = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (input: unknown) => Either.isRight(decode(input))
}

/** Code points to build strings from: letters, digits, spaces, controls, invisible and astral characters. */
const characters = fc.constantFrom(
  "a", "Z", "0", "_", "-", ".", " ", "\u00a0", "\t", "\n", "\u0000", "\u007f", "\u0085", "\u200b", "é", "📦", "/",
  "\u2028", "\u2029", "\ud800", "\udfff"
)
const text = (minLength: number, maxLength: number) =>
  fc.array(characters, { minLength, maxLength }).map((parts) => parts.join(""))
/** A length near one of `edges` (edge - 2 to edge + 2). */
const near = (...edges: ReadonlyArray<number>) =>
  fc.tuple(fc.constantFrom(...edges), fc.integer({ min: -2, max: 2 })).map(([edge, delta]) => Math.max(0, edge + delta))
const codePoints = (value: string) => Array.from(value).length
/** What a line of text refuses (src/Domain/Text.ts): control characters, U+2028, U+2029, unpaired surrogates. */
const hasControl = (value: string) =>
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value) || /[\ud800-\udfff]/u.test(value)

describe("validators at their boundaries", () => {
  it("box name: 1 to 128 characters, non-whitespace, no control characters", () => {
    const valid = accepts(Box.BoxName)
    fc.assert(
      fc.property(near(0, 1, 128), fc.constantFrom("n", "📦", " ", "\t", "é"), (length, unit) => {
        const name = unit.repeat(length)
        const expected = length >= 1 && length <= 128 && /\S/.test(name) && !hasControl(name)
        expect(valid(name)).toBe(expected)
      }),
      settings
    )
    fc.assert(
      fc.property(text(0, 130), (name) => {
        const expected = codePoints(name) >= 1 && codePoints(name) <= 128 && /\S/.test(name) && !hasControl(name)
        expect(valid(name)).toBe(expected)
      }),
      settings
    )
  })

  it("max_lifetime_seconds: integers 1 to 4294967295, or null", () => {
    const valid = (value: unknown) => accepts(Box.CreateBoxRequest)(C.boxBody({ max_lifetime_seconds: value }))
    fc.assert(
      fc.property(
        fc.oneof(
          near(0, 1, 4294967295).map((n) => n),
          fc.integer({ min: -5, max: 5 }),
          fc.double({ noNaN: true }),
          fc.constant(null)
        ),
        (value) => {
          const expected = value === null || (Number.isInteger(value) && value >= 1 && value <= 4294967295)
          expect(valid(value)).toBe(expected)
        }
      ),
      settings
    )
  })

  it("memory and state disk: the size's range (default size m), just inside and just outside", () => {
    const valid = accepts(Box.CreateBoxRequest)
    const ranges = { s: { memory: [2, 64], disk: [8, 128] }, m: { memory: [8, 128], disk: [32, 512] }, l: { memory: [16, 256], disk: [64, 1024] } }
    fc.assert(
      fc.property(
        fc.constantFrom<"s" | "m" | "l" | undefined>("s", "m", "l", undefined),
        fc.constantFrom("memory_limit_gib", "state_disk_limit_gib"),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: -2, max: 2 }),
        (size, field, edgeIndex, delta) => {
          const range = ranges[size ?? "m"][field === "memory_limit_gib" ? "memory" : "disk"]
          const edges = [range[0], range[0], range[1], range[1]]
          const value = edges[edgeIndex] + delta
          const body = C.boxBody({ ...(size ? { size } : {}), [field]: value })
          expect(valid(body)).toBe(value >= range[0] && value <= range[1])
        }
      ),
      settings
    )
  })

  it("guest_port: integers 1 to 65535 (body), decimal digits only (path)", () => {
    const body = accepts(Box.GuestPort)
    const path = accepts(Box.GuestPortFromPath)
    fc.assert(
      fc.property(fc.oneof(near(0, 1, 65535), fc.integer(), fc.double()), (port) => {
        expect(body(port)).toBe(Number.isInteger(port) && port >= 1 && port <= 65535)
      }),
      settings
    )
    fc.assert(
      fc.property(fc.oneof(near(0, 1, 65535).map(String), fc.string({ maxLength: 7 })), (raw) => {
        expect(path(raw)).toBe(/^[0-9]{1,5}$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 65535)
      }),
      settings
    )
    // Every port the schema's own arbitrary produces is accepted by both forms.
    fc.assert(fc.property(Arbitrary.make(Box.GuestPort), (port) => body(port) && path(String(port))), settings)
  })

  it("secret name path parameter: surrounding whitespace ignored, then a letter or digit and up to 127 more", () => {
    const valid = accepts(Secret.SecretNameParam)
    const nameCharacters = fc.constantFrom("a", "Z", "7", "_", "-", ".", "é", " ")
    fc.assert(
      fc.property(
        fc.constantFrom("", " ", "\t", "  "),
        near(0, 1, 128).chain((length) =>
          fc.array(nameCharacters, { minLength: length, maxLength: length }).map((parts) => parts.join(""))),
        fc.constantFrom("", " ", "\n"),
        (before, core, after) => {
          const trimmed = (before + core + after).trim()
          expect(valid(before + core + after)).toBe(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(trimmed))
        }
      ),
      settings
    )
    fc.assert(fc.property(Arbitrary.make(Secret.SecretName), (name) => valid(` ${name} `)), settings)
  })

  it("policy name: 1 to 128 characters after trimming, visible text, no control characters", () => {
    const valid = accepts(EgressPolicy.PolicyName)
    fc.assert(
      fc.property(
        fc.oneof(text(0, 132), near(0, 1, 128).map((length) => ` ${"p".repeat(length)} `)),
        (name) => {
          const trimmed = name.trim()
          const expected = !hasControl(name) && codePoints(trimmed) >= 1 && codePoints(trimmed) <= 128 &&
            /[^\s\u200b]/.test(trimmed)
          expect(valid(name)).toBe(expected)
        }
      ),
      settings
    )
  })

  it("policy document: at most 65,536 bytes as compact JSON (multi-byte characters count in bytes)", () => {
    const valid = accepts(EgressPolicy.PolicyDocument)
    fc.assert(
      fc.property(near(65536), fc.constantFrom("a", "é", "📦"), (bytes, unit) => {
        const unitBytes = Buffer.byteLength(unit)
        const count = Math.floor((bytes - 18) / unitBytes)
        const document = { allowlist: [unit.repeat(count) + "a".repeat(bytes - 18 - count * unitBytes)] }
        const size = Buffer.byteLength(JSON.stringify(document))
        expect(size).toBe(bytes)
        expect(valid(document)).toBe(size <= 65536)
      }),
      { ...settings, numRuns: 60 }
    )
  })

  it("owner-override reason: printable ASCII only", () => {
    const valid = accepts(OwnerOverrideReason)
    fc.assert(
      fc.property(fc.string({ unit: fc.integer({ min: 0, max: 0xff }).map((code) => String.fromCharCode(code)), maxLength: 12 }), (reason) => {
        expect(valid(reason)).toBe(/^[\x20-\x7e]*$/.test(reason))
      }),
      settings
    )
  })

  it("Idempotency-Key size: bytes as sent (one per latin1 character the server sees)", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("k", "é", "€", "📦"), maxLength: 140 }), (key) => {
        const wire = Buffer.from(key, "utf8").toString("latin1")
        expect(IdempotencyKey.toHeaderValue(key)).toBe(wire)
        expect(IdempotencyKey.byteLength(wire)).toBe(Buffer.byteLength(key, "utf8"))
        expect(IdempotencyKey.keyOf(wire)).toBe(key)
      }),
      settings
    )
  })

  it("clipboard media type: text/plain or image/*, parameters ignored", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("text", "TEXT", "image", "Image", "video", "application", ""),
        fc.constantFrom("plain", "png", "svg+xml", "", "*", "plain2", "html"),
        fc.constantFrom("", "; charset=utf-8", ";q=1", " ; x=y"),
        (type, subtype, parameters) => {
          const header = `${type}/${subtype}${parameters}`
          const mediaType = `${type}/${subtype}`.toLowerCase()
          const expected = mediaType === "text/plain" || /^image\/[a-z0-9.+-]+$/.test(mediaType)
          expect(clipboardMediaType(header) !== undefined).toBe(expected)
        }
      ),
      settings
    )
  })

  it("create box: what the schema's arbitrary builds from valid parts is accepted, and exactly one image kind", () => {
    const valid = accepts(Box.CreateBoxRequest)
    fc.assert(
      fc.property(
        fc.record({
          base: fc.option(fc.constant("debian"), { nil: undefined }),
          oci: fc.option(fc.constant("nginx"), { nil: undefined }),
          dockerfile: fc.option(fc.constant("FROM x"), { nil: undefined })
        }),
        Arbitrary.make(Box.BoxSize),
        Arbitrary.make(Box.Visibility),
        fc.array(Arbitrary.make(Box.IngressPort), { maxLength: 3 }),
        (image, size, visibility, ports) => {
          const kinds = [image.base, image.oci, image.dockerfile].filter((kind) => kind !== undefined).length
          const body = C.boxBody({ image, size, visibility, ingress_ports: ports })
          expect(valid(body)).toBe(kinds === 1)
        }
      ),
      settings
    )
  })
})

describe.each(Harness.variants())("the same boundaries over HTTP ($name)", (variant) => {
  it.effect("create box: the service accepts exactly what the oracle accepts (memory, disk, lifetime, name, port)", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const cases = fc.sample(
        fc.oneof(
          fc.tuple(fc.constantFrom("s", "m", "l"), near(2, 8, 16, 64, 128, 256)).map(([size, memory]) => ({ size, memory_limit_gib: memory })),
          fc.tuple(fc.constantFrom("s", "m", "l"), near(8, 32, 64, 128, 512, 1024)).map(([size, disk]) => ({ size, state_disk_limit_gib: disk })),
          near(0, 4294967295).map((lifetime) => ({ max_lifetime_seconds: lifetime })),
          near(0, 128).map((length) => ({ name: "x".repeat(length) })),
          near(0, 65535).map((port) => ({ ingress_ports: [{ guest_port: port }] }))
        ),
        { seed: settings.seed, numRuns: 150 }
      )
      const oracle = accepts(Box.CreateBoxRequest)
      let accepted = 0
      for (const overrides of cases) {
        const body = C.boxBody(overrides)
        const before = (yield* C.state).boxes.length
        const response = yield* C.post("/v1/boxes", body)
        const expected = oracle(body)
        expect({ overrides, status: response.status }).toEqual({ overrides, status: expected ? 201 : 400 })
        expect((yield* C.state).boxes.length).toBe(before + (expected ? 1 : 0))
        if (expected) accepted++
      }
      // Both sides of the boundaries were exercised.
      expect(accepted).toBeGreaterThan(20)
      expect(cases.length - accepted).toBeGreaterThan(20)
    })))

  it.effect("Idempotency-Key: 255 bytes accepted, 256 refused, counted in bytes", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const keys = fc.sample(
        fc.tuple(near(127, 255), fc.constantFrom("k", "é")).map(([count, unit]) => unit.repeat(unit === "é" ? Math.ceil(count / 2) : count)),
        { seed: settings.seed, numRuns: 40 }
      )
      for (const key of keys) {
        const response = yield* C.post("/v1/boxes", C.boxBody(), "sk_acme_org", {
          "idempotency-key": Buffer.from(key, "utf8").toString("latin1")
        })
        const expected = Buffer.byteLength(key, "utf8") <= 255 ? [200, 201] : [400]
        expect(expected, `${Buffer.byteLength(key)} bytes`).toContain(response.status)
      }
    })))
})
