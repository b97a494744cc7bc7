/**
 * One request of the toolkit's `HttpClient` (UndiciHttpClient.ts) answered with its whole body read: an undici
 * dispatch handler that keeps the body's chunks as they arrive and resumes the fiber once, and the answer as an
 * `HttpClientResponse` over the bytes read (what a response answers: `@effect/platform-node` 0.108
 * `NodeHttpClient.makeUndici`).
 *
 * Source: docs/decisions/0006-client-own-code-or-stock.md.
 *
 * @since 0.1.0
 */
import { Cookies, Headers, HttpClientError, type HttpClientRequest, HttpClientResponse, HttpIncomingMessage, UrlParams } from "@effect/platform"
import type * as Undici from "@effect/platform-node/Undici"
import { Effect, Inspectable, Option, Stream } from "effect"

/**
 * A deadline for the HTTP exchanges of a fiber: epoch milliseconds on the live clock (`Date.now()`), and the error an
 * exchange that reaches it fails with (the `cause` of a `RequestError`, or of the `ResponseError` of a body read).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Deadline {
  readonly atMillis: number
  readonly onExpire: () => unknown
}

type SourceHeaders = Undici.Dispatcher.ResponseData["headers"]
type Resume = (effect: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.RequestError>) => void

/**
 * One request in flight, settled once: the answer when its body has been read (or, when reading it failed after the
 * head, the answer carrying that failure); a `RequestError` when it fails before the head, or when the deadline passes
 * before the end. With `maxBytes` (UndiciHttpClient.readWhole), the answer once the body passes that many bytes (the
 * request aborted), and a deadline after the head answers with its error. {@link cancel} (interruption) aborts the
 * request, also while it waits for a connection.
 */
export class WholeExchange implements Undici.Dispatcher.DispatchHandler {
  private done = false
  private abortReason: Error | undefined = undefined
  private controller: Undici.Dispatcher.DispatchController | undefined = undefined
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  private statusCode = 0
  private headers: SourceHeaders = {}
  private chunks: Array<Buffer> = []
  /** Bytes of the body received so far. */
  private received = 0

  constructor(
    private readonly request: HttpClientRequest.HttpClientRequest,
    private readonly resume: Resume,
    /** The most bytes of the body kept; undefined: all of it. */
    private readonly maxBytes: number | undefined
  ) {}

  /** Sends the request on `dispatcher`, bounded by `deadline` (failing at once when it has passed). */
  start(dispatcher: Undici.Dispatcher, options: Undici.Dispatcher.DispatchOptions, deadline: Deadline | undefined) {
    if (deadline !== undefined) {
      const left = deadline.atMillis - Date.now()
      if (left <= 0) return this.fail(deadline.onExpire())
      this.timer = setTimeout(() => this.expire(deadline.onExpire()), left)
    }
    dispatcher.dispatch(options, this)
  }

  /** Interruption: the request is aborted, nothing more is handed over. */
  cancel(): void {
    this.settle()
    this.abort(new Error("The request was interrupted."))
  }

  onRequestStart(controller: Undici.Dispatcher.DispatchController): void {
    // Called again when undici sends the request again on another connection: nothing of an earlier try is kept.
    this.controller = controller
    this.statusCode = 0
    this.headers = {}
    this.chunks = []
    this.received = 0
    if (this.abortReason !== undefined) controller.abort(this.abortReason)
  }

