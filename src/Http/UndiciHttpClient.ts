/**
 * The toolkit's own `HttpClient` over an undici `Dispatcher`: the same `HttpClient` interface as
 * `NodeHttpClient.layerUndici`, without the per-request machinery the toolkit does not need (an `http.client` span
 * with every header as an attribute, an `AbortController` (an `EventTarget`) per request, a `URL` object per request,
 * a memoized effect per body read, a finalizer or a `WeakSet` entry per request, a body stream for an answer read
 * whole). Its figures against raw `undici.request` and the platform's client: BENCHMARKS.md and
 * docs/decisions/0002-what-the-fast-paths-save.md.
 *
 * Behaviour:
 * - The URL is resolved as the platform's client does (`UrlParams.makeUrl`: the request's URL, URL params, hash; a
 *   plain absolute URL is split without a `URL` object, to the same origin and path); an invalid URL fails with
 *   `RequestError` reason `InvalidUrl`; a connection failure with reason `Transport`.
 * - {@link readWhole}: a caller that reads the whole body anyway (the contract client) can have the answer handed
 *   over with its body already read (one wait instead of two; sent with undici's `dispatch`, the body's chunks kept
 *   as they arrive, without a body stream). With a byte limit (webhook deliveries) at most that many bytes are kept
 *   and the connection is closed past it.
 * - Interrupting the fiber while it waits for the answer aborts the request (the socket is closed, so the server
 *   sees the client go away); interrupting it while it reads the body destroys the body (same effect).
 * - A body that is never read is destroyed when the response object is garbage collected, so its connection is
 *   freed (as the platform's client does).
 * - Trace propagation: when the calling fiber is inside a span, `traceparent` and `b3` are sent (as the platform's
 *   client does); no span of its own is made (the toolkit's operation spans carry the call's attributes).
 * - Deadline: when the calling fiber runs inside {@link withDeadline} (`Transport.call`, for each attempt), one
 *   plain timer bounds the exchange from sending the request until its body has been read (as text, JSON, bytes or
 *   form data); when it fires, the request is aborted and the wait in progress fails with the deadline's error as
 *   its `cause`. A body taken as a stream is not bounded (a stream outlives the attempt that opened it). Otherwise
 *   no timeouts of its own (undici's headers and body timeouts are off).
 *
 * The dispatcher: {@link makeAgent} (keep-alive, up to {@link defaultConnections} connections per origin, no
 * pipelining; undici itself is imported when the first request is sent, so a program that never sends one, e.g.
 * `boxkit serve` until its first webhook, starts without it) or any undici `Dispatcher` given as {@link Dispatcher}.
 *
 * Kept beside `NodeHttpClient.layerUndici` because it pays for itself (BENCHMARKS.md section 9,
 * docs/decisions/0006-client-own-code-or-stock.md); test/client/UndiciHttpClient.test.ts checks that both send and
 * read the same.
 *
 * Source: behaviour of `@effect/platform-node` 0.108 `NodeHttpClient.makeUndici`; BENCHMARKS.md sections 2 and 9.
 *
 * @since 0.1.0
 */
import { Headers, HttpClient, HttpClientError, HttpClientRequest, type HttpClientResponse, HttpTraceContext, UrlParams } from "@effect/platform"
import type { HttpBody } from "@effect/platform"
import * as NodeStream from "@effect/platform-node/NodeStream"
import type * as Undici from "@effect/platform-node/Undici"
import { Context, Effect, Exit, type Fiber, Layer } from "effect"
import { type AgentOptions, defaultConnections, makeAgent, type RequestDispatcher } from "./UndiciAgent.js"
import { AbortHandle, UndiciResponse } from "./UndiciResponse.js"

export type { AgentOptions, RequestDispatcher } from "./UndiciAgent.js"
export { defaultConnections, makeAgent } from "./UndiciAgent.js"

