/**
 * The capped whole read of the toolkit's undici client (UndiciHttpClient.ts `readWhole(request, maxBytes)`), which
 * webhook deliveries use for the receiver's answer (docs/ASSUMPTIONS.md "Webhooks"): a body within the limit is read
 * whole; a longer one is handed over cut at the limit and its connection closed; a deadline that passes after the
 * answer's head keeps the status and fails only the body.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { ServerResponse } from "node:http"
import * as UndiciHttpClient from "../../src/Http/UndiciHttpClient.js"
import { fakeServer } from "./support.js"

/** The toolkit's client with its own agent, for the scope. */
const leanClient = Effect.map(
  Layer.build(UndiciHttpClient.layer),
  (context) => HttpClient.HttpClient.of(context.unsafeMap.get(HttpClient.HttpClient.key))
)

/** Writes 16 KiB chunks to `response` until its connection closes (or 64 MiB); `sent` counts them. */
const endless = (response: ServerResponse, sent: { bytes: number; closed: boolean }) => {
  const chunk = Buffer.alloc(16 * 1024, 0x62)
  response.on("error", () => {})
  response.on("close", () => {
    sent.closed = true
  })
  const pump = () => {
    while (!response.destroyed && sent.bytes < 64 * 1024 * 1024) {
      sent.bytes += chunk.length
      if (!response.write(chunk)) return void response.once("drain", pump)
    }
    response.destroy()
  }
  pump()
}

describe("UndiciHttpClient readWhole with maxBytes", () => {
  it.scopedLive("a body within the limit is read whole; the connection is kept for the next request", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((_, response) => {
        response.writeHead(200).end("x".repeat(1000))
      })
      const client = yield* leanClient
      for (let index = 0; index < 2; index++) {
        const response = yield* client.execute(UndiciHttpClient.readWhole(HttpClientRequest.post(server.url), 1000))
        expect(response.status).toBe(200)
        expect(yield* response.text).toBe("x".repeat(1000))
      }
    }))

  it.scopedLive("a longer body is cut at the limit and the connection closed, with or without a declared length", () =>
    Effect.gen(function*() {
      for (const headers of [{ "content-length": String(2 ** 31) }, {}]) {
        const sent = { bytes: 0, closed: false }
        const server = yield* fakeServer((_, response) => {
          response.writeHead(201, headers)
          endless(response, sent)
        })
        const client = yield* leanClient
        const response = yield* client.execute(UndiciHttpClient.readWhole(HttpClientRequest.post(server.url), 40_000))
        expect(response.status).toBe(201)
        expect((yield* response.arrayBuffer).byteLength).toBe(40_000)
        yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => sent.closed }), Effect.timeout("10 seconds"))
        // What the kernel's socket buffers took, not 64 MiB: the client stopped reading.
        expect(sent.bytes).toBeLessThan(16 * 1024 * 1024)
      }
    }))

  it.scopedLive("a deadline passing after the head keeps the status; the body fails with the deadline's error", () =>
    Effect.gen(function*() {
      const server = yield* fakeServer((_, response) => {
        response.writeHead(200, { "content-length": "100" })
        response.write("partial")
      })
      const client = yield* leanClient
      const request = UndiciHttpClient.readWhole(HttpClientRequest.post(server.url), 1000)
      const response = yield* UndiciHttpClient.withDeadline(client.execute(request), {
        atMillis: Date.now() + 500,
        onExpire: () => "expired"
      })
      expect(response.status).toBe(200)
      const body = yield* Effect.either(response.text)
      expect(body._tag === "Left" && body.left.cause).toBe("expired")
      // Without a limit, the same deadline fails the request itself (as before).
      const failed = yield* Effect.either(UndiciHttpClient.withDeadline(client.execute(UndiciHttpClient.readWhole(HttpClientRequest.post(server.url))), {
        atMillis: Date.now() + 500,
        onExpire: () => "expired"
      }))
      expect(failed._tag === "Left" && failed.left._tag).toBe("RequestError")
    }))
})
