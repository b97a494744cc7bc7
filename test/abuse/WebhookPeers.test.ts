/**
 * Completion-webhook receivers as an attacker with a valid key would run them, against the real local service over
 * HTTP (WebhookDelivery.ts, FairQueue.ts; docs/ASSUMPTIONS.md "Webhooks"):
 * - a receiver that answers 200 declaring a 2 GiB body (or a chunked body without end) and streams bytes until the
 *   service stops reading: the service reads at most `maxReplyBytes` and closes the connection; the 200 is a
 *   successful delivery, one attempt;
 * - a receiver that answers 200 and then trickles its body forever: the attempt's timeout ends the read, the 200
 *   still counts;
 * - one organization's many background responses whose receiver never answers do not hold back another
 *   organization's webhook: it arrives while the first organization's backlog is still far from worked off.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as LocalService from "../../src/Server/LocalService.js"
import * as WebhookDelivery from "../../src/Server/responses/WebhookDelivery.js"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as Harness from "../support/Harness.js"
import { localState, postResponse } from "../responses/support.js"

/** The demo seed plus a second organization with credits, `org_globex`, and its key `sk_globex_org`. */
const seed = Schema.decodeUnknownSync(Seed.Seed)({
  ...DemoSeed.example,
  organizations: [...DemoSeed.example.organizations ?? [], { id: "org_globex", credits: true, created_at: "2026-01-01T00:00:00Z" }],
  api_keys: [...DemoSeed.example.api_keys ?? [], { key: "sk_globex_org", org_id: "org_globex" }]
})

/** The local service with short webhook attempts (its own delivery options) and few workers. */
const service = (webhooks: WebhookDelivery.DeliveryOptions) =>
  LocalService.layerNode(seed, { server: Harness.fast.server, webhooks })

/** Polls `effect` every 20 ms until `done` holds (at most `seconds`). */
const waitFor = <A, E, R>(effect: Effect.Effect<A, E, R>, done: (value: A) => boolean, seconds = 30) =>
  Effect.gen(function*() {
    const until = Date.now() + seconds * 1000
    while (Date.now() < until) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.dieMessage("condition not met in time")
  })

/** What a hostile receiver saw: requests, bytes its sockets handed to the network, and closed connections. */
interface Receiver {
  readonly url: string
  readonly requests: Array<string>
  readonly written: Array<number>
  readonly closedByPeer: Array<boolean>
}

/**
 * A node:http receiver on 127.0.0.1 port 0 for the scope; `answer` writes the reply to each request (whose body is
 * pushed to `requests`); each connection's bytes written are pushed to `written` when it closes.
 */
const hostileReceiver = (answer: (response: ServerResponse, receiver: Receiver) => void) =>
  Effect.acquireRelease(
    Effect.async<Receiver & { readonly close: () => void }>((resume) => {
      const receiver = { requests: [] as Array<string>, written: [] as Array<number>, closedByPeer: [] as Array<boolean> }
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          receiver.requests.push(Buffer.concat(chunks).toString("utf8"))
          answer(response, self)
        })
      })
      server.on("connection", (socket) => {
        socket.on("error", () => {})
        socket.on("close", () => {
          receiver.written.push(socket.bytesWritten)
        })
      })
      const self = {
        ...receiver,
        url: "",
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }
      server.listen(0, "127.0.0.1", () => {
        ;(self as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
        resume(Effect.succeed(self))
      })
    }),
    (receiver) => Effect.sync(() => receiver.close())
  )

/** The most bytes the test lets a receiver write before it stops on its own (the service never stopped reading). */
const giveUpBytes = 64 * 1024 * 1024

/**
 * Writes `chunk` to `response` again and again, waiting for `drain` when the socket is full, until the connection
 * closes or `giveUpBytes` were written.
 */
const streamUntilStopped = (response: ServerResponse, chunk: Buffer) => {
  let sent = 0
  const pump = () => {
    while (!response.destroyed && !response.writableEnded) {
      if (sent >= giveUpBytes) {
        response.destroy()
        return
      }
      sent += chunk.length
      if (!response.write(chunk)) {
        response.once("drain", pump)
        return
      }
    }
  }
  response.on("error", () => {})
  pump()
}

/** The delivery-log entries of response `id`. */
const attemptsOf = (state: any, id: string): Array<any> =>
  state.webhook_deliveries.filter((entry: any) => entry.response_id === id)

/** A background response of `key` with its completion webhook at `url`; returns its id. */
const backgroundWithWebhook = (url: string, key = "sk_acme_org") =>
  Effect.map(
    postResponse({ model: "boxkit-local", input: "x", background: true, metadata: { completion_webhook: url } }, key),
    (accepted) => {
      expect(accepted.status).toBe(202)
      return accepted.json.id as string
    }
  )

