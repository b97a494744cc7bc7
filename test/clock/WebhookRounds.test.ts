/**
 * A completion webhook whose receiver always fails, through the virtual clock (spec "Events / Completion webhook"
 * rule 5; docs/ASSUMPTIONS.md "The virtual clock"): each advance sends the rounds due inside it, really, in order, and
 * answers after them; round 2 comes 5 s of the service's clock after round 1; once the advances pass round 20 the
 * receiver has had exactly 60 requests, and later advances send nothing. On both serving paths and every store
 * (memory, SQLite, PostgreSQL).
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as WebhookRounds from "../../src/Server/responses/WebhookRounds.js"
import * as SuiteLayer from "../support/SuiteLayer.js"
import * as Clocked from "./Clocked.js"

/** A receiver that answers every request 500; `received` counts the requests per response id. */
const failingReceiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; received: Map<string, number>; server: http.Server }>((resolve) => {
      const received = new Map<string, number>()
      const server = http.createServer((request, response) => {
        let body = ""
        request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
        request.on("end", () => {
          const id = (JSON.parse(body) as { id: string }).id
          received.set(id, (received.get(id) ?? 0) + 1)
          response.writeHead(500).end()
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, server }))
    })
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

/** The delivery log entries of response `id`, oldest first, as `[round, attempt, at]`. */
const logOf = (id: string) =>
  Effect.map(Clocked.state, (current) =>
    current.webhook_deliveries
      .filter((entry: { response_id: string }) => entry.response_id === id)
      .map((entry: { round: number; attempt: number; at: string }) =>
        [entry.round, entry.attempt, Date.parse(entry.at)]
      ))

for (const server of Clocked.servers) {
  for (const store of Clocked.stores) {
    SuiteLayer.layer(Clocked.service(server, store), { excludeTestServices: true, timeout: "60 seconds" })(
      `webhook rounds through the clock (${server}, ${store})`,
      (it) => {
        it.scoped("each advance sends the rounds due in it, in order; after round 20 the delivery is given up", () =>
          Effect.gen(function*() {
            const receiver = yield* failingReceiver
            const created = yield* Clocked.request("/v1/responses", {
              body: { model: "boxkit-local", input: "never delivered", metadata: { completion_webhook: receiver.url } }
            })
            expect(created.status).toBe(200)
            const id: string = created.json.id
            // Round 1 (three attempts at once) is under way: an advance of nothing waits for it. (The clock also runs at
            // real speed, so later rounds may come on their own on a slow machine: only lower bounds before the end.)
            yield* Clocked.advance(0)
            expect(receiver.received.get(id)).toBeGreaterThanOrEqual(3)
            yield* Clocked.advance(5)
            expect(receiver.received.get(id)).toBeGreaterThanOrEqual(6)
            const rounds = yield* logOf(id)
            expect(rounds.slice(0, 6).map(([round, attempt]: Array<number>) => [round, attempt])).toEqual([
              [1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3]
            ])
            // Round 2 began 5 s of the service's clock after round 1 failed, not before.
            expect(rounds[3][2] - rounds[2][2]).toBeGreaterThanOrEqual(5000)
            // Rounds 3 to 20: 10 + 20 + 40 + 80 + 160 s, then 300 s each (a minute more: each round starts after the
            // previous one failed).
            yield* Clocked.advance(310 + 13 * 300 + 60)
            expect(receiver.received.get(id)).toBe(WebhookRounds.maxRequests)
            yield* Clocked.advance(3600)
            expect(receiver.received.get(id)).toBe(WebhookRounds.maxRequests)
          }), 120_000)
      }
    )
  }
}
