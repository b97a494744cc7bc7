/**
 * The toolkit's own `HttpClient` over undici, for the requests whose answers the caller reads whole (the contract's
 * JSON calls, webhook deliveries: {@link readWhole}): undici's `dispatch` with the body's chunks kept as they arrive
 * and the answer handed over once (UndiciExchange.ts), without the platform client's span, `AbortController`,
 * finalizer and body stream per request. Every other request goes to the platform's client
 * (`NodeHttpClient.makeUndici`) over the same agent, unbounded by the deadline.
 *
 * A request read whole: its URL resolved as the platform's client does (`UrlParams.makeUrl`; `RequestError` reason
 * `InvalidUrl`, a connection failure reason `Transport`); interrupting the fiber aborts it (the socket is closed);
 * `traceparent` and `b3` sent when the calling fiber is inside a span (no span of its own); inside
 * {@link withDeadline}, one plain timer bounds it from sending until its body is read, then aborts it with the
 * deadline's error as `cause` (undici's own timeouts are off).
 *
 * The agent: keep-alive, up to 128 connections per origin, no pipelining (a slow answer never holds up another);
 * undici imported when the first request is sent (`boxkit serve` starts without it); closed with the layer.
 *
 * Kept beside `NodeHttpClient.layerUndici` while it pays for itself (BENCHMARKS.md section 9,
 * docs/decisions/0006-client-own-code-or-stock.md); test/client/UndiciHttpClient.test.ts checks that both send and
 * read the same.
 *
 * @since 0.1.0
 */
import { Headers, HttpClient, HttpClientError, type HttpClientRequest, type HttpClientResponse, HttpTraceContext, UrlParams } from "@effect/platform"
import type * as Undici from "@effect/platform-node/Undici"
import { Effect, type Fiber, Layer, type Scope } from "effect"
import { type Deadline, WholeExchange } from "./UndiciExchange.js"

export type { Deadline } from "./UndiciExchange.js"

/**
 * The deadline of each fiber that runs inside {@link withDeadline}. Keyed by the fiber object rather than held in a
 * `FiberRef` (setting one copies all of the fiber's refs, twice for `Effect.locally`). Forked fibers do not inherit it.
 */
const deadlines = new WeakMap<Fiber.RuntimeFiber<unknown, unknown>, Deadline>()

/**
 * Runs `self` with `deadline` on the exchanges read whole ({@link readWhole}) that clients made by {@link make} run
 * for it on the same fiber (not on fibers it forks). The previous deadline is back when `self` ends, however it ends.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withDeadline = <A, E, R>(self: Effect.Effect<A, E, R>, deadline: Deadline): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const previous = deadlines.get(fiber)
    deadlines.set(fiber, deadline)
    return Effect.ensuring(self, Effect.sync(() => {
      if (previous === undefined) deadlines.delete(fiber)
      else deadlines.set(fiber, previous)
    }))
  })

/** The mark of requests read whole: a property on the request object (a `WeakSet` costs the collector more). */
const WholeBody: unique symbol = Symbol.for("boxkit/UndiciHttpClient/WholeBody")

type Marked = HttpClientRequest.HttpClientRequest & { [WholeBody]?: number | true }

/**
 * Marks `request` so that a client made by {@link make} reads the answer's whole body before handing the answer over
 * (one wait instead of two; every body read then answers at once, `stream` as one chunk). Other `HttpClient`s ignore
 * the mark. Returns `request`.
 *
 * With `maxBytes` (a count of bytes), at most the first `maxBytes` bytes of the body are kept: a longer body is not
 * read further, the answer is handed over with those bytes and the request is aborted (its connection closed). Once
 * the answer's head is in, the {@link withDeadline} deadline no longer fails the request: the answer is handed over
 * and reading its body fails with the deadline's error (the status stands). Used for webhook deliveries, whose
 * receiver's answer counts by its status (docs/ASSUMPTIONS.md "Webhooks").
 *
 * @since 0.1.0
 * @category Utils
 */
export const readWhole = (
  request: HttpClientRequest.HttpClientRequest,
  maxBytes?: number
): HttpClientRequest.HttpClientRequest => {
  ;(request as Marked)[WholeBody] = maxBytes === undefined ? true : Math.max(0, Math.floor(maxBytes))
  return request
}

/** The clients made by {@link make} (they honour {@link withDeadline}); the client objects are left as made. */
const deadlineClients = new WeakSet<object>()

/**
 * True when `client` is one made by {@link make} (unwrapped), so it honours {@link withDeadline}.
 *
 * @since 0.1.0
 * @category Guards
 */
