/**
 * A hostile client with an API key sends a body within the operation's limit whose small, bounded member is huge (a
 * 30 MiB `metadata` value in a 32 MiB create-response body): it is refused with the 400 naming the member, decided
 * by a scan of the bytes before anything parses the body. Proven by watching `JSON.parse` (the service runs in this
 * process): no text longer than the operation's small members reaches it. Members at their longest, fully escaped
 * and padded with whitespace, are still accepted. Runs on both serving paths. docs/ASSUMPTIONS.md "Request body
 * limits".
 */
import type { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { requestLimits } from "../../src/Domain/ModelResponse.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"

/**
 * Runs `effect` while recording, for everything in this process, the length of the longest text given to
 * `JSON.parse` (`longestParse`) and the bytes `Buffer.concat` produced in all (`concatenated`: reading a body copies
 * it once; concatenating it chunk by chunk copies it hundreds of times).
 */
const watchingParse = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const original = { parse: JSON.parse, concat: Buffer.concat }
      const seen = { longest: 0, concatenated: 0 }
      JSON.parse = function(text: string, reviver?: (this: any, key: string, value: any) => any) {
        if (typeof text === "string") seen.longest = Math.max(seen.longest, text.length)
        return original.parse.call(JSON, text, reviver)
      }
      Buffer.concat = function(list: ReadonlyArray<Uint8Array>, totalLength?: number) {
        const result = original.concat.call(Buffer, list, totalLength)
        seen.concatenated += result.byteLength
        return result
      }
      return { original, seen }
    }),
    ({ seen }) =>
      Effect.map(effect, (answer) => ({ answer, longestParse: seen.longest, concatenated: seen.concatenated })),
    ({ original }) =>
      Effect.sync(() => {
        JSON.parse = original.parse
        Buffer.concat = original.concat
      })
  )

/**
 * POSTs `body` with a key, as {@link C.request} does but waiting up to 25 s (real time) for the answer instead of 5:
 * sending and reading 30 MiB on a loaded machine can take seconds; the test bounds what the service parses, not time.
 */
const send = (path: string, body: string): Effect.Effect<C.RawResponse, never, HttpServer.HttpServer> =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    Effect.promise(() =>
      new Promise<C.RawResponse>((resolve) => {
        const bytes = Buffer.from(body, "utf8")
        const request = http.request(new URL(path, baseUrl), {
          method: "POST",
          headers: { ...C.auth(), "content-length": bytes.byteLength },
          timeout: 25_000
        }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8")
            resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json: JSON.parse(text || "null") })
          })
        })
        const failed = (error: Error) => resolve({ status: 0, headers: {}, text: String(error), json: undefined })
        request.on("timeout", () => request.destroy(new Error("no answer within 25 s")))
        request.on("error", failed)
        request.end(bytes)
      })
    ))

const mib = 1024 * 1024

const expectRefusedNaming = (answer: C.RawResponse, param: string) => {
  C.expectError(answer, 400, "invalid_request_error")
  expect(answer.json.error.param).toBe(param)
}

describe.each(Harness.variants())("a huge value in a bounded member ($name)", (variant) => {
  it.effect("a 30 MiB metadata value is a 400 naming metadata, decided without parsing the body", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const body = `{"model":"boxkit-local","input":"x","metadata":{"k":"${"v".repeat(30 * mib)}"}}`
      const { answer, concatenated, longestParse } = yield* watchingParse(send("/v1/responses", body))
      expect(longestParse).toBeLessThan(64 * 1024)
      // The body was read with at most one copy of it (the stock request's arrayBuffer copies it once per chunk).
      expect(concatenated).toBeLessThan(2 * body.length)
      expectRefusedNaming(answer, "metadata")
    })))

  it.effect("a 30 MiB model, or a 30 MiB string where stream takes a boolean, is a 400 naming it, without parsing", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const model = yield* watchingParse(send("/v1/responses", `{"input":"x","model":"${"m".repeat(30 * mib)}"}`))
      expectRefusedNaming(model.answer, "model")
      expect(model.longestParse).toBeLessThan(64 * 1024)
      const stream = yield* watchingParse(
        send("/v1/responses", `{"model":"boxkit-local","input":"x","stream":"${"s".repeat(30 * mib)}"}`)
      )
      expectRefusedNaming(stream.answer, "stream")
      expect(stream.longestParse).toBeLessThan(64 * 1024)
    })))

  it.effect("a 30 MiB input string (over 8 MiB characters) is a 400 naming input, without parsing the body", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const { answer, longestParse } = yield* watchingParse(
        send("/v1/responses", `{"model":"boxkit-local","input":"${"x".repeat(30 * mib)}"}`)
      )
      expect(longestParse).toBeLessThan(64 * 1024)
      expectRefusedNaming(answer, "input")
    })))

  it.effect("a 200 KiB secret name is a 400 naming name, without parsing the body", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      const { answer, longestParse } = yield* watchingParse(
        send("/v1/secrets", `{"name":"${"n".repeat(200 * 1024)}","value":"v"}`)
      )
      expectRefusedNaming(answer, "name")
      expect(longestParse).toBeLessThan(16 * 1024)
    })))
})

describe.each(Harness.variants())("bounded members at their longest ($name)", (variant) => {
  it.effect("every character escaped and 1 MiB of whitespace between tokens: accepted, metadata kept", () =>
    C.withServiceOn(variant)(Effect.gen(function*() {
      // Every UTF-16 code unit as `\uXXXX`: the longest a JSON string can be written.
      const escape = (text: string) =>
        `"${Array.from({ length: text.length }, (_, unit) => `\\u${text.charCodeAt(unit).toString(16).padStart(4, "0")}`).join("")}"`
      const space = " ".repeat(mib / 64)
      const pairs = Array.from({ length: requestLimits.metadataPairs }, (_, index) =>
        `${space}${escape(`key${index}`.padEnd(requestLimits.metadataKeyLength, "k"))}${space}:${space}${
          escape("\u{1F600}".repeat(requestLimits.metadataValueLength / 2))
        }`)
      // In the background (202 at once): the answer does not wait for the model.
      const body = `{${space}"model":${space}${escape("boxkit-local")},"input":"x","background":true,"user":${
        escape("u".repeat(requestLimits.userLength))
      },"metadata":{${pairs.join(`,${space}`)}${space}}${space}}`
      expect(body.length).toBeGreaterThan(mib)
      const answer = yield* send("/v1/responses", body)
      expect(answer.status).toBe(202)
      expect(answer.json.metadata[`key0`.padEnd(requestLimits.metadataKeyLength, "k")]).toBe(
        "\u{1F600}".repeat(requestLimits.metadataValueLength / 2)
      )
    })))
})
