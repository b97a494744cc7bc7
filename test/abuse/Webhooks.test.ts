/**
 * Completion webhooks as an attacker with a valid key would aim them (docs/ASSUMPTIONS.md "Webhooks"): at the service
 * itself, in every spelling of its loopback address, and with credentials in the URL. A delivery never reaches the
 * service's own routes (one refused attempt, no retry rounds); credentials never come back in an answer or in
 * `/_local/state`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Harness from "../support/Harness.js"
import { fakeServer, getResponse, localState, postResponse } from "../responses/support.js"

const waitFor = <A, R>(effect: Effect.Effect<A, never, R>, done: (value: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.dieMessage("condition not met in time")
  })

describe.each(Harness.variants())("completion webhooks aimed at the service itself ($name)", (variant) => {
  it.live("never reach its routes, whatever the spelling of its address: one refused attempt each, no retries", () =>
    Effect.gen(function*() {
      const port = new URL(yield* LocalService.baseUrl).port
      const spellings = [
        `http://127.0.0.1:${port}/_local/runtime`,
        `http://localhost:${port}/_local/runtime`,
        `http://2130706433:${port}/_local/runtime`,
        `http://0x7f000001:${port}/_local/runtime`,
        `http://127.1:${port}/v1/apps/find`
      ]
      const ids: Array<string> = []
      for (const url of spellings) {
        const accepted = yield* postResponse({ model: "boxkit-local", input: "x", background: true, metadata: { completion_webhook: url } })
        expect(accepted.status).toBe(202)
        ids.push(accepted.json.id)
      }
      const state = yield* waitFor(localState, (state: any) =>
        ids.every((id) => state.webhook_deliveries.some((entry: any) => entry.response_id === id)))
      for (const id of ids) {
        const attempts = state.webhook_deliveries.filter((entry: any) => entry.response_id === id)
        expect(attempts).toHaveLength(1)
        expect(attempts[0].ok).toBe(false)
        expect(attempts[0].status).toBe(403)
        expect(attempts[0].error).toContain("this service's own address")
      }
      expect(state.guest_schema_version).toBe(1)
    }).pipe(Effect.provide(Harness.serviceOn(variant))))

  it.live("a receiver of the user on loopback still gets its delivery", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* fakeServer((_, response) => {
        response.writeHead(204).end()
      })
      const accepted = yield* postResponse({
        model: "boxkit-local",
        input: "x",
        background: true,
        metadata: { completion_webhook: `${hook.url}/hook` }
      })
      yield* waitFor(Effect.sync(() => hook.received.length), (count) => count === 1)
      expect(JSON.parse(hook.received[0].body).id).toBe(accepted.json.id)
    })).pipe(Effect.provide(Harness.serviceOn(variant))))
})

describe.each(Harness.variants())("credentials in a webhook URL ($name)", (variant) => {
  it.live("are delivered with, and never shown: not in the answer, a read, a stream, nor /_local/state", () =>
    Effect.scoped(Effect.gen(function*() {
      const hook = yield* fakeServer((_, response) => {
        response.writeHead(204).end()
      })
      const url = `${hook.url.replace("http://", "http://hookuser:hookpassword@")}/hook`
      const accepted = yield* postResponse({ model: "boxkit-local", input: "x", background: true, metadata: { completion_webhook: url } })
      expect(accepted.status).toBe(202)
      expect(JSON.stringify(accepted.json)).not.toContain("hookpassword")
      expect(accepted.json.metadata.completion_webhook).toBe(`${hook.url.replace("http://", "http://REDACTED:REDACTED@")}/hook`)
      yield* waitFor(Effect.sync(() => hook.received.length), (count) => count === 1)
      const read = yield* getResponse(accepted.json.id)
      expect(read.text).not.toContain("hookpassword")
      const foreground = yield* postResponse({ model: "boxkit-local", input: "x", metadata: { completion_webhook: url } })
      expect(foreground.text).not.toContain("hookpassword")
      const streamed = yield* postResponse({ model: "boxkit-local", input: "x", stream: true, metadata: { completion_webhook: url } })
      expect(streamed.text).not.toContain("hookpassword")
      const state = yield* Harness.fetchRaw("/_local/state")
      expect(state.text).not.toContain("hookpassword")
      expect(state.text).not.toContain("hookuser")
    })).pipe(Effect.provide(Harness.serviceOn(variant))))
})
