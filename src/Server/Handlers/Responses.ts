/**
 * Handlers of the responses group: POST /responses (foreground 200, background 202, SSE stream when `stream` is
 * true) and GET /responses/{response_id}.
 *
 * Source: spec "POST {api_url}/responses", "Events / Completion webhook".
 *
 * @since 0.1.0
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { BoxServiceApi } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { completionWindowHeader, ModelResponse } from "../../Domain/ModelResponse.js"
import { actingOrganization } from "../BoxAccess.js"
import { prepare, ResponseEngine } from "../ResponseEngine.js"

const encoder = new TextEncoder()

/** The responses handlers. */
export const layer = HttpApiBuilder.group(BoxServiceApi, "responses", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* ResponseEngine
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          yield* actingOrganization(principal)
          const prepared = yield* prepare(payload, headers[completionWindowHeader])
          if (payload.background === true) {
            const accepted = yield* engine.background(principal, prepared)
            return HttpServerResponse.unsafeJson(ModelResponse.make(accepted), { status: 202 })
          }
          if (payload.stream === true) {
            const events = yield* engine.stream(principal, prepared)
            return HttpServerResponse.stream(
              events.pipe(Stream.map((event) =>
                encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
              )),
              { contentType: "text/event-stream", headers: { "cache-control": "no-cache" } }
            )
          }
          return yield* engine.foreground(principal, prepared)
        }))
      .handle("retrieve", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          yield* actingOrganization(principal)
          return yield* engine.retrieve(principal, path.response_id)
        }))
  }))