/**
 * A deadline for the HTTP exchanges of a fiber: epoch milliseconds on the live clock (`Date.now()`), and the error an
 * exchange that reaches it fails with (as the `cause` of a `RequestError` while waiting for the answer, or of a
 * `ResponseError` while reading the body). The request is aborted then. `Transport.call` sets one for each attempt
 * ({@link withDeadline}), so a plain timer bounds the attempt instead of a racing fiber.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Deadline {
  readonly atMillis: number
  readonly onExpire: () => unknown
}

/**
 * The deadline of each fiber that runs inside {@link withDeadline}. Keyed by the fiber object rather than held in a
 * `FiberRef`: setting a `FiberRef` copies all of the fiber's refs (twice for `Effect.locally`).
 * A fiber forked inside does not inherit it.
 */
const deadlines = new WeakMap<Fiber.RuntimeFiber<unknown, unknown>, Deadline>()

/**
 * The deadline of `fiber`'s HTTP exchanges, if it runs inside {@link withDeadline}.
 *
 * @since 0.1.0
 * @category Utils
 */
export const deadlineOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Deadline | undefined => deadlines.get(fiber)

/**
 * Runs `self` with `deadline` on the HTTP exchanges that the clients made by {@link make} run for it on the same
 * fiber (not on fibers it forks). The previous deadline is back when `self` ends, however it ends.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withDeadline = <A, E, R>(self: Effect.Effect<A, E, R>, deadline: Deadline): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const previous = deadlines.get(fiber)
    deadlines.set(fiber, deadline)
    return Effect.uninterruptibleMask((restore) =>
      Effect.matchCauseEffect(restore(self), {
        onFailure(cause) {
          restoreDeadline(fiber, previous)
          return Effect.failCause(cause)
        },
        onSuccess(value) {
          restoreDeadline(fiber, previous)
          return Effect.succeed(value)
        }
      })
    )
  })

/** Puts `fiber`'s deadline back to `previous`. (Hot-path helpers are module functions, not per-call closures.) */
function restoreDeadline(fiber: Fiber.RuntimeFiber<unknown, unknown>, previous: Deadline | undefined) {
  if (previous === undefined) deadlines.delete(fiber)
  else deadlines.set(fiber, previous)
}

/**
 * The mark of requests whose answers are handed over with their whole body read ({@link readWhole}): a property on
 * the request object (a `WeakSet` costs an entry per request and work for the garbage collector).
 */
const WholeBody: unique symbol = Symbol.for("boxkit/UndiciHttpClient/WholeBody")

/**
 * Marks `request` so that a client made by {@link make} reads the answer's whole body before handing the answer over
 * (one wait instead of two; the body's reads then answer at once, `stream` as one chunk). For callers that read the
 * whole body anyway (e.g. JSON endpoints); other `HttpClient`s ignore the mark. Returns `request`.
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
  ;(request as { [WholeBody]?: true | number })[WholeBody] = maxBytes === undefined ? true : Math.max(0, Math.floor(maxBytes))
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
export const honoursDeadline = (client: HttpClient.HttpClient.With<any, any>): boolean => deadlineClients.has(client)



/** The body of a request as undici takes it. */
const bodyOf = (body: HttpBody.HttpBody): Effect.Effect<Undici.Dispatcher.DispatchOptions["body"]> => {
  switch (body._tag) {
    case "Empty":
      return Effect.succeed(null)
    case "Uint8Array":
    case "Raw":
      return Effect.succeed(body.body as Uint8Array)
    case "FormData":
      return Effect.succeed(body.formData as Undici.FormData)
    case "Stream":
      return NodeStream.toReadable(body.stream)
  }
}


/**
 * One request in flight, settled once: by its answer, its failure (a `RequestError`), or its deadline. Interruption
 * ({@link cancel}) aborts it.
 */
abstract class Exchange {
  protected done = false
  readonly handle = new AbortHandle()

  constructor(
    protected readonly request: HttpClientRequest.HttpClientRequest,
    protected readonly resume: (
      effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>
    ) => void
  ) {}