export const honoursDeadline = (client: object): boolean => deadlineClients.has(client)

/**
 * undici's agent, made (and undici imported) when the first request is sent, and the platform's client over it, made
 * when the first request that is not read whole is sent.
 */
class Agent {
  dispatcher: Undici.Dispatcher | undefined = undefined
  platform: HttpClient.HttpClient | undefined = undefined
  private loading: Promise<unknown> | undefined = undefined
  private closed = false

  /** Waits until `loaded` is; fails as `request`'s `RequestError` when loading fails or the agent is closed. */
  private wait<A>(request: HttpClientRequest.HttpClientRequest, loaded: () => Promise<A>) {
    return Effect.tryPromise({
      try: loaded,
      catch: (cause) => new HttpClientError.RequestError({ request, reason: "Transport", cause })
    })
  }

  ready(request: HttpClientRequest.HttpClientRequest): Effect.Effect<unknown, HttpClientError.RequestError> {
    return this.wait(request, () =>
      this.loading ??= import("@effect/platform-node/Undici").then((undici) => {
        if (this.closed) throw new Error("The HTTP client's agent is closed.")
        this.dispatcher = new undici.Agent({ connections: 128, pipelining: 1 })
      }))
  }

  /** The platform's client, made on first use (after {@link ready}). */
  platformClient(request: HttpClientRequest.HttpClientRequest) {
    if (this.platform !== undefined) return this.platform.execute(request)
    return Effect.flatMap(
      this.wait(request, () => import("@effect/platform-node/NodeHttpClient")),
      (module) => (this.platform ??= module.makeUndici(this.dispatcher!)).execute(request)
    )
  }

  /** Destroys the agent's connections (when it was made); later requests fail. */
  async close(): Promise<void> {
    this.closed = true
    await this.loading?.catch(() => undefined)
    await this.dispatcher?.destroy()
  }
}

/** Sends `request` on `agent` for `fiber` (see the module's "Behaviour"). */
const execute = (
  agent: Agent,
  request: HttpClientRequest.HttpClientRequest,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> => {
  const dispatcher = agent.dispatcher
  if (dispatcher === undefined) return Effect.flatMap(agent.ready(request), () => execute(agent, request, fiber))
  const mark = (request as Marked)[WholeBody]
  const body = request.body
  if (mark === undefined || (body._tag !== "Empty" && body._tag !== "Uint8Array")) return agent.platformClient(request)
  const url = UrlParams.makeUrl(request.url, request.urlParams, request.hash)
  if (url._tag === "Left") {
    return Effect.fail(new HttpClientError.RequestError({ request, reason: "InvalidUrl", cause: url.left }))
  }
  const span = fiber.currentSpan
  const options: Undici.Dispatcher.DispatchOptions = {
    method: request.method,
    origin: url.right.origin,
    path: url.right.pathname + url.right.search + url.right.hash,
    headers: span?._tag === "Span" ? Headers.merge(request.headers, HttpTraceContext.toHeaders(span)) : request.headers,
    body: body._tag === "Empty" ? null : body.body,
    // Timeouts belong to the caller (the deadline): 0 turns undici's own off, and with them its timer per request.
    headersTimeout: 0,
    bodyTimeout: 0
  }
  const deadline = deadlines.get(fiber)
  return Effect.async((resume) => {
    const exchange = new WholeExchange(request, resume, mark === true ? undefined : mark)
    exchange.start(dispatcher, options, deadline)
    return Effect.sync(() => exchange.cancel())
  })
}

/**
 * An `HttpClient` over its own keep-alive agent, closed with the scope (see the module's "Behaviour"). Fails with
 * `RequestError` (reason `InvalidUrl` for a URL it cannot resolve, `Transport` for a connection or a write that
 * fails) and `ResponseError` for a body that cannot be read; never on a status.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: Effect.Effect<HttpClient.HttpClient, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(Effect.sync(() => new Agent()), (agent) => Effect.promise(() => agent.close())),
  (agent) => {
    const client = HttpClient.makeWith<HttpClientError.HttpClientError, never, HttpClientError.HttpClientError, never>(
      (requestEffect) =>
        Effect.flatMap(requestEffect, (request) => Effect.withFiberRuntime((fiber) => execute(agent, request, fiber))),
      Effect.succeed
    )
    deadlineClients.add(client)
    return client
  }
)

/** The `HttpClient` over its own keep-alive agent ({@link make}). @since 0.1.0 @category Layers */
export const layer: Layer.Layer<HttpClient.HttpClient> = Layer.scoped(HttpClient.HttpClient, make)
