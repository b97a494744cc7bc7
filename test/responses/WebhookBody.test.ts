/**
 * The receiver's decoding of a webhook body (WebhookBody.ts) gives what `Schema.decodeUnknownEither(ModelResponse)`
 * gives: an equal instance (fields, their order, the class) for every body the schema accepts, and the schema's own
 * error for every body it refuses.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { copyModelResponse, decodeModelResponse } from "../../src/Client/WebhookBody.js"
import { ModelResponse, toJson } from "../../src/Domain/ModelResponse.js"

const schemaDecode = Schema.decodeUnknownEither(ModelResponse)

/** Both decodings of `json` agree: equal instances (same field order), or the same error message. */
const agree = (json: unknown) => {
  const fast = decodeModelResponse(json)
  const slow = schemaDecode(json)
  expect(fast._tag).toBe(slow._tag)
  if (Either.isRight(fast) && Either.isRight(slow)) {
    expect(fast.right).toBeInstanceOf(ModelResponse)
    expect(fast.right).toStrictEqual(slow.right)
    expect(JSON.stringify(toJson(fast.right))).toBe(JSON.stringify(toJson(slow.right)))
    expect(Object.keys(fast.right)).toStrictEqual(Object.keys(slow.right))
  }
  if (Either.isLeft(fast) && Either.isLeft(slow)) expect(fast.left.message).toBe(slow.left.message)
}

/** A completion as the local service sends it (the JSON text of a finished response). */
const sent = {
  id: "resp_3d741ff581a2409caeb6e6c4c4d57297",
  object: "response",
  created_at: 1795793042,
  status: "completed",
  model: "boxkit-bench",
  usage: {
    input_tokens: 7,
    output_tokens: 44,
    total_tokens: 51,
    prompt_tokens: 7,
    completion_tokens: 44,
    input_tokens_details: { cached_tokens: 0, reasoning_tokens: 0 },
    output_tokens_details: { cached_tokens: 0, reasoning_tokens: 0 }
  },
  metadata: { completion_webhook: "http://127.0.0.1:9/webhooks", supercached_input_tokens: "0" },
  input: "Background request 1.",
  output: [{
    type: "message",
    id: "msg_3d741ff581a2409caeb6e6c4c4d57297",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "You said: \"Background request 1.\".", annotations: [], logprobs: [] }]
  }],
  error: null,
  incomplete_details: null,
  instructions: null,
  background: true,
  max_output_tokens: null,
  max_tool_calls: null,
  prompt_cache_key: null,
  reasoning: null,
  text: { format: { type: "text" } },
  store: true,
  temperature: 1,
  top_p: 1,
  parallel_tool_calls: true,
  tool_choice: "auto",
  tools: [],
  truncation: "disabled",
  user: null
}

const parsed = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

describe("WebhookBody.decodeModelResponse", () => {
  it("equals the schema's decoding on arbitrary Model response objects sent as JSON", () => {
    const encode = Schema.encodeSync(ModelResponse)
    fc.assert(
      fc.property(Arbitrary.make(ModelResponse), (response) => {
        const json = parsed(encode(response)) as { readonly metadata: object }
        agree(json)
        // Copied, not decoded by the schema, unless its metadata has a `__proto__` member.
        expect(copyModelResponse(json) !== undefined).toBe(!Object.hasOwn(json.metadata, "__proto__"))
      }),
      { numRuns: 300, seed: 11 }
    )
  })

  it("equals the schema's decoding on a service's completion, with fields left out, extra members and every status", () => {
    agree(parsed(sent))
    expect(copyModelResponse(parsed(sent))).toStrictEqual(Either.getOrThrow(schemaDecode(parsed(sent))))
    const { metadata: _metadata, output: _output, usage: _usage, ...bare } = sent
    agree(parsed(bare))
    agree(parsed({ ...sent, usage: null, extra: 1, __proto__member: { a: 1 } }))
    agree(parsed({
      ...sent,
      usage: { ...sent.usage, extra: 1, input_tokens_details: { cached_tokens: 1, reasoning_tokens: 2, more: 3 } }
    }))
    for (const status of ["queued", "in_progress", "failed", "completed", "incomplete", "cancelled"]) {
      agree(parsed({ ...sent, status }))
    }
    // A `__proto__` metadata key is an own member of the decoded metadata (the schema's path decides it).
    agree(JSON.parse(JSON.stringify(sent).replace("\"completion_webhook\"", "\"__proto__\"")))
  })

  it("refuses what the schema refuses, with the schema's message", () => {
    const wrong: ReadonlyArray<unknown> = [
      null,
      [],
      "text",
      {},
      { ...sent, id: 1 },
      { ...sent, object: "list" },
      { ...sent, created_at: 1.5 },
      { ...sent, created_at: Number.MAX_SAFE_INTEGER + 2 },
      { ...sent, status: "done" },
      { ...sent, model: null },
      { ...sent, usage: { ...sent.usage, total_tokens: "51" } },
      { ...sent, usage: { ...sent.usage, output_tokens_details: null } },
      { ...sent, usage: { ...sent.usage, input_tokens: 1.5 } },
      { ...sent, usage: { ...sent.usage, input_tokens_details: { cached_tokens: 0.5, reasoning_tokens: 0 } } },
      { ...sent, usage: { ...sent.usage, output_tokens_details: { cached_tokens: 0 } } },
      { ...sent, metadata: { key: 1 } },
      { ...sent, metadata: [] },
      { ...sent, output: {} },
      { ...sent, background: "yes" },
      { ...sent, max_output_tokens: 2.5 },
      { ...sent, prompt_cache_key: 3 },
      { ...sent, store: null },
      { ...sent, temperature: "1" },
      { ...sent, parallel_tool_calls: null },
      { ...sent, tools: "none" },
      { ...sent, truncation: false },
      { ...sent, user: 7 }
    ]
    for (const json of wrong) {
      expect(Either.isLeft(decodeModelResponse(json))).toBe(true)
      expect(copyModelResponse(json)).toBeUndefined()
      agree(json)
    }
  })
})
