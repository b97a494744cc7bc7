/**
 * Helpers of the Responses tests: raw requests against the local service in context, and small fake HTTP servers
 * (webhook receivers, an OpenAI-compatible upstream) on port 0.
 */
import { Effect, Schema } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as Harness from "../support/Harness.js"

/** POST /v1/responses with a JSON body (`body` as given, or JSON-encoded) and the bearer `key`. */
export const postResponse = (body: unknown, key = "sk_acme_org", headers: Record<string, string> = {}) =>
  Harness.fetchRaw("/v1/responses", {
    method: "POST",
    headers: Harness.auth(key, headers),
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

/** GET /v1/responses/{id}. */
export const getResponse = (id: string, key = "sk_acme_org") =>
  Harness.fetchRaw(`/v1/responses/${id}`, { headers: Harness.auth(key) })

/** GET /_local/state. */
export const localState = Effect.map(Harness.fetchRaw("/_local/state"), (answer) => answer.json)

/** Parses a Server-Sent Events body into `{event, data}` pairs (data parsed as JSON). */
export const parseSse = (text: string): Array<{ event: string; data: any }> =>
  text.split("\n\n").filter((block) => block.trim() !== "").map((block) => {
    let event = "message"
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7)
      else if (line.startsWith("data: ")) data.push(line.slice(6))
    }
    return { event, data: JSON.parse(data.join("\n")) }
  })

/** A request a fake server received: method, path, headers and body text. */
export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

/**
 * A node:http server on 127.0.0.1 port 0 for the scope, answering with `handler`; `received` lists every request in
 * arrival order. `url` is `http://127.0.0.1:PORT`.
 */
export const fakeServer = (
  handler: (request: Received, response: ServerResponse, index: number) => void | Promise<void>
) =>
  Effect.acquireRelease(
    Effect.async<{ server: Server; url: string; received: Array<Received> }>((resume) => {
      const received: Array<Received> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const entry: Received = {
            method: request.method ?? "",
            url: request.url ?? "",
            headers: request.headers,
            body: Buffer.concat(chunks).toString("utf8")
          }
          received.push(entry)
          void Promise.resolve(handler(entry, response, received.length - 1)).catch(() => response.destroy())
        })
      })
      server.keepAliveTimeout = 1000
      server.listen(0, "127.0.0.1", () => {
        const address = server.address() as AddressInfo
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${address.port}`, received }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** A 20-byte inline PDF as a data URL. */
export const tinyPdf = `data:application/pdf;base64,${Buffer.from("%PDF-1.4\n%%EOF\n").toString("base64")}`

/**
 * The example seed plus a second organization with credits, `org_other` (key `sk_other_org`), for cross-organization
 * checks.
 */
export const seedWithOtherOrg = Schema.decodeUnknownSync(Seed.Seed)({
  ...DemoSeed.example,
  organizations: [...(DemoSeed.example.organizations ?? []), { id: "org_other", credits: true, created_at: "2026-01-01T00:00:00Z" }],
  api_keys: [...(DemoSeed.example.api_keys ?? []), { key: "sk_other_org", org_id: "org_other" }]
})
