/**
 * Handlers of the responses group: POST /responses (foreground 200 with the Model response object, background 202
 * with the accepted object, a Server-Sent Events stream of Responses events when `stream` is true on a foreground
 * request) and GET /responses/{response_id}.
 *
 * Source: spec "POST {api_url}/responses", "Events / Completion webhook" (GET returns the same object as the
 * webhook). Event names and shapes of the stream: the hosted Responses API's (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Sse } from "@effect/experimental"
import { HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { BoxServiceApi } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { completionWindowHeader, toJson } from "../../Domain/ModelResponse.js"
import { actingOrganization } from "../boxes/BoxAccess.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { ResponseEngine, type StreamEvent } from "../responses/ResponseEngine.js"
import { prepare } from "../responses/ResponseRequest.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import * as StoreOutage from "../state/StoreOutage.js"

const encoder = new TextEncoder()

/** One Responses event as a Server-Sent Event: `event: <type>` and `data: <the event as JSON>`. */
export const encodeEvent = (event: StreamEvent): Uint8Array =>
  encoder.encode(Sse.encoder.write({ _tag: "Event", event: event.type, id: undefined, data: JSON.stringify(event) }))

/**
 * A JSON answer (`application/json`) of `value`, as `HttpServerResponse.unsafeJson` makes it, with the text encoded by
 * `Buffer.from` (about 3 times faster than its `TextEncoder`).
 */
const jsonAnswer = (value: unknown, status: number) =>
  HttpServerResponse.uint8Array(Buffer.from(JSON.stringify(value), "utf8"), { status, contentType: "application/json" })

/**
 * The responses handlers. Keys that belong to no organization get 403; a failed state store is answered by
 * StoreOutage.ts (503 with `Retry-After`, or 500).
 */
export const layer = HandlerGroups.group(BoxServiceApi, "responses", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* ResponseEngine
    const config = yield* LocalServiceConfig
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const orgId = yield* actingOrganization(principal)
          const prepared = yield* prepare(payload, headers[completionWindowHeader])
          // The stored-bytes quota is checked by the engine as it stores the record (Quotas.ts).
          if (payload.background === true) {
            yield* Quotas.checkBackgroundResponses(config.quotas, yield* engine.backgroundInFlight(orgId))
            const accepted = yield* engine.background(principal, prepared)
            return jsonAnswer(toJson(accepted), 202)
          }
          if (payload.stream === true) {
            const events = yield* engine.stream(principal, prepared)
            return HttpServerResponse.stream(Stream.map(events, encodeEvent), {
              contentType: "text/event-stream",
              headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
            })
          }
          // The finished object, encoded by `toJson` (the schema's encoding, without its cost).
          return jsonAnswer(toJson(yield* engine.foreground(principal, prepared)), 200)
        }).pipe(Effect.catchTag("StoreError", StoreOutage.refuse)))
      .handle("retrieve", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          yield* actingOrganization(principal)
          return yield* engine.retrieve(principal, path.response_id)
        }).pipe(Effect.catchTag("StoreError", StoreOutage.refuse)))
  }))
