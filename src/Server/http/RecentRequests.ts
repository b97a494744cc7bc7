/**
 * The most recent `/v1` requests the service answered, for the inspection page (`GET /_local/` and the
 * `recent_requests` of `GET /_local/state`): when, method, path, status, the `Idempotency-Key` sent (never the API
 * key) and whether the answer was a replay, newest first, at most {@link capacity}. Recorded from the Node server's
 * own `request` events, so both serving paths record the same way.
 *
 * Source: docs/ASSUMPTIONS.md "Local service" (the inspection page).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { IdempotencyKeyHeader, IdempotentReplayedHeader } from "../../Contract/Headers.js"
import * as StartingAnswer from "./StartingAnswer.js"

/** How many requests are kept. */
export const capacity = 100

/** One answered request. `idempotency_key` is cut to 128 characters; `duration_ms` is whole milliseconds. */
export interface RecentRequest {
  readonly at: string
  readonly method: string
  readonly path: string
  readonly status: number
  readonly idempotency_key: string | null
  readonly replayed: boolean
  readonly duration_ms: number
}

/** The recent requests: `record` one, `list` them newest first. */
export class RecentRequests extends Context.Tag("boxkit/server/RecentRequests")<RecentRequests, {
  readonly record: (request: RecentRequest) => void
  readonly list: Effect.Effect<ReadonlyArray<RecentRequest>>
}>() {}

/** A ring of the last {@link capacity} requests. */
export const make = () => {
  const ring: Array<RecentRequest> = []
  let next = 0
  return RecentRequests.of({
    record: (request) => {
      ring[next] = request
      next = (next + 1) % capacity
    },
    list: Effect.sync(() => [...ring.slice(next), ...ring.slice(0, next)].reverse())
  })
}

/** A ring of recent requests, filled by nothing: {@link recordFrom} fills it from a Node server. */
export const layer: Layer.Layer<RecentRequests> = Layer.sync(RecentRequests, make)

/** True when headers given to `writeHead` (an object, or a flat list of names and values) mark a replay. */
const saysReplayed = (headers: unknown): boolean => {
  if (Array.isArray(headers)) {
    const flat = headers.flat()
    return flat.some((name, index) => index % 2 === 0 && String(name).toLowerCase() === replayedHeader && String(flat[index + 1]) === "true")
  }
  if (typeof headers !== "object" || headers === null) return false
  return Object.entries(headers).some(([name, value]) => name.toLowerCase() === replayedHeader && String(value) === "true")
}

const replayedHeader = IdempotentReplayedHeader

/**
 * Whether `response` answers with `Idempotent-Replayed: true`. Both serving paths pass their headers to `writeHead`,
 * where `getHeader` cannot see them, so they are read as they go through it.
 */
const watchReplayed = (response: ServerResponse): () => boolean => {
  let replayed = false
  const writeHead = response.writeHead
  response.writeHead = function(this: ServerResponse, ...args: Array<any>) {
    replayed = args.slice(1).some(saysReplayed)
    return (writeHead as (...args: Array<any>) => ServerResponse).apply(this, args)
  } as ServerResponse["writeHead"]
  return () => replayed || response.getHeader(replayedHeader) === "true"
}

/** The `/v1` request `source` as recorded once `response` has been sent. */
const recordOf = (
  source: IncomingMessage,
  response: ServerResponse,
  startedAt: number,
  finishedAt: number,
  replayed: boolean
): RecentRequest => {
  const url = source.url ?? "/"
  const queryAt = url.indexOf("?")
  const key = source.headers[IdempotencyKeyHeader]
  return {
    at: new Date(startedAt).toISOString(),
    method: source.method ?? "GET",
    path: queryAt < 0 ? url : url.slice(0, queryAt),
    status: response.statusCode,
    idempotency_key: typeof key === "string" ? key.slice(0, 128) : null,
    replayed,
    duration_ms: finishedAt - startedAt
  }
}

/** Records every `/v1` request `server` answers into {@link RecentRequests}, for as long as the scope lasts. */
export const recordFrom = (server: Server) =>
  Effect.gen(function*() {
    const recent = yield* RecentRequests
    // The service's clock (ServiceClock.ts): a virtual one when the service runs on it.
    const clock = yield* Effect.clock
    const listener = StartingAnswer.observing((source: IncomingMessage, response: ServerResponse) => {
      if (!(source.url ?? "").startsWith("/v1/")) return
      const startedAt = clock.unsafeCurrentTimeMillis()
      const replayed = watchReplayed(response)
      response.once("finish", () =>
        recent.record(recordOf(source, response, startedAt, clock.unsafeCurrentTimeMillis(), replayed())))
    })
    server.on("request", listener)
    yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", listener)))
  })
