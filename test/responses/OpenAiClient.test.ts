/**
 * The official `openai` npm client, pointed at the local service's /v1, creates a response, iterates a streamed
 * response's events (raw and through its ResponseStream helper, which checks the event order and shapes), and
 * retrieves a response.
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Harness from "../support/Harness.js"
import { layer } from "../support/SuiteLayer.js"

const model = "boxkit-local"

const openai = Effect.map(LocalService.baseUrl, (baseURL) => new OpenAI({ apiKey: "sk_acme_org", baseURL, maxRetries: 0 }))

describe.each(Harness.variants())("$name", (variant) =>
layer(Harness.serviceOn(variant), { excludeTestServices: true })("the openai npm client against the local service", (it) => {
  describe("responses", () => {
    it.effect("creates a foreground response and retrieves it", () =>
      Effect.gen(function*() {
        const client = yield* openai
        const created = yield* Effect.promise(() =>
          client.responses.create({ model, input: "Hello from the openai client", instructions: "Be brief." })
        )
        expect(created.status).toBe("completed")
        expect(created.output_text).toContain("Hello from the openai client")
        expect(created.usage?.input_tokens).toBeGreaterThan(0)
        expect(created.usage?.input_tokens_details.cached_tokens).toBe(0)
        expect(created.metadata?.supercached_input_tokens).toBe("0")
        const retrieved = yield* Effect.promise(() => client.responses.retrieve(created.id))
        expect(retrieved.id).toBe(created.id)
        expect(retrieved.output_text).toBe(created.output_text)
        expect(retrieved.status).toBe("completed")
      }))

    it.effect("iterates a streamed response's events", () =>
      Effect.gen(function*() {
        const client = yield* openai
        const events = yield* Effect.promise(async () => {
          const stream = await client.responses.create({ model, input: "Stream to openai", stream: true })
          const seen: Array<OpenAI.Responses.ResponseStreamEvent> = []
          for await (const event of stream) seen.push(event)
          return seen
        })
        expect(events[0].type).toBe("response.created")
        expect(events.at(-1)!.type).toBe("response.completed")
        expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
        const text = events.flatMap((event) => event.type === "response.output_text.delta" ? [event.delta] : []).join("")
        expect(text).toContain("Stream to openai")
        const last = events.at(-1)!
        if (last.type !== "response.completed") throw new Error("no completed event")
        const retrieved = yield* Effect.promise(() => client.responses.retrieve(last.response.id))
        expect(retrieved.output_text).toBe(text)
      }))

    it.effect("the ResponseStream helper accumulates the events into the final response (reasoning included)", () =>
      Effect.gen(function*() {
        const client = yield* openai
        const { deltas, final } = yield* Effect.promise(async () => {
          const stream = client.responses.stream({
            model,
            input: "Helper stream",
            reasoning: { effort: "low" },
            include: ["reasoning.encrypted_content"]
          })
          let deltas = ""
          stream.on("response.output_text.delta", (event) => {
            deltas += event.delta
          })
          const final = await stream.finalResponse()
          return { deltas, final }
        })
        expect(final.status).toBe("completed")
        expect(final.output_text).toBe(deltas)
        expect(final.output.map((item) => item.type)).toEqual(["reasoning", "message"])
        const reasoning = final.output[0]
        if (reasoning.type !== "reasoning") throw new Error("no reasoning item")
        expect(reasoning.encrypted_content ?? null).toBeNull()
        expect(reasoning.content?.[0].text.length).toBeGreaterThan(0)
      }))

    it.effect("a background request is accepted (202 queued) and completes; errors are openai APIErrors", () =>
      Effect.gen(function*() {
        const client = yield* openai
        const accepted = yield* Effect.promise(() =>
          client.responses.create({ model, input: "later", background: true })
        )
        expect(accepted.status).toBe("queued")
        const done = yield* Effect.promise(async () => {
          for (let i = 0; i < 100; i++) {
            const read = await client.responses.retrieve(accepted.id)
            if (read.status === "completed") return read
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
          throw new Error("not completed")
        })
        expect(done.output_text).toContain("later")
        const error = yield* Effect.promise(() =>
          client.responses.create({ model, input: "x", metadata: { supercached_input_tokens: "1" } }).then(
            () => undefined,
            (error: unknown) => error
          )
        )
        expect(error).toBeInstanceOf(OpenAI.BadRequestError)
        if (error instanceof OpenAI.BadRequestError) {
          expect(error.status).toBe(400)
          expect(error.type).toBe("invalid_request_error")
          expect(error.param).toBe("metadata.supercached_input_tokens")
        }
      }))
  })
}))
