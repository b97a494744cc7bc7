/**
 * POST /v1/responses and GET /v1/responses/{id} against the real local service over HTTP: every request rule of the
 * spec (input kinds, metadata, webhook URL, completion window, instructions, include, flags, cache key, pre-tokenized
 * prompt, numeric ranges), usage counted with the tokenizer, and max_output_tokens.
 */
import { beforeAll, describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { countTokens, localReply } from "../../src/Server/responses/LanguageModel.js"
import * as Tokenizer from "../../src/Server/responses/Tokenizer.js"
import * as Harness from "../support/Harness.js"
import { fakeServer, getResponse, localState, postResponse, seedWithOtherOrg, tinyPdf } from "./support.js"
import { layer } from "../support/SuiteLayer.js"

// The tests count tokens themselves; the tokenizer is loaded on first use (src/Server/responses/Tokenizer.ts).
beforeAll(() => Effect.runPromise(Tokenizer.load))

const model = "boxkit-local"

const expect400 = (answer: { status: number; json: any }, param: string | null, message?: RegExp) => {
  expect(answer.status).toBe(400)
  expect(answer.json.error.type).toBe("invalid_request_error")
  expect(answer.json.error.param).toBe(param)
  if (message !== undefined) expect(answer.json.error.message).toMatch(message)
}

const text = (json: any): string =>
  json.output.filter((item: any) => item.type === "message").flatMap((item: any) => item.content).map((part: any) =>
    part.text
  ).join("")

describe.each(Harness.variants())("$name", (variant) =>
layer(Harness.serviceOn(variant, {}, seedWithOtherOrg), { excludeTestServices: true })("POST /v1/responses request rules", (it) => {
  describe("input", () => {
    it.effect("is required: missing, empty string and empty array are 400 naming input", () =>
      Effect.gen(function*() {
        expect400(yield* postResponse({ model }), "input", /input is required/)
        expect400(yield* postResponse({ model, input: "" }), "input")
        expect400(yield* postResponse({ model, input: [] }), "input")
      }))

    it.effect("text as a string and as message items with input_text parts", () =>
      Effect.gen(function*() {
        const plain = yield* postResponse({ model, input: "hello there" })
        expect(plain.status).toBe(200)
        expect(plain.json.status).toBe("completed")
        expect(text(plain.json)).toContain("hello there")
        const items = yield* postResponse({
          model,
          input: [
            { role: "user", content: [{ type: "input_text", text: "first" }] },
            { type: "message", role: "assistant", content: "a reply" },
            { role: "user", content: "second" }
          ]
        })
        expect(items.status).toBe(200)
        expect(text(items.json)).toContain("first second")
      }))

    it.effect("input_image works on multimodal models and is refused on text-only models", () =>
      Effect.gen(function*() {
        const image = { type: "input_image", image_url: "https://example.com/cat.png" }
        const ok = yield* postResponse({ model, input: [{ role: "user", content: [image] }] })
        expect(ok.status).toBe(200)
        const refused = yield* postResponse({ model: "boxkit-text-1", input: [{ role: "user", content: [image] }] })
        expect400(refused, "input[0].content[0].type", /does not accept input_image/)
        const byFileId = yield* postResponse({
          model,
          input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1" }] }]
        })
        expect400(byFileId, "input[0].content[0].file_id")
      }))

    it.effect("an inline PDF input_file is accepted on every model; file_id, file_url and non-PDF data are 400", () =>
      Effect.gen(function*() {
        const pdf = { type: "input_file", filename: "a.pdf", file_data: tinyPdf }
        for (const m of [model, "boxkit-text-1"]) {
          const ok = yield* postResponse({ model: m, input: [{ role: "user", content: [pdf] }] })
          expect(ok.status).toBe(200)
        }
        expect400(
          yield* postResponse({ model, input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] }),
          "input[0].content[0].file_id",
          /unsupported/
        )
        expect400(
          yield* postResponse({
            model,
            input: [{ role: "user", content: [{ type: "input_file", file_url: "https://example.com/a.pdf" }] }]
          }),
          "input[0].content[0].file_url",
          /unsupported/
        )
        const notPdf = `data:application/pdf;base64,${Buffer.from("hello world").toString("base64")}`
        expect400(
          yield* postResponse({ model, input: [{ role: "user", content: [{ type: "input_file", file_data: notPdf }] }] }),
          "input[0].content[0].file_data",
          /inline PDF/
        )
      }))

    it.effect("audio and item references are refused with a clear 400", () =>
      Effect.gen(function*() {
        expect400(
          yield* postResponse({
            model,
            input: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }]
          }),
          "input[0].content[0].type",
          /Audio input is unsupported/
        )
        expect400(
          yield* postResponse({ model, input: [{ type: "item_reference", id: "msg_123" }] }),
          "input[0].type",
          /Item references are unsupported/
        )
        expect400(yield* postResponse({ model, input: [{ role: "robot", content: "x" }] }), "input[0].role")
      }))

    it.effect("instructions are prepended as a system message (counted in input tokens)", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model, input: "What is a box?", instructions: "Answer in one line." })
        expect(answer.status).toBe(200)
        expect(answer.json.instructions).toBe("Answer in one line.")
        expect(answer.json.usage.input_tokens).toBe(countTokens("system: Answer in one line.\nuser: What is a box?"))
        const without = yield* postResponse({ model, input: "What is a box?" })
        expect(without.json.usage.input_tokens).toBe(countTokens("user: What is a box?"))
      }))
  })

  describe("metadata", () => {
    it.effect("the two reserved keys are refused with 400", () =>
      Effect.gen(function*() {
        for (const key of ["supercached_input_tokens", "supercache_write_input_tokens"]) {
          expect400(yield* postResponse({ model, input: "x", metadata: { [key]: "1" } }), `metadata.${key}`, /reserved/)
        }
      }))

    it.scoped("metadata is a string map; other values are 400; it is echoed without webhook_token", () =>
      Effect.gen(function*() {
        const hook = yield* fakeServer((_, response) => {
          response.writeHead(204).end()
        })
        expect400(yield* postResponse({ model, input: "x", metadata: { n: 1 } }), "metadata.n")
        const answer = yield* postResponse({
          model,
          input: "x",
          metadata: { topic: "boxes", completion_webhook: `${hook.url}/hook`, webhook_token: "tok_secret" }
        })
        expect(answer.status).toBe(200)
        expect(answer.json.metadata.topic).toBe("boxes")
        expect(answer.json.metadata.completion_webhook).toBe(`${hook.url}/hook`)
        expect(answer.text).not.toContain("tok_secret")
        const read = yield* getResponse(answer.json.id)
        expect(read.text).not.toContain("tok_secret")
        while (hook.received.length === 0) yield* Effect.sleep("10 millis")
        expect(hook.received[0].headers.authorization).toBe("Bearer tok_secret")
        expect(hook.received[0].body).not.toContain("tok_secret")
      }))

    it.effect("an invalid completion_webhook sends no webhook and changes nothing else", () =>
      Effect.gen(function*() {
        for (const hook of ["ftp://example.com/hook", "not a url", "/relative/path"]) {
          const answer = yield* postResponse({ model, input: `hook ${hook}`, metadata: { completion_webhook: hook } })
          expect(answer.status).toBe(200)
          expect(answer.json.status).toBe("completed")
          expect(answer.json.metadata.completion_webhook).toBe(hook)
          const plain = yield* postResponse({ model, input: `hook ${hook}` })
          expect(text(plain.json)).toBe(text(answer.json))
          const state = yield* localState
          expect(state.webhook_deliveries.filter((entry: any) => entry.response_id === answer.json.id)).toEqual([])
        }
      }))
  })

  describe("completion window and background", () => {
    it.effect("the window is asap, balanced or flex, in the body or the header; anything else is 400", () =>
      Effect.gen(function*() {
        expect400(
          yield* postResponse({ model, input: "x", metadata: { completion_window: "soon" } }),
          "metadata.completion_window"
        )
        expect400(yield* postResponse({ model, input: "x" }, "sk_acme_org", { "x-completion-window": "soon" }), "x-completion-window")
        for (const window of ["asap", "balanced", "flex"]) {
          const answer = yield* postResponse({ model, input: "x" }, "sk_acme_org", { "x-completion-window": window })
          expect(answer.status).toBe(200)
        }
      }))

    it.effect("a background request uses balanced or flex; asap is 400; the body wins over the header", () =>
      Effect.gen(function*() {
        const accepted = yield* postResponse({ model, input: "bg", background: true })
        expect(accepted.status).toBe(202)
        expect(accepted.json.status).toBe("queued")
        expect(accepted.json.background).toBe(true)
        expect400(
          yield* postResponse({ model, input: "bg", background: true, metadata: { completion_window: "asap" } }),
          "metadata.completion_window",
          /balanced or flex/
        )
        expect400(
          yield* postResponse({ model, input: "bg", background: true }, "sk_acme_org", { "x-completion-window": "asap" }),
          "x-completion-window"
        )
        const bodyWins = yield* postResponse(
          { model, input: "bg", background: true, metadata: { completion_window: "flex" } },
          "sk_acme_org",
          { "x-completion-window": "asap" }
        )
        expect(bodyWins.status).toBe(202)
      }))

    it.effect("a background request cannot be streamed (400 naming stream)", () =>
      Effect.gen(function*() {
        expect400(yield* postResponse({ model, input: "x", background: true, stream: true }), "stream", /cannot be streamed/)
      }))
  })

  describe("named-by-description fields", () => {
    it.effect("include accepts the hosted API's values (reasoning.encrypted_content among them); others are 400", () =>
      Effect.gen(function*() {
        const ok = yield* postResponse({
          model,
          input: "think",
          include: ["reasoning.encrypted_content", "message.output_text.logprobs"],
          reasoning: { effort: "medium" }
        })
        expect(ok.status).toBe(200)
        const reasoning = ok.json.output.filter((item: any) => item.type === "reasoning")
        expect(reasoning).toHaveLength(1)
        expect(reasoning[0]).not.toHaveProperty("encrypted_content")
        expect(reasoning[0].content[0].type).toBe("reasoning_text")
        expect(ok.json.usage.output_tokens_details.reasoning_tokens).toBe(
          countTokens(reasoning[0].content[0].text)
        )
        expect(ok.json.usage.output_tokens).toBe(
          countTokens(reasoning[0].content[0].text) + countTokens(text(ok.json))
        )
        expect400(yield* postResponse({ model, input: "x", include: ["reasoning.everything"] }), "include[0]")
      }))

    it.effect("parallel_tool_calls and store are accepted without effect; store false still stores for GET", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model, input: "flags", parallel_tool_calls: false, store: false })
        expect(answer.status).toBe(200)
        expect(answer.json.parallel_tool_calls).toBe(false)
        expect(answer.json.store).toBe(false)
        const plain = yield* postResponse({ model, input: "flags" })
        expect(text(answer.json)).toBe(text(plain.json))
        const read = yield* getResponse(answer.json.id)
        expect(read.status).toBe(200)
        expect(read.json).toEqual(answer.json)
      }))

    it.effect("truncation allows only disabled", () =>
      Effect.gen(function*() {
        expect((yield* postResponse({ model, input: "x", truncation: "disabled" })).status).toBe(200)
        expect400(yield* postResponse({ model, input: "x", truncation: "auto" }), "truncation", /disabled/)
      }))

    it.effect("numeric fields: max_tool_calls 0..2147483647, max_output_tokens >= 1, temperature 0..2, top_p 0..1", () =>
      Effect.gen(function*() {
        const accepted = [
          { max_tool_calls: 0 },
          { max_tool_calls: 2147483647 },
          { max_output_tokens: 1 },
          { temperature: 0 },
          { temperature: 2 },
          { top_p: 0 },
          { top_p: 1 },
          { temperature: null, top_p: null, max_output_tokens: null, max_tool_calls: null }
        ]
        for (const fields of accepted) {
          const answer = yield* postResponse({ model, input: "n", ...fields })
          expect(answer.status, JSON.stringify(fields)).toBe(200)
        }
        const refused: Array<[Record<string, unknown>, string]> = [
          [{ max_tool_calls: -1 }, "max_tool_calls"],
          [{ max_tool_calls: 2147483648 }, "max_tool_calls"],
          [{ max_tool_calls: 1.5 }, "max_tool_calls"],
          [{ max_output_tokens: 0 }, "max_output_tokens"],
          [{ temperature: -0.1 }, "temperature"],
          [{ temperature: 2.01 }, "temperature"],
          [{ top_p: -0.1 }, "top_p"],
          [{ top_p: 1.01 }, "top_p"]
        ]
        for (const [fields, param] of refused) {
          expect400(yield* postResponse({ model, input: "n", ...fields }), param)
        }
      }))
  })

  describe("pre-tokenized prompt", () => {
    it.effect("1 to 2,000,000 ids, each 0 to 2147483647; input still required but ignored", () =>
      Effect.gen(function*() {
        const ok = yield* postResponse({ model, input: "placeholder", prompt_token_ids: [0, 15339, 2147483647] })
        expect(ok.status).toBe(200)
        expect(ok.json.usage.input_tokens).toBe(3)
        expect(text(ok.json)).not.toContain("placeholder")
        expect400(yield* postResponse({ model, prompt_token_ids: [1, 2] }), "input")
        expect400(yield* postResponse({ model, input: "p", prompt_token_ids: [] }), "prompt_token_ids", /at least 1/)
        expect400(
          yield* postResponse({ model, input: "p", prompt_token_ids: [1, -1] }),
          "prompt_token_ids",
          /prompt_token_ids\[1\]/
        )
        expect400(
          yield* postResponse({ model, input: "p", prompt_token_ids: [2147483648] }),
          "prompt_token_ids",
          /prompt_token_ids\[0\]/
        )
        expect400(yield* postResponse({ model, input: "p", prompt_token_ids: [1.5] }), "prompt_token_ids")
      }))

    it.effect("2,000,000 ids are accepted and counted; 2,000,001 are refused", () =>
      Effect.gen(function*() {
        const ids = Array.from({ length: 2_000_000 }, (_, index) => index % 10)
        const ok = yield* postResponse({ model, input: "placeholder", prompt_token_ids: ids })
        expect(ok.status).toBe(200)
        expect(ok.json.usage.input_tokens).toBe(2_000_000)
        ids.push(7)
        expect400(
          yield* postResponse({ model, input: "placeholder", prompt_token_ids: ids }),
          "prompt_token_ids",
          /at most 2000000/
        )
      }), 30_000)
  })

  describe("usage and limits", () => {
    it.effect("usage is counted with the tokenizer; a completed response carries the supercache keys as strings", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model, input: "count my tokens" })
        const usage = answer.json.usage
        const expected = localReply({
          model,
          messages: [{ role: "user", parts: [{ type: "text", text: "count my tokens" }] }],
          promptTokenIds: undefined,
          maxOutputTokens: undefined,
          temperature: undefined,
          topP: undefined,
          reasoningEffort: undefined
        }).text
        expect(text(answer.json)).toBe(expected)
        expect(usage.output_tokens).toBe(countTokens(expected))
        expect(usage.input_tokens).toBe(countTokens("user: count my tokens"))
        expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens)
        expect(usage.prompt_tokens).toBe(usage.input_tokens)
        expect(usage.completion_tokens).toBe(usage.output_tokens)
        expect(usage.input_tokens_details).toEqual({ cached_tokens: 0, reasoning_tokens: 0 })
        expect(answer.json.metadata.supercached_input_tokens).toBe("0")
        expect(answer.json.metadata.supercache_write_input_tokens).toBe("0")
      }))

    it.effect("cached_tokens counts a prefix seen before under the same prompt_cache_key", () =>
      Effect.gen(function*() {
        const shared = "You are a careful assistant. ".repeat(40)
        const first = yield* postResponse({ model, input: `${shared}Question one?`, prompt_cache_key: "k-1" })
        expect(first.json.usage.input_tokens_details.cached_tokens).toBe(0)
        expect(first.json.metadata.supercached_input_tokens).toBe("0")
        expect(first.json.metadata.supercache_write_input_tokens).toBe(String(first.json.usage.input_tokens))
        const second = yield* postResponse({ model, input: `${shared}Question two?`, prompt_cache_key: "k-1" })
        const cached = second.json.usage.input_tokens_details.cached_tokens
        expect(cached).toBeGreaterThan(countTokens(`user: ${shared}`) - 3)
        expect(cached).toBeLessThan(second.json.usage.input_tokens)
        expect(second.json.metadata.supercached_input_tokens).toBe(String(cached))
        expect(second.json.metadata.supercache_write_input_tokens).toBe(String(second.json.usage.input_tokens - cached))
        const otherKey = yield* postResponse({ model, input: `${shared}Question two?`, prompt_cache_key: "k-2" })
        expect(otherKey.json.usage.input_tokens_details.cached_tokens).toBe(0)
        const noKey = yield* postResponse({ model, input: `${shared}Question two?` })
        expect(noKey.json.usage.input_tokens_details.cached_tokens).toBe(0)
        const otherOrg = yield* postResponse({ model, input: `${shared}Question two?`, prompt_cache_key: "k-1" }, "sk_other_org")
        expect(otherOrg.status).toBe(200)
        expect(otherOrg.json.usage.input_tokens_details.cached_tokens).toBe(0)
      }))

    it.effect("max_output_tokens reached: incomplete with incomplete_details and the partial output", () =>
      Effect.gen(function*() {
        const full = yield* postResponse({ model, input: "a long answer please" })
        const cut = yield* postResponse({ model, input: "a long answer please", max_output_tokens: 5 })
        expect(cut.status).toBe(200)
        expect(cut.json.status).toBe("incomplete")
        expect(cut.json.incomplete_details).toEqual({ reason: "max_output_tokens" })
        expect(cut.json.usage.output_tokens).toBe(5)
        expect(cut.json.output[0].status).toBe("incomplete")
        expect(text(cut.json).length).toBeGreaterThan(0)
        expect(text(full.json).startsWith(text(cut.json))).toBe(true)
        expect(countTokens(text(cut.json))).toBe(5)
        expect(cut.json.metadata.supercached_input_tokens).toBe("0")
        const exact = yield* postResponse({
          model,
          input: "a long answer please",
          max_output_tokens: full.json.usage.output_tokens
        })
        expect(exact.json.status).toBe("completed")
      }))
  })

  describe("GET /v1/responses/{response_id}", () => {
    it.effect("returns the same object; other organizations and unknown ids get 404", () =>
      Effect.gen(function*() {
        const created = yield* postResponse({ model, input: "read me back" })
        const read = yield* getResponse(created.json.id)
        expect(read.status).toBe(200)
        expect(read.json).toEqual(created.json)
        expect(created.json.id).toMatch(/^resp_[0-9a-f]{32}$/)
        const foreign = yield* getResponse(created.json.id, "sk_other_org")
        expect(foreign.status).toBe(404)
        const sameOrgUserKey = yield* getResponse(created.json.id, "sk_acme_bob")
        expect(sameOrgUserKey.status).toBe(200)
        const unknown = yield* getResponse("resp_00000000000000000000000000000000")
        expect(unknown.status).toBe(404)
        expect(unknown.json.error.type).toBe("not_found_error")
      }))
  })
}))