  fail(cause: unknown): void {
    if (this.done) return
    this.done = true
    this.handle.disarm()
    this.resume(Effect.fail(new HttpClientError.RequestError({ request: this.request, reason: "Transport", cause })))
  }

  cancel(): void {
    this.done = true
    this.handle.abort()
  }
}

/** A request waiting for its answer's head (`request`; the body is then read as a stream). */
class SendWait extends Exchange {
  answer(error: Error | null | undefined, data: Undici.Dispatcher.ResponseData): void {
    if (error !== null && error !== undefined) return this.fail(error)
    if (this.done) {
      data.body.destroy()
      return
    }
    this.done = true
    this.handle.onExpire = undefined
    this.resume(Effect.succeed(
      new UndiciResponse(this.request, data.statusCode, data.headers, data.body, this.handle, undefined, undefined)
    ))
  }
}

/**
 * A request whose answer is handed over with its whole body read ({@link readWhole}), as an undici dispatch
 * handler: the body's chunks are kept as they arrive (no body stream, one resumption of the fiber). Settles once:
 * the answer when the body has been read (or, when reading it failed, the answer carrying that failure); a
 * `RequestError` when the request fails before the answer's head, or when the deadline passes before the end. With
 * `maxBytes`: the answer once the body passes that many bytes (the request is then aborted), and when the deadline
 * passes after the head, the answer carrying the deadline's error. Interruption aborts the request, also when it is
 * still waiting for a connection.
 */
class WholeExchange extends Exchange implements Undici.Dispatcher.DispatchHandler {
  private controller: Undici.Dispatcher.DispatchController | undefined = undefined
  private statusCode = 0
  private headers: Undici.Dispatcher.ResponseData["headers"] = {}
  private chunks: Array<Buffer> = []
  /** Bytes of the body received so far (counted only with `maxBytes`). */
  private received = 0

  constructor(
    request: HttpClientRequest.HttpClientRequest,
    resume: (effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>) => void,
    /** The most bytes of the body kept ({@link readWhole}); undefined: all of it. */
    private readonly maxBytes: number | undefined
  ) {
    super(request, resume)
    this.handle.on("abort", this.abortRequest.bind(this))
  }

  override fail(cause: unknown): void {
    // A read with `maxBytes` whose answer's head is in keeps its status: the answer is handed over, its body failing.
    if (this.maxBytes === undefined || this.statusCode === 0 || this.done) return super.fail(cause)
    this.done = true
    this.handle.disarm()
    this.chunks = []
    this.resume(Effect.succeed(
      new UndiciResponse(this.request, this.statusCode, this.headers, undefined, this.handle, undefined, cause)
    ))
  }

  private abortRequest(): void {
    this.controller?.abort(this.handle.reason instanceof Error ? this.handle.reason : new Error("The request was aborted."))
  }

  onRequestStart(controller: Undici.Dispatcher.DispatchController): void {
    // Called again when undici sends the request again on another connection: nothing of an earlier try is kept.
    this.controller = controller
    this.statusCode = 0
    this.headers = {}
    this.chunks = []
    this.received = 0
    if (this.handle.aborted) this.abortRequest()
  }

  onResponseStart(_controller: unknown, statusCode: number, headers: Undici.Dispatcher.ResponseData["headers"]): void {
    this.statusCode = statusCode
    this.headers = headers
  }

  onResponseData(_controller: unknown, chunk: Buffer): void {
    if (this.maxBytes === undefined) {
      this.chunks.push(chunk)
      return
    }
    const room = this.maxBytes - this.received
    if (room > 0) this.chunks.push(room >= chunk.length ? chunk : chunk.subarray(0, room))
    this.received += chunk.length
    if (this.received > this.maxBytes && !this.done) {
      // Past the limit: handed over with what was kept; the rest is never read (aborting closes the connection).
      this.onResponseEnd()
      this.controller?.abort(new Error(`The answer's body is longer than ${this.maxBytes} bytes.`))
    }
  }

