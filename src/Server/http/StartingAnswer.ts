/**
 * The answer of a service that listens but cannot serve yet. The Node server listens as soon as the service starts
 * (so that its address is known), while the state store opens and migrates; a request that arrives in between would
 * find no handler and wait forever. Until a serving path attaches its handler, every request is answered 503
 * `server_error` with `Retry-After: 1` (the spec tells clients to retry a 503, honouring the header), so no request is
 * held, on any store and on both serving paths.
 *
 * The starting answer is the server's first `request` listener. Once another listener that answers (not one marked
 * {@link observing}, such as the inspection page's recorder) is attached, it steps aside: the first request after
 * that removes it, and from then on it costs nothing.
 *
 * Source: spec "Errors" rule 2 (503: retry with backoff, honouring `Retry-After`); docs/ASSUMPTIONS.md "Serving".
 *
 * @since 0.1.0
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import * as ApiError from "../../ApiError.js"

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void

/** Listeners that only observe requests (they never answer one). */
const observers = new WeakSet<Function>()

/** Marks `listener` as one that observes requests without answering them; returns it. */
export const observing = <L extends RequestListener>(listener: L): L => {
  observers.add(listener)
  return listener
}

/** Seconds a client is told to wait before it retries a request refused while the service starts. */
export const retryAfterSeconds = 1

const body = JSON.stringify(ApiError.toEnvelope(ApiError.make.unavailable(
  "The service is starting. Retry after the Retry-After delay."
)))

/**
 * Makes `server` answer 503 with `Retry-After` (and close the connection) until a listener that answers requests is
 * attached; returns `server`.
 */
export const answerWhileStarting = <S extends Server>(server: S): S => {
  const starting: RequestListener = (request, response) => {
    const answering = server.listeners("request").some((listener) => listener !== starting && !observers.has(listener))
    if (answering) {
      server.off("request", starting)
      return
    }
    request.resume()
    response.writeHead(503, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "retry-after": String(retryAfterSeconds),
      connection: "close"
    })
    response.end(body)
  }
  server.on("request", starting)
  return server
}
