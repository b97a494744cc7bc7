/**
 * The cheap paths of the Responses engine give the same results as the streamed one: the local model's whole answer
 * equals its token-by-token pieces joined (same token total); a foreground (or background) response, run without
 * events from whole pieces, ends in the same final object as the streamed response of the same request, for every
 * `max_output_tokens` (cuts inside multi-token characters included) and with or without reasoning; background
 * requests wait in a queue served by workers, and many of them all complete.
 *
 * "Every `max_output_tokens`" is every limit from 1 to the answer's whole output (reasoning and text: 39 to 87 tokens
 * for the inputs below), which cuts the answer after each of its tokens, and no limit: a limit above the whole output
 * cuts nothing, as the whole output itself does not.
 *
 * "Many" is four times the engine's 32 workers (ResponseEngine's `backgroundConcurrency`), so that most requests (three
 * in four) wait in the queue, and below an organization's 1,000 background responses in flight (Quotas.ts), so that
 * every one is accepted however fast the workers drain the queue.
 */
import { beforeAll, describe, expect } from "@effect/vitest"
import { Effect, FastCheck as fc, Schedule } from "effect"
import { it as vitestIt } from "vitest"
import { countTokens, type GenerateRequest, localChunks, localReply } from "../../src/Server/responses/LanguageModel.js"
import * as Tokenizer from "../../src/Server/responses/Tokenizer.js"
import * as Harness from "../support/Harness.js"
import { getResponse, parseSse, postResponse } from "./support.js"
import { layer } from "../support/SuiteLayer.js"

// The tests count tokens themselves; the tokenizer is loaded on first use (src/Server/responses/Tokenizer.ts).
beforeAll(() => Effect.runPromise(Tokenizer.load))

const model = "boxkit-local"

/** A request of the local model for `text` (as the engine builds it). */
const generateRequest = (text: string, reasoningEffort?: string, stream?: boolean): GenerateRequest => ({
  model,
  messages: [{ role: "user", parts: [{ type: "text", text }] }],
  promptTokenIds: undefined,
  maxOutputTokens: undefined,
  temperature: undefined,
  topP: undefined,
  reasoningEffort,
  stream
})

/** A final object with its response-specific ids (`resp_`, `rs_`, `msg_` suffixes, created_at) blanked. */
const normalized = (response: any) =>
  JSON.parse(
    JSON.stringify({ ...response, id: "resp", created_at: 0 }).replaceAll(response.id.slice("resp_".length), "ID")
  )

/** Reads a response until it is finished (every 10 ms, at most 10 s). */
const finished = (id: string) =>
  Effect.gen(function*() {
    while (true) {
      const answer = yield* getResponse(id)
      if (answer.json?.status !== "queued" && answer.json?.status !== "in_progress") return answer
      yield* Effect.sleep("10 millis")
    }
  }).pipe(Effect.timeout("25 seconds"))

/** Background requests accepted at once (see the module's note for the count). */
const backgroundRequests = 128

const inputs = ["Tell me about boxes.", "héllo 世界 🙂🙂 — naïve café ⛵ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 test"]

describe("the local model's whole answer", () => {
  for (const input of inputs) {
    for (const effort of [undefined, "high"]) {
      const label = `${JSON.stringify(input).slice(0, 24)} effort ${effort ?? "none"}`
      // Plain vitest `it`: no Effect involved.
      vitestIt(`equals its streamed pieces joined, with the same token totals (${label})`, () => {
        const pieces = localChunks(generateRequest(input, effort, true))
        const whole = localChunks(generateRequest(input, effort, false))
        const join = (tag: string, chunks: typeof pieces) =>
          chunks.filter((chunk) => chunk._tag === tag).map((chunk) => "text" in chunk ? chunk.text : "").join("")
        const tokens = (tag: string, chunks: typeof pieces) =>
          chunks.filter((chunk) => chunk._tag === tag).reduce((sum, chunk) => sum + ("tokens" in chunk ? chunk.tokens : 0), 0)
        for (const tag of ["Reasoning", "Text"]) {
          expect(join(tag, whole)).toBe(join(tag, pieces))
          expect(tokens(tag, whole)).toBe(tokens(tag, pieces))
        }
        const reply = localReply(generateRequest(input, effort))
        expect(join("Text", whole)).toBe(reply.text)
        expect(tokens("Text", whole)).toBe(countTokens(reply.text))
        expect(whole.length).toBe(effort === undefined ? 1 : 2)
      })
    }
  }
})