  onResponseEnd(): void {
    if (this.done) return
    this.done = true
    this.handle.disarm()
    const body = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks)
    this.chunks = []
    this.resume(Effect.succeed(
      new UndiciResponse(this.request, this.statusCode, this.headers, undefined, this.handle, body, undefined)
    ))
  }

  onResponseError(_controller: unknown, error: Error): void {
    if (this.done) return
    // Aborted by the deadline (whose timer aborts before it fails the wait): the deadline's error is the cause.
    if (this.handle.aborted && this.handle.reason !== undefined) return this.fail(this.handle.reason)
    if (this.statusCode === 0) return this.fail(error)
    this.done = true
    this.handle.disarm()
    this.chunks = []
    this.resume(Effect.succeed(
      new UndiciResponse(this.request, this.statusCode, this.headers, undefined, this.handle, undefined, error)
    ))
  }
}

/**
 * One request on `dispatcher`: answered with the response head, or with the whole body read when `whole`.
 * Interruption aborts it; so does the `deadline` (failing with a `RequestError` whose `cause` is the deadline's
 * error), whose timer then runs on until the body is read.
 */
const send = (
  dispatcher: RequestDispatcher,
  request: HttpClientRequest.HttpClientRequest,
  url: { readonly origin: string; readonly path: string },
  headers: Headers.Headers,
  body: Undici.Dispatcher.DispatchOptions["body"],
  deadline: Deadline | undefined,
  whole: boolean,
  maxBytes: number | undefined
) =>
  Effect.async<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>((resume) => {
    const wait = whole ? new WholeExchange(request, resume, maxBytes) : new SendWait(request, resume)
    if (deadline !== undefined) {
      if (!wait.handle.arm(deadline)) return wait.fail(deadline.onExpire())
      wait.handle.onExpire = wait
    }
    const options = {
      method: request.method,
      origin: url.origin,
      path: url.path,
      headers,
      body,
      // `request` only: `dispatch` has no signal (the exchange aborts through its controller).
      signal: wait.handle,
      // Timeouts belong to the caller (Transport.call bounds every attempt): 0 turns undici's own off, and with them
      // the timer undici makes per request.
      headersTimeout: 0,
      bodyTimeout: 0
    }
    if (wait instanceof WholeExchange) dispatcher.dispatch(options, wait)
    else dispatcher.request(options, (error, data) => wait.answer(error, data))
    return Effect.sync(() => wait.cancel())
  })

/** The origin (`new URL(prefix).origin`) of each `scheme://authority` prefix seen (a few per client). */
const origins = new Map<string, string>()

