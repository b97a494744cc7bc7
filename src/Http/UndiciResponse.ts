/**
 * An exchange's abort handle and deadline timer, and the answer of the toolkit's `HttpClient` as an
 * `HttpClientResponse` over undici's response (UndiciHttpClient.ts).
 *
 * @since 0.1.0
 */
import { Cookies, Headers, HttpClientError, type HttpClientRequest, HttpClientResponse, HttpIncomingMessage, UrlParams } from "@effect/platform"
import * as NodeStream from "@effect/platform-node/NodeStream"
import type * as Undici from "@effect/platform-node/Undici"
import { Effect, Inspectable, Option, Stream } from "effect"
import type { Deadline } from "./UndiciHttpClient.js"

/**
 * The abort handle of one exchange, and its deadline timer. undici takes an `EventEmitter`-like signal
 * (`on`/`once`/`removeListener`, `aborted`, `reason`), which costs far less than an `AbortController` (an
 * `EventTarget`). Aborted on interruption and when the {@link Deadline} passes; once the answer's head has arrived,
 * aborting destroys the body. The wait in progress (sending, or reading the body) registers `onExpire` to fail at
 * once when the deadline passes.
 */
export class AbortHandle {
  aborted = false
  reason: unknown = undefined
  private listener: (() => void) | undefined = undefined
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  /** The wait in progress, failed when the deadline passes. */
  onExpire: { fail(error: unknown): void } | undefined = undefined

  on(_event: "abort", listener: () => void): this {
    this.listener = listener
    return this
  }

  once(_event: "abort", listener: () => void): this {
    this.listener = listener
    return this
  }

  addListener(_event: "abort", listener: () => void): this {
    this.listener = listener
    return this
  }

  removeListener(_event: "abort", listener: () => void): this {
    if (this.listener === listener) this.listener = undefined
    return this
  }

  abort(reason?: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.disarm()
    const listener = this.listener
    this.listener = undefined
    listener?.()
  }

  /** Starts the deadline's timer; false when the deadline has already passed. */
  arm(deadline: Deadline): boolean {
    const left = deadline.atMillis - Date.now()
    if (left <= 0) return false
    this.timer = setTimeout(() => {
      this.timer = undefined
      const error = deadline.onExpire()
      const onExpire = this.onExpire
      this.onExpire = undefined
      this.abort(error)
      onExpire?.fail(error)
    }, left)
    return true
  }

  /** Stops the deadline's timer (the exchange is over, or no longer bounded). */
  disarm(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    this.onExpire = undefined
  }
}

/** Frees the connection of a response whose body was never read, once the response is garbage collected. */
const unreadBodies = new FinalizationRegistry<Undici.Dispatcher.ResponseData["body"]>((body) => {
  body.destroy()
})

export const decodeError = (response: HttpClientResponse.HttpClientResponse, cause: unknown) =>
  new HttpClientError.ResponseError({ request: response.request, response, reason: "Decode", cause })

/**
 * A response over undici: status and headers, and either the body stream (`request`) or the whole body read before
 * the answer was handed over ({@link readWhole}: `whole`, or `wholeError` when reading it failed). Every body read
 * of a stream is interruptible (interruption destroys the body).
 */
export class UndiciResponse extends Inspectable.Class implements HttpClientResponse.HttpClientResponse {
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  readonly [HttpClientResponse.TypeId]: HttpClientResponse.TypeId = HttpClientResponse.TypeId
  private cachedHeaders: Headers.Headers | undefined
  private cachedCookies: Cookies.Cookies | undefined
  private textBody: Promise<string> | undefined
  private registered: boolean
  private wholeText: string | undefined = undefined

  constructor(
    readonly request: HttpClientRequest.HttpClientRequest,
    readonly status: number,
    private readonly sourceHeaders: Undici.Dispatcher.ResponseData["headers"],
    private readonly body: Undici.Dispatcher.ResponseData["body"] | undefined,
    private readonly handle: AbortHandle,
    private readonly whole: Buffer | undefined,
    private readonly wholeError: unknown
  ) {
    super()
    // A body read whole needs no finalizer (registering one costs the garbage collector work).
    this.registered = body !== undefined
    if (body !== undefined) {
      body.on("error", ignoreError)
      unreadBodies.register(this, body, this)
    }
  }

  get headers(): Headers.Headers {
    return this.cachedHeaders ??= Headers.fromInput(this.sourceHeaders as Record<string, string | ReadonlyArray<string>>)
  }