describe("the local model's token count of its whole answer", () => {
  vitestIt("is the tokenizer's count of the whole text, for arbitrary prompts (every pair of fixed sentences)", () => {
    const pairs = new Set<string>()
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.fullUnicodeString(), fc.constantFrom(...inputs, "", "  a\"", "x'", "9")), (input) => {
        const [chunk] = localChunks(generateRequest(input, undefined, false))
        expect(chunk._tag).toBe("Text")
        if (chunk._tag !== "Text") return
        expect(chunk.tokens).toBe(countTokens(chunk.text))
        pairs.add(chunk.text.slice(chunk.text.lastIndexOf("\". ") + 3))
      }),
      { numRuns: 2000, seed: 3 }
    )
    // 8 sentences, two different ones per answer: all 56 ordered pairs were counted.
    expect(pairs.size).toBe(56)
  })
})

describe.each(Harness.variants())("$name", (variant) =>
layer(Harness.serviceWithClientOn(variant), { excludeTestServices: true })("non-streamed responses", (it) => {
  it.effect("end in the same final object as the streamed response, for every max_output_tokens, with and without reasoning", () =>
    Effect.gen(function*() {
      for (const input of inputs) {
        for (const reasoning of [undefined, { effort: "high" }]) {
          // The whole output first (no limit), then every limit that cuts it, up to the whole output itself.
          const whole = yield* postResponse({ model, input, reasoning })
          const outputTokens = whole.json.usage.output_tokens as number
          expect(outputTokens).toBeGreaterThan(30)
          const limits = [undefined, ...Array.from({ length: outputTokens }, (_, index) => index + 1)]
          for (const max_output_tokens of limits) {
            const request = { model, input, max_output_tokens, reasoning }
            const label = JSON.stringify({ input: input.slice(0, 10), max_output_tokens, reasoning })
            const foreground = yield* postResponse(request)
            expect(foreground.status, label).toBe(200)
            // The limits are the answer's cut points: each below the whole output cuts it, the whole output does not.
            const cut = max_output_tokens !== undefined && max_output_tokens < outputTokens
            expect(foreground.json.status, label).toBe(cut ? "incomplete" : "completed")
            const streamed = yield* postResponse({ ...request, stream: true })
            const final = parseSse(streamed.text).at(-1)!.data.response
            expect(normalized(foreground.json), label).toEqual(normalized(final))
            // What the answer said is what is stored.
            expect((yield* getResponse(foreground.json.id)).json, label).toEqual(foreground.json)
          }
        }
      }
    }), 60_000)

  it.effect("a background response ends in the same final object as the foreground one", () =>
    Effect.gen(function*() {
      for (const max_output_tokens of [3, 13, undefined]) {
        const request = { model, input: inputs[1], max_output_tokens, reasoning: { effort: "high" } }
        const foreground = yield* postResponse(request)
        const accepted = yield* postResponse({ ...request, background: true })
        expect(accepted.status).toBe(202)
        expect(accepted.json.status).toBe("queued")
        const done = yield* finished(accepted.json.id)
        const { background: _b, ...fromBackground } = normalized(done.json)
        const { background: _f, ...fromForeground } = normalized(foreground.json)
        expect(fromBackground).toEqual(fromForeground)
      }
    }))

  it.effect(`${backgroundRequests} background requests accepted at once all complete (queued, then run by the workers)`, () =>
    Effect.gen(function*() {
      const accepted = yield* Effect.forEach(
        Array.from({ length: backgroundRequests }, (_, index) => index),
        (index) => Effect.map(postResponse({ model, input: `job ${index}`, background: true }), (answer) => answer.json),
        { concurrency: 64 }
      )
      expect(accepted.every((response) => response.status === "queued")).toBe(true)
      // In the order they were sent (about the queue's, first in first out): each is read until it is completed; a
      // round stops at the first one still waiting instead of reading every later one again.
      const pending = accepted.map((response) => response.id as string)
      yield* Effect.gen(function*() {
        while (pending.length > 0) {
          const answer = yield* getResponse(pending[0]!)
          if (answer.json.status !== "completed") return
          pending.shift()
        }
      }).pipe(
        // Until every one is done: the test's own timeout is the only bound (a loaded machine is slow, not wrong).
        Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: () => pending.length === 0 })
      )
      expect(pending).toEqual([])
    }), 180_000)
}))