/** `scheme://authority` then a path of characters `new URL` keeps as they are, without dot segments or `?`/`#`. */
const simpleUrl = /^(https?:\/\/[^/?#\\]+)(\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*)$/

/**
 * Where a request goes: undici's `origin` and `path`. A plain absolute URL (the usual case) is split without a `URL`
 * object (its origin parsed once per prefix), and the split is remembered for the next request to the same URL (the
 * last 4,096 URLs); anything else goes through `UrlParams.makeUrl` as in the platform's client, so the result is
 * the same.
 */
const target = (request: HttpClientRequest.HttpClientRequest) => {
  if (request.urlParams.length === 0 && request.hash._tag === "None") {
    const known = targets.get(request.url)
    if (known !== undefined) return known
    const found = splitSimpleUrl(request.url)
    if (found !== undefined) {
      if (targets.size >= 4096) targets.clear()
      targets.set(request.url, found)
      return found
    }
  }
  const url = UrlParams.makeUrl(request.url, request.urlParams, request.hash)
  return url._tag === "Left" ? url.left : { origin: url.right.origin, path: url.right.pathname + url.right.search + url.right.hash }
}

/** The targets of the plain absolute URLs seen last (a client calls the same few URLs again and again). */
const targets = new Map<string, { readonly origin: string; readonly path: string }>()

/** `origin` and `path` of a plain absolute URL ({@link simpleUrl}); undefined for any other URL. */
const splitSimpleUrl = (url: string): { readonly origin: string; readonly path: string } | undefined => {
  const match = simpleUrl.exec(url)
  if (match === null || /\/\.\.?(\/|$)/.test(match[2])) return undefined
  let origin = origins.get(match[1])
  if (origin === undefined && URL.canParse(match[1])) {
    origin = new URL(match[1]).origin
    if (origins.size < 1024) origins.set(match[1], origin)
  }
  if (origin !== undefined) return { origin, path: match[2] }
  return undefined
}

/** `f` of the request `effect` gives (directly when the effect is a successful `Exit`, without a `flatMap`). */
const withRequest = <E, R>(
  effect: Effect.Effect<HttpClientRequest.HttpClientRequest, E, R>,
  f: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>
) => Exit.isExit(effect) && Exit.isSuccess(effect) ? f(effect.value as HttpClientRequest.HttpClientRequest) : Effect.flatMap(effect, f)

/**
 * An `HttpClient` that sends every request through `dispatcher` (see the module's "Behaviour" for what it does per
 * request). Fails with `RequestError` (reason `InvalidUrl` for a URL it cannot resolve, `Transport` for a connection
 * or a write that fails) and `ResponseError` for a body that cannot be read; it never fails on a status. Source:
 * docs/decisions/0002-what-the-fast-paths-save.md.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (dispatcher: RequestDispatcher): HttpClient.HttpClient => {
  const client = HttpClient.makeWith<HttpClientError.HttpClientError, never, HttpClientError.HttpClientError, never>(
    (requestEffect) =>
      // `execute(request)` hands over `Effect.succeed(request)`, which is an `Exit`: its request is taken as it is.
      withRequest(requestEffect, (request) =>
        Effect.withFiberRuntime<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>((fiber) => {
          const url = target(request)
          if (url instanceof Error) {
            return Effect.fail(new HttpClientError.RequestError({ request, reason: "InvalidUrl", cause: url }))
          }
          const span = fiber.currentSpan
          const headers = span !== undefined && span._tag === "Span"
            ? Headers.merge(request.headers, HttpTraceContext.toHeaders(span))
            : request.headers
          const deadline = deadlines.get(fiber)
          const mark = (request as { [WholeBody]?: true | number })[WholeBody]
          const whole = mark !== undefined
          const maxBytes = typeof mark === "number" ? mark : undefined
          const body = request.body
          return body._tag === "Empty" || body._tag === "Uint8Array" || body._tag === "Raw"
            ? send(dispatcher, request, url, headers, body._tag === "Empty" ? null : body.body as Uint8Array, deadline, whole, maxBytes)
            : Effect.flatMap(bodyOf(body), (converted) => send(dispatcher, request, url, headers, converted, deadline, whole, maxBytes))
        })),
    Effect.succeed as HttpClient.HttpClient.Preprocess<never, never>
  )
  deadlineClients.add(client)
  return client
}

/**
 * The undici dispatcher the toolkit's `HttpClient` uses (any undici `Dispatcher`, or {@link makeAgent}'s).
 *
 * @since 0.1.0
 * @category Services
 */
export class Dispatcher extends Context.Tag("boxkit/UndiciHttpClient/Dispatcher")<Dispatcher, RequestDispatcher>() {}

/**
 * The `HttpClient` over the {@link Dispatcher} in context.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerWithoutDispatcher: Layer.Layer<HttpClient.HttpClient, never, Dispatcher> = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(Dispatcher, make)
)

/**
 * The `HttpClient` over its own {@link makeAgent} (closed with the layer).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerWith = (options: AgentOptions = {}): Layer.Layer<HttpClient.HttpClient> =>
  layerWithoutDispatcher.pipe(Layer.provide(Layer.scoped(Dispatcher, makeAgent(options))))

/** The `HttpClient` over its own keep-alive agent with the default options. @since 0.1.0 @category Layers */
export const layer: Layer.Layer<HttpClient.HttpClient> = layerWith()