  get cookies(): Cookies.Cookies {
    if (this.cachedCookies !== undefined) return this.cachedCookies
    const header = this.sourceHeaders["set-cookie"]
    return this.cachedCookies = header === undefined
      ? Cookies.empty
      : Cookies.fromSetCookie(Array.isArray(header) ? header : [header])
  }

  get remoteAddress(): Option.Option<string> {
    return Option.none()
  }

  /** The body is being read: the finalizer is no longer needed. */
  private claim() {
    if (this.registered) {
      this.registered = false
      unreadBodies.unregister(this)
    }
  }

  /** Reads the body with `start`; the end of the exchange (its deadline timer stops). Interruption aborts it. */
  private read<A>(start: () => Promise<A>): Effect.Effect<A, HttpClientError.ResponseError> {
    return Effect.async<A, HttpClientError.ResponseError>((resume) => {
      this.claim()
      const wait = new BodyWait(this, this.handle, resume)
      if (this.handle.aborted && this.handle.reason !== undefined) return wait.fail(this.handle.reason)
      this.handle.onExpire = wait
      start().then((value) => wait.succeed(value), (cause) => wait.fail(cause))
      return Effect.sync(() => wait.cancel())
    })
  }

  get text(): Effect.Effect<string, HttpClientError.ResponseError> {
    if (this.whole !== undefined) {
      // As undici's `text()`: UTF-8, a leading byte order mark skipped.
      const start = this.whole.length > 2 && this.whole[0] === 0xef && this.whole[1] === 0xbb && this.whole[2] === 0xbf
        ? 3
        : 0
      return Effect.succeed(this.wholeText ??= this.whole.toString("utf8", start))
    }
    if (this.wholeError !== undefined) return Effect.fail(decodeError(this, this.wholeError))
    return this.read(() => this.textBody ??= this.body!.text())
  }

  get json(): Effect.Effect<unknown, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) => {
      try {
        return Effect.succeed(text === "" ? null : JSON.parse(text) as unknown)
      } catch (cause) {
        return Effect.fail(decodeError(this, cause))
      }
    })
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpClientError.ResponseError> {
    if (this.whole !== undefined) {
      const whole = this.whole
      return Effect.succeed(whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength) as ArrayBuffer)
    }
    if (this.wholeError !== undefined) return Effect.fail(decodeError(this, this.wholeError))
    return this.read(() => this.body!.arrayBuffer())
  }

  get formData(): Effect.Effect<FormData, HttpClientError.ResponseError> {
    if (this.whole !== undefined) {
      const response = new Response(new Uint8Array(this.whole), { headers: { "content-type": String(this.sourceHeaders["content-type"] ?? "") } })
      return this.read(() => response.formData())
    }
    if (this.wholeError !== undefined) return Effect.fail(decodeError(this, this.wholeError))
    return this.read(() => this.body!.formData() as Promise<FormData>)
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpClientError.ResponseError> {
    return Effect.flatMap(this.text, (text) => {
      try {
        return Effect.succeed(UrlParams.fromInput(new URLSearchParams(text)))
      } catch (cause) {
        return Effect.fail(decodeError(this, cause))
      }
    })
  }

  get stream(): Stream.Stream<Uint8Array, HttpClientError.ResponseError> {
    if (this.whole !== undefined) return Stream.make(new Uint8Array(this.whole))
    if (this.wholeError !== undefined) return Stream.fail(decodeError(this, this.wholeError))
    this.claim()
    this.handle.disarm()
    return NodeStream.fromReadable(() => this.body!, (cause) => decodeError(this, cause))
  }

  toJSON(): unknown {
    return HttpIncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpClientResponse",
      request: this.request.toJSON(),
      status: this.status
    })
  }
}

export const ignoreError = () => {}

/** A body read in progress: settles once (success, failure, deadline), then stops the exchange's timer. */
export class BodyWait<A> {
  private done = false
  constructor(
    private readonly response: UndiciResponse,
    private readonly handle: AbortHandle,
    private readonly resume: (effect: Effect.Effect<A, HttpClientError.ResponseError>) => void
  ) {}

  succeed(value: A): void {
    if (this.done) return
    this.done = true
    this.handle.disarm()
    this.resume(Effect.succeed(value))
  }

  fail(cause: unknown): void {
    if (this.done) return
    this.done = true
    this.handle.disarm()
    this.resume(Effect.fail(decodeError(this.response, cause)))
  }

  cancel(): void {
    this.done = true
    this.handle.abort()
  }
}