  onResponseStart(_controller: unknown, statusCode: number, headers: SourceHeaders): void {
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
      // Past the limit: handed over with what was kept; the rest is never read.
      this.onResponseEnd()
      this.abort(new Error(`The answer's body is longer than ${this.maxBytes} bytes.`))
    }
  }

  onResponseEnd(): void {
    if (this.done) return
    this.answer(this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks), undefined)
  }

  onResponseError(_controller: unknown, error: Error): void {
    if (this.done) return
    if (this.statusCode === 0) this.fail(error)
    else this.answer(undefined, error)
  }

  /** The deadline passed: the request is aborted, and fails with `error` (an answer whose head is in and whose body is capped keeps its status). */
  private expire(error: unknown): void {
    this.timer = undefined
    if (this.done) return
    const answered = this.maxBytes !== undefined && this.statusCode !== 0
    this.done = true
    this.abort(new Error("The request's deadline passed."))
    this.done = false
    if (answered) this.answer(undefined, error)
    else this.fail(error)
  }

  private fail(cause: unknown): void {
    if (this.settle()) {
      this.resume(Effect.fail(new HttpClientError.RequestError({ request: this.request, reason: "Transport", cause })))
    }
  }

  private answer(body: Buffer | undefined, failure: unknown): void {
    if (!this.settle()) return
    const response = new WholeResponse(this.request, this.statusCode, this.headers, body, failure)
    this.chunks = []
    this.resume(Effect.succeed(response))
  }

  /** Marks the exchange settled and stops its timer; false when it already was. */
  private settle(): boolean {
    if (this.done) return false
    this.done = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    return true
  }

  private abort(reason: Error): void {
    this.abortReason ??= reason
    this.controller?.abort(reason)
  }
}

/** A body read that failed, as the platform's client reports it. */
const decodeError = (response: HttpClientResponse.HttpClientResponse, cause: unknown) =>
  new HttpClientError.ResponseError({ request: response.request, response, reason: "Decode", cause })

/** The body as text, as undici's `text()` reads it: UTF-8, a leading byte order mark skipped. */
const textOf = (body: Buffer): string =>
  body.toString("utf8", body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0)

/**
 * An answer whose body has been read: status, headers, and the body's bytes, or the failure that ended reading it
 * (every body read then fails with it, as a `ResponseError` of reason `Decode`).
 */
class WholeResponse extends Inspectable.Class implements HttpClientResponse.HttpClientResponse {
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  readonly [HttpClientResponse.TypeId]: HttpClientResponse.TypeId = HttpClientResponse.TypeId
  private cachedHeaders: Headers.Headers | undefined = undefined

  constructor(
    readonly request: HttpClientRequest.HttpClientRequest,
    readonly status: number,
    private readonly sourceHeaders: SourceHeaders,
    private readonly body: Buffer | undefined,
    private readonly failure: unknown
  ) {
    super()
  }

  get headers(): Headers.Headers {
    return this.cachedHeaders ??= Headers.fromInput(this.sourceHeaders as Record<string, string | ReadonlyArray<string>>)
  }

  get cookies(): Cookies.Cookies {
    const header = this.sourceHeaders["set-cookie"]
    return header === undefined ? Cookies.empty : Cookies.fromSetCookie(Array.isArray(header) ? header : [header])
  }

  get remoteAddress(): Option.Option<string> {
    return Option.none()
  }

  /** `f` of the body, or the body's failure; `f` throwing is a `Decode` failure too. */
  private read<A>(f: (body: Buffer) => A): Effect.Effect<A, HttpClientError.ResponseError> {
    if (this.body === undefined) return Effect.fail(decodeError(this, this.failure))
    try {
      return Effect.succeed(f(this.body))
    } catch (cause) {
      return Effect.fail(decodeError(this, cause))
    }
  }

  get text(): Effect.Effect<string, HttpClientError.ResponseError> {
    return this.read(textOf)
  }

  get json(): Effect.Effect<unknown, HttpClientError.ResponseError> {
    return this.read((body) => {
      const text = textOf(body)
      return text === "" ? null : JSON.parse(text) as unknown
    })
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpClientError.ResponseError> {
    return this.read((body) => body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer)
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpClientError.ResponseError> {
    return this.read((body) => UrlParams.fromInput(new URLSearchParams(textOf(body))))
  }

  get formData(): Effect.Effect<FormData, HttpClientError.ResponseError> {
    return Effect.flatMap(this.read((body) => new Response(new Uint8Array(body), { headers: this.headers })), (response) =>
      Effect.tryPromise({ try: () => response.formData(), catch: (cause) => decodeError(this, cause) }))
  }

  get stream(): Stream.Stream<Uint8Array, HttpClientError.ResponseError> {
    return this.body === undefined ? Stream.fail(decodeError(this, this.failure)) : Stream.make(new Uint8Array(this.body))
  }

  toJSON(): unknown {
    return HttpIncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpClientResponse",
      request: this.request.toJSON(),
      status: this.status
    })
  }
}
