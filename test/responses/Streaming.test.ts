/**
 * Streamed foreground responses: the Server-Sent Events wire format, the Responses event names, shapes and order
 * with sequence_number, reasoning items, max_output_tokens, and the client's typed Stream.
 */
import { describe, expect } from "@effect/vitest"
import { Chunk, Effect, Option, Stream } from "effect"
import * as ApiError from "../../src/ApiError.js"
import { deltaText, responseOf, Responses } from "../../src/Client/Responses.js"
import { outputText } from "../../src/Domain/ModelResponse.js"
import * as Harness from "../support/Harness.js"
import { getResponse, parseSse, postResponse } from "./support.js"
import { layer } from "../support/SuiteLayer.js"

const model = "boxkit-local"

const textEvents = [
  "response.output_item.added",
  "response.content_part.added",
  "response.output_text.delta",
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done"
]

/** Event types with consecutive text deltas collapsed into one. */
const shape = (types: Array<string>) =>
  types.filter((type, index) => !(type.endsWith(".delta") && types[index - 1] === type))

describe.each(Harness.variants())("$name", (variant) =>
layer(Harness.serviceWithClientOn(variant), { excludeTestServices: true })("streamed responses", (it) => {
  describe("wire format", () => {
    it.effect("text/event-stream with event: <type> and data: <event JSON>, in the Responses order", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model, input: "stream this", stream: true })
        expect(answer.status).toBe(200)
        expect(answer.headers.get("content-type")).toContain("text/event-stream")
        const events = parseSse(answer.text)
        for (const event of events) expect(event.data.type).toBe(event.event)
        expect(events.map((event) => event.data.sequence_number)).toEqual(events.map((_, index) => index))
        expect(shape(events.map((event) => event.event))).toEqual([
          "response.created",
          "response.in_progress",
          ...textEvents,
          "response.completed"
        ])
        const [created, inProgress] = events
        expect(created.data.response.status).toBe("in_progress")
        expect(created.data.response.object).toBe("response")
        expect(inProgress.data.response.id).toBe(created.data.response.id)
        const delta = events.find((event) => event.event === "response.output_text.delta")!.data
        expect(delta).toMatchObject({ output_index: 0, content_index: 0, logprobs: [] })
        expect(delta.item_id).toMatch(/^msg_[0-9a-f]{32}$/)
        const joined = events.filter((event) => event.event === "response.output_text.delta").map((event) =>
          event.data.delta
        ).join("")
        const done = events.find((event) => event.event === "response.output_text.done")!.data
        expect(done.text).toBe(joined)
        const itemDone = events.find((event) => event.event === "response.output_item.done")!.data
        expect(itemDone.item).toMatchObject({ type: "message", role: "assistant", status: "completed" })
        expect(itemDone.item.content[0].text).toBe(joined)
        const completed = events.at(-1)!.data.response
        expect(completed.status).toBe("completed")
        expect(completed.output).toEqual([itemDone.item])
        expect(completed.metadata.supercached_input_tokens).toBe("0")
        expect(completed.usage.output_tokens).toBeGreaterThan(0)
        const read = yield* getResponse(completed.id)
        expect(read.status).toBe(200)
        expect(read.json).toEqual(completed)
      }))

    it.effect("reasoning comes first as a reasoning item with reasoning_text events, never encrypted content", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({
          model,
          input: "think first",
          stream: true,
          reasoning: { effort: "high" },
          include: ["reasoning.encrypted_content"]
        })
        const events = parseSse(answer.text)
        expect(shape(events.map((event) => event.event))).toEqual([
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.content_part.added",
          "response.reasoning_text.delta",
          "response.reasoning_text.done",
          "response.content_part.done",
          "response.output_item.done",
          ...textEvents,
          "response.completed"
        ])
        const final = events.at(-1)!.data.response
        expect(final.output.map((item: any) => item.type)).toEqual(["reasoning", "message"])
        expect(final.output[0].id).toMatch(/^rs_/)
        expect(final.output[0]).not.toHaveProperty("encrypted_content")
        expect(answer.text).not.toContain("encrypted_content")
        const textDelta = events.find((event) => event.event === "response.output_text.delta")!.data
        expect(textDelta.output_index).toBe(1)
        expect(final.usage.output_tokens_details.reasoning_tokens).toBeGreaterThan(0)
      }))

    it.effect("max_output_tokens ends the stream with response.incomplete and the partial output", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model, input: "cut me short", stream: true, max_output_tokens: 3 })
        const events = parseSse(answer.text)
        const last = events.at(-1)!
        expect(last.event).toBe("response.incomplete")
        expect(last.data.response.status).toBe("incomplete")
        expect(last.data.response.incomplete_details).toEqual({ reason: "max_output_tokens" })
        expect(last.data.response.usage.output_tokens).toBe(3)
        expect(events.filter((event) => event.event === "response.output_text.delta")).toHaveLength(3)
        expect(events.find((event) => event.event === "response.output_item.done")!.data.item.status).toBe(
          "incomplete"
        )
      }))

    it.effect("a request error is an envelope, not a stream", () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model, input: "", stream: true })
        expect(answer.status).toBe(400)
        expect(answer.headers.get("content-type")).toContain("application/json")
        expect(answer.json.error.param).toBe("input")
      }))
  })

  describe("client", () => {
    it.effect("Responses.stream is a typed Stream of the events; the terminal event carries the final object", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        const events = Chunk.toArray(yield* Stream.runCollect(responses.stream({ model, input: "typed stream" })))
        expect(events[0].type).toBe("response.created")
        expect(events.at(-1)!.type).toBe("response.completed")
        const final = Option.getOrThrow(responseOf(events.at(-1)!))
        expect(outputText(final)).toBe(deltaText(events))
        expect(outputText(final)).toContain("typed stream")
        const read = yield* responses.retrieve(final.id)
        expect(read.status).toBe("completed")
      }))

    it.effect("a refused stream request fails with the typed error before any event", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        const error = yield* Effect.flip(
          Stream.runCollect(responses.stream({ model: "boxkit-text-1", input: [{ role: "user", content: [{ type: "input_image", image_url: "https://e.com/a.png" }] }] }))
        )
        expect(error).toBeInstanceOf(ApiError.InvalidRequestError)
        if (error instanceof ApiError.InvalidRequestError) expect(error.param).toBe("input[0].content[0].type")
      }))

    it.effect("create, submit + awaitCompletion; a missing id waits into ResponseExpiredError", () =>
      Effect.gen(function*() {
        const responses = yield* Responses
        const created = yield* responses.create({ model, input: "fg", max_output_tokens: 2 })
        expect(created.value.status).toBe("incomplete")
        const submitted = yield* responses.submit({ model, input: "bg" }, { completionWindow: "flex" })
        expect(submitted.value.status).toBe("queued")
        const done = yield* responses.awaitCompletion(submitted.value.id)
        expect(done.status).toBe("completed")
        expect(done.metadata.supercache_write_input_tokens).toBe("0")
        const again = yield* responses.submit({ model, input: "bg" }, { idempotencyKey: submitted.idempotencyKey })
        expect(again.replayed).toBe(true)
        expect(again.value.id).toBe(submitted.value.id)
        const missing = yield* Effect.flip(responses.awaitCompletion("resp_ffffffffffffffffffffffffffffffff"))
        expect(missing._tag).toBe("ResponseExpiredError")
      }))
  })
}))