/** Few bytes past the cap are read by the service; the kernel's socket buffers on both sides hold the rest written. */
const writtenBound = 16 * 1024 * 1024

describe("a receiver that answers 200 and streams a body without end", () => {
  for (
    const [name, headers] of [
      ["declaring Content-Length: 2 GiB", { "content-length": String(2 * 1024 ** 3) }],
      ["chunked, without a length", {}]
    ] as const
  ) {
    it.live(`${name}: the service reads about 64 KiB, closes the connection, and the 200 is a delivery`, () =>
      Effect.scoped(Effect.gen(function*() {
        const chunk = Buffer.alloc(64 * 1024, 0x61)
        const receiver = yield* hostileReceiver((response) => {
          response.writeHead(200, { "content-type": "application/octet-stream", ...headers })
          streamUntilStopped(response, chunk)
        })
        const id = yield* backgroundWithWebhook(receiver.url)
        const state = yield* waitFor(localState, (state: any) => attemptsOf(state, id).length >= 1)
        yield* waitFor(Effect.sync(() => receiver.written.length), (closed) => closed >= 1)
        // The attacker's measure: bytes its socket managed to hand over before the service closed the connection.
        expect(receiver.written[0]).toBeLessThan(writtenBound)
        expect(receiver.requests).toHaveLength(1)
        expect(JSON.parse(receiver.requests[0]).id).toBe(id)
        const attempts = attemptsOf(state, id)
        expect(attempts).toHaveLength(1)
        expect(attempts[0]).toMatchObject({ round: 1, attempt: 1, status: 200, ok: true, error: null })
        const record = state.responses.find((response: any) => response.id === id)
        expect(record.first_delivered_at).not.toBeNull()
      })).pipe(Effect.provide(service({ attemptTimeout: Duration.seconds(20) }))), 60_000)
  }

  it.live("trickling its body forever: the attempt's timeout ends the read, and the 200 still counts, once", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* hostileReceiver((response) => {
        response.writeHead(200, { "content-length": "1000000" })
        response.on("error", () => {})
        const timer = setInterval(() => {
          if (response.destroyed) clearInterval(timer)
          else response.write("a")
        }, 50)
        response.on("close", () => clearInterval(timer))
      })
      const id = yield* backgroundWithWebhook(receiver.url)
      // The connection is closed by the service once the attempt's time (1 s) is up.
      yield* waitFor(Effect.sync(() => receiver.written.length), (closed) => closed >= 1)
      const state = yield* waitFor(localState, (state: any) => attemptsOf(state, id).length >= 1)
      const attempts = attemptsOf(state, id)
      expect(attempts).toHaveLength(1)
      expect(attempts[0]).toMatchObject({ round: 1, attempt: 1, status: 200, ok: true })
      expect(receiver.requests).toHaveLength(1)
    })).pipe(Effect.provide(service({ attemptTimeout: Duration.seconds(1) }))), 60_000)
})

describe("one organization's dead receiver and another organization's webhook", () => {
  it.live("the other organization's webhook arrives while the first one's backlog is far from worked off", () =>
    Effect.scoped(Effect.gen(function*() {
      const backlog = 24
      // Organization acme's receiver takes every request and never answers (each attempt runs to its 2 s timeout).
      const dead = yield* hostileReceiver(() => {})
      const alive = yield* hostileReceiver((response) => {
        response.writeHead(204).end()
      })
      const ids: Array<string> = []
      for (let index = 0; index < backlog; index++) ids.push(yield* backgroundWithWebhook(dead.url))
      // Every acme response is finished (its webhook handed to delivery) and the dead receiver holds workers.
      yield* waitFor(localState, (state: any) =>
        ids.every((id) => state.responses.some((response: any) => response.id === id && response.status === "completed")))
      yield* waitFor(Effect.sync(() => dead.requests.length), (count) => count >= 1)
      const other = yield* backgroundWithWebhook(alive.url, "sk_globex_org")
      yield* waitFor(Effect.sync(() => alive.requests.length), (count) => count >= 1, 120)
      // In arrival order, globex's webhook came before acme's 24 first attempts had even been sent: not behind the
      // backlog (which takes 24 attempts x 2 s over at most 3 of the 4 workers, and 3 rounds of them).
      const deadSeenBefore = dead.requests.length
      expect(JSON.parse(alive.requests[0]).id).toBe(other)
      expect(deadSeenBefore).toBeLessThan(backlog / 2)
      const state = yield* localState
      expect(attemptsOf(state, other)).toEqual([expect.objectContaining({ round: 1, attempt: 1, status: 204, ok: true })])
    })).pipe(Effect.provide(service({ concurrency: 4, attemptTimeout: Duration.seconds(2) }))), 150_000)
})
