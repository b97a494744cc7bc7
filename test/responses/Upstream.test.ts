/**
 * The OpenAI-compatible upstream adapter (UpstreamModel) behind the local service, against a small fake upstream
 * started in the test: real text streamed through boxkit (foreground, SSE, background), the request it sends
 * (chat completions with stream: true, Bearer key, system message first, parts, max_tokens), the pre-tokenized prompt
 * forwarded verbatim to /completions, reasoning, length stops, and failures.
 */
import type { HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, type Scope } from "effect"
import type { ServerResponse } from "node:http"
import * as LocalService from "../../src/Server/LocalService.js"
import * as UpstreamModel from "../../src/Server/responses/UpstreamModel.js"
import * as Harness from "../support/Harness.js"
import { fakeServer, getResponse, localState, parseSse, postResponse, type Received, tinyPdf } from "./support.js"

const sse = (response: ServerResponse, data: unknown) => response.write(`data: ${JSON.stringify(data)}\n\n`)

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta, finish_reason: finish }]
})

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** When the fake upstream saw a "slow" request's connection close. */
const slowClosed: Array<number> = []

/** The fake upstream: behaviour chosen by the request's model name. */
const upstream = (request: Received, response: ServerResponse) => {
  const body = JSON.parse(request.body || "{}")
  if (body.model === "broken") {
    response.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "GPU on fire" } }))
    return
  }
  if (body.model === "json") {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "A whole answer." }, finish_reason: "stop" }]
    }))
    return
  }
  response.writeHead(200, { "content-type": "text/event-stream" })
  return (async () => {
    if (request.url === "/v1/completions") {
      for (const text of ["Tokens", " in", " verbatim"]) {
        sse(response, { object: "text_completion", choices: [{ index: 0, text, finish_reason: null }] })
      }
      sse(response, { object: "text_completion", choices: [{ index: 0, text: "", finish_reason: "stop" }] })
      response.end("data: [DONE]\n\n")
      return
    }
    sse(response, chunk({ role: "assistant", content: "" }))
    if (body.reasoning_effort !== undefined) {
      sse(response, chunk({ reasoning_content: "Thinking about" }))
      sse(response, chunk({ reasoning_content: " boxes." }))
    }
    if (body.model === "slow") {
      let open = true
      response.on("close", () => {
        open = false
        slowClosed.push(Date.now())
      })
      for (let i = 0; i < 100 && open; i++) {
        sse(response, chunk({ content: ` word${i}` }))
        await sleep(20)
      }
      response.end("data: [DONE]\n\n")
      return
    }
    if (body.model === "midstream-error") {
      sse(response, chunk({ content: "Partial" }))
      sse(response, { error: { message: "upstream overloaded" } })
      response.end()
      return
    }
    const pieces = ["Hello", " from", " the", " upstream", "."]
    const limit = body.model === "ignores-limits" ? pieces.length : Math.min(pieces.length, body.max_tokens ?? pieces.length)
    for (const piece of pieces.slice(0, limit)) {
      // Split each event across two writes to exercise the SSE parser.
      const text = `data: ${JSON.stringify(chunk({ content: piece }))}\n\n`
      response.write(text.slice(0, 9))
      await sleep(1)
      response.write(text.slice(9))
    }
    sse(response, chunk({}, limit < pieces.length ? "length" : "stop"))
    response.end(": comment\n\ndata: [DONE]\n\n")
  })()
}

/** Runs `body` with a fake upstream and the local service backed by it (key `sk-upstream`). */
const withUpstream = <A, E>(variant: Harness.Variant, 
  body: (received: Array<Received>) => Effect.Effect<A, E, HttpServer.HttpServer | Scope.Scope>
) =>
  Effect.scoped(Effect.gen(function*() {
    const fake = yield* fakeServer(upstream)
    const service = LocalService.layerNode(Harness.seed, {
      server: variant.server,
      languageModel: UpstreamModel.layer({ url: `${fake.url}/v1/`, apiKey: Redacted.make("sk-upstream") })
    })
    return yield* Effect.provide(body(fake.received), service)
  }))

const text = (json: any): string =>
  json.output.filter((item: any) => item.type === "message").flatMap((item: any) => item.content).map((part: any) =>
    part.text
  ).join("")

describe.each(Harness.variants())("UpstreamModel ($name)", (variant) => {
  it.live("a foreground response gets the upstream's text; the request is a streamed chat completion", () =>
    withUpstream(variant, (received) =>
      Effect.gen(function*() {
        const answer = yield* postResponse({
          model: "llama-local",
          instructions: "Be brief.",
          input: [
            { role: "developer", content: "Use plain words." },
            { role: "user", content: "Say hello" }
          ],
          temperature: 0.2,
          top_p: 0.9
        })
        expect(answer.status).toBe(200)
        expect(answer.json.status).toBe("completed")
        expect(text(answer.json)).toBe("Hello from the upstream.")
        expect(answer.json.model).toBe("llama-local")
        expect(answer.json.usage.output_tokens).toBe(5)
        expect(received).toHaveLength(1)
        const [request] = received
        expect(request.method).toBe("POST")
        expect(request.url).toBe("/v1/chat/completions")
        expect(request.headers.authorization).toBe("Bearer sk-upstream")
        expect(request.headers["content-type"]).toBe("application/json")
        const body = JSON.parse(request.body)
        expect(body).toEqual({
          model: "llama-local",
          stream: true,
          temperature: 0.2,
          top_p: 0.9,
          messages: [
            { role: "system", content: "Be brief." },
            { role: "system", content: "Use plain words." },
            { role: "user", content: "Say hello" }
          ]
        })
      })))

  it.live("a streamed response relays the upstream's deltas as Responses events", () =>
    withUpstream(variant, () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model: "llama-local", input: "Say hello", stream: true })
        const events = parseSse(answer.text)
        const deltas = events.filter((event) => event.event === "response.output_text.delta").map((event) =>
          event.data.delta
        )
        expect(deltas).toEqual(["Hello", " from", " the", " upstream", "."])
        expect(events.at(-1)!.event).toBe("response.completed")
        expect(text(events.at(-1)!.data.response)).toBe("Hello from the upstream.")
      })))

  it.live("images go as image_url parts and inline PDFs as file parts", () =>
    withUpstream(variant, (received) =>
      Effect.gen(function*() {
        const answer = yield* postResponse({
          model: "llava-local",
          input: [{
            role: "user",
            content: [
              { type: "input_text", text: "What is this?" },
              { type: "input_image", image_url: "https://example.com/cat.png" },
              { type: "input_file", filename: "a.pdf", file_data: tinyPdf }
            ]
          }]
        })
        expect(answer.status).toBe(200)
        expect(JSON.parse(received[0].body).messages).toEqual([{
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
            { type: "file", file: { filename: "a.pdf", file_data: tinyPdf } }
          ]
        }])
      })))

  it.live("the pre-tokenized prompt goes verbatim to /completions as prompt ids", () =>
    withUpstream(variant, (received) =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model: "llama-local", input: "ignored", prompt_token_ids: [1, 2, 2147483647] })
        expect(text(answer.json)).toBe("Tokens in verbatim")
        expect(answer.json.usage.input_tokens).toBe(3)
        expect(received[0].url).toBe("/v1/completions")
        expect(JSON.parse(received[0].body)).toEqual({ model: "llama-local", stream: true, prompt: [1, 2, 2147483647] })
      })))

  it.live("reasoning deltas become a reasoning item; max_output_tokens is max_tokens, a length stop is incomplete", () =>
    withUpstream(variant, (received) =>
      Effect.gen(function*() {
        const reasoned = yield* postResponse({ model: "llama-local", input: "Think", reasoning: { effort: "low" } })
        expect(JSON.parse(received[0].body).reasoning_effort).toBe("low")
        expect(reasoned.json.output[0]).toEqual({
          type: "reasoning",
          id: expect.stringMatching(/^rs_/),
          summary: [],
          content: [{ type: "reasoning_text", text: "Thinking about boxes." }]
        })
        expect(reasoned.json.usage.output_tokens_details.reasoning_tokens).toBe(4)
        const limited = yield* postResponse({ model: "llama-local", input: "Say hello", max_output_tokens: 3 })
        expect(JSON.parse(received[1].body).max_tokens).toBe(3)
        expect(limited.json.status).toBe("incomplete")
        expect(limited.json.incomplete_details).toEqual({ reason: "max_output_tokens" })
        expect(text(limited.json)).toBe("Hello from the")
        const enforced = yield* postResponse({ model: "ignores-limits", input: "Say hello", max_output_tokens: 2 })
        expect(enforced.json.status).toBe("incomplete")
        expect(text(enforced.json)).toBe("Hello from")
        expect(enforced.json.usage.output_tokens).toBe(2)
      })))

  it.live("an upstream that answers one JSON object instead of a stream is read too", () =>
    withUpstream(variant, () =>
      Effect.gen(function*() {
        const answer = yield* postResponse({ model: "json", input: "x" })
        expect(text(answer.json)).toBe("A whole answer.")
      })))

  it.live("upstream failures: foreground 500 naming the response, stored failed, no webhook; streams end failed", () =>
    withUpstream(variant, () =>
      Effect.gen(function*() {
        const hook = yield* fakeServer((_, response) => {
          response.writeHead(200).end()
        })
        const failed = yield* postResponse({
          model: "broken",
          input: "x",
          metadata: { completion_webhook: `${hook.url}/hook` }
        })
        expect(failed.status).toBe(500)
        expect(failed.json.error.type).toBe("server_error")
        // A generic message and a code, never the upstream's body or address (docs/ASSUMPTIONS.md "Webhooks").
        expect(failed.json.error.code).toBe("upstream_error")
        expect(failed.json.error.message).toContain("HTTP 500")
        expect(failed.json.error.message).not.toContain("GPU on fire")
        expect(failed.json.error.message).not.toContain("127.0.0.1")
        const id = /resp_[0-9a-f]{32}/.exec(failed.json.error.message)![0]
        const read = yield* getResponse(id)
        expect(read.json.status).toBe("failed")
        expect(read.json.error).toEqual({ code: "upstream_error", message: "The model upstream refused the request (HTTP 500)." })
        const streamed = yield* postResponse({ model: "midstream-error", input: "x", stream: true })
        const events = parseSse(streamed.text)
        expect(events.at(-1)!.event).toBe("response.failed")
        expect(events.at(-1)!.data.response.error.code).toBe("upstream_error")
        expect(events.at(-1)!.data.response.error.message).not.toContain("upstream overloaded")
        const background = yield* postResponse({
          model: "broken",
          input: "x",
          background: true,
          metadata: { completion_webhook: `${hook.url}/hook` }
        })
        for (let i = 0; i < 100; i++) {
          const state = yield* localState
          if (state.responses.find((entry: any) => entry.id === background.json.id).status === "failed") break
          yield* Effect.sleep("20 millis")
        }
        expect((yield* getResponse(background.json.id)).json.status).toBe("failed")
        yield* Effect.sleep("100 millis")
        expect(hook.received).toHaveLength(0)
      })))

  it.live("a client that goes away mid-stream cancels the response and the upstream request", () =>
    withUpstream(variant, () =>
      Effect.gen(function*() {
        const base = yield* LocalService.baseUrl
        const id = yield* Effect.promise(async () => {
          const controller = new AbortController()
          const response = await fetch(`${base}/responses`, {
            method: "POST",
            headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
            body: JSON.stringify({ model: "slow", input: "x", stream: true }),
            signal: controller.signal
          })
          const reader = response.body!.getReader()
          let text = ""
          while (!text.includes("response.output_text.delta")) {
            text += new TextDecoder().decode((await reader.read()).value)
          }
          controller.abort()
          return /resp_[0-9a-f]{32}/.exec(text)![0]
        })
        let status = ""
        for (let i = 0; i < 100 && status !== "cancelled"; i++) {
          yield* Effect.sleep("20 millis")
          status = (yield* getResponse(id)).json.status
        }
        expect(status).toBe("cancelled")
        expect(slowClosed.length).toBeGreaterThan(0)
      })))

  it.live("an unreachable upstream is a 500 that says so", () =>
    Effect.scoped(Effect.gen(function*() {
      const fake = yield* fakeServer(upstream)
      const url = fake.url
      fake.server.close()
      fake.server.closeAllConnections()
      yield* Effect.promise(() => sleep(20))
      const answer = yield* postResponse({ model: "llama-local", input: "x" }).pipe(
        Effect.provide(LocalService.layerNode(Harness.seed, {
      server: variant.server, languageModel: UpstreamModel.layer({ url }) }))
      )
      expect(answer.status).toBe(500)
      expect(answer.json.error.code).toBe("upstream_unreachable")
      expect(answer.json.error.message).toContain("could not be reached")
      expect(answer.json.error.message).not.toContain(new URL(url).port)
    })))

  it.live(`layerFromEnv reads the key from ${UpstreamModel.apiKeyEnv}`, () =>
    Effect.scoped(Effect.gen(function*() {
      const fake = yield* fakeServer(upstream)
      const previous = process.env[UpstreamModel.apiKeyEnv]
      process.env[UpstreamModel.apiKeyEnv] = "sk-from-env"
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (previous === undefined) delete process.env[UpstreamModel.apiKeyEnv]
          else process.env[UpstreamModel.apiKeyEnv] = previous
        })
      )
      const answer = yield* postResponse({ model: "llama-local", input: "x" }).pipe(
        Effect.provide(LocalService.layerNode(Harness.seed, {
      server: variant.server,
          languageModel: UpstreamModel.layerFromEnv(`${fake.url}/v1`)
        }))
      )
      expect(answer.status).toBe(200)
      expect(fake.received[0].headers.authorization).toBe("Bearer sk-from-env")
      expect(Layer.isLayer(UpstreamModel.layerFromEnv("http://x"))).toBe(true)
    })))
})
