/**
 * The request object of the local service's Node handler: an `HttpServerRequest` over Node's `IncomingMessage` whose
 * body is read once, by the request pipeline, and then answered from memory (`arrayBuffer`, `text`, `json`,
 * `urlParamsBody`, `stream`) to the contract's decoders and handlers.
 *
 * Per request it reads Node's header object once (Node builds it lazily on first access) and allocates nothing else
 * until asked; it is the one request object of the request: no wrapper is made when the body arrives.
 *
 * Source: docs/decisions/0002-what-the-fast-paths-save.md (the body read once, no repeated header copies); ../shared/notes/effect-3.22.md
 * ("Reading the body twice").
 *
 * @since 0.1.0
 */
import {
  Cookies,
  type Headers,
  HttpIncomingMessage,
  type HttpMethod,
  HttpServerError,
  HttpServerRequest,
  UrlParams
} from "@effect/platform"
import { Effect, Inspectable, Option, Stream } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { MalformedJsonBody, notUtf8Reason } from "../ErrorResponse.js"

const emptyBody = new Uint8Array(0)

/** The UTF-8 text of a body, without a leading byte order mark (as `TextDecoder` reads it). */
export const bodyText = (bytes: Uint8Array): string => {
  if (bytes.byteLength === 0) return ""
  const text = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString(
    "utf8"
  )
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

const utf8Decoder = new TextDecoder("utf-8", { fatal: true })

/**
 * The text of a JSON body, without a leading byte order mark; throws {@link MalformedJsonBody} ({@link notUtf8Reason})
 * when the bytes are not UTF-8, instead of reading U+FFFD in their place (the request pipeline refuses such a body
 * first, naming its field; this keeps every JSON read strict). Source: docs/ASSUMPTIONS.md "Text fields".
 *
 * @since 0.1.0
 * @category body
 */
export const jsonBodyText = (bytes: Uint8Array): string => {
  if (bytes.byteLength === 0) return ""
  try {
    return utf8Decoder.decode(bytes)
  } catch {
    throw new MalformedJsonBody({ reason: notUtf8Reason })
  }
}

/**
 * The JSON value of a body: `null` for an empty body; a body that is not UTF-8 or not JSON dies with
 * {@link MalformedJsonBody} (ErrorResponse.ts answers it with a 400 that does not quote the body).
 *
 * @since 0.1.0
 * @category body
 */
export const parseJsonBody = (bytes: Uint8Array): Effect.Effect<unknown> => {
  try {
    const text = jsonBodyText(bytes)
    return Effect.succeed(text === "" ? null : JSON.parse(text) as unknown)
  } catch (error) {
    return Effect.die(error instanceof MalformedJsonBody ? error : new MalformedJsonBody({ reason: (error as Error).message }))
  }
}

/**
 * One request of the Node handler. `headers` is Node's header object (lowercase names), read once. The body is set
 * by the request pipeline with {@link LocalRequest.setBody} once it is read; before that, reading it here fails with
 * a `RequestError` (the pipeline always reads it first).
 */
export class LocalRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  readonly method: HttpMethod.HttpMethod
  private body: Uint8Array | undefined
  private bodyAsText: string | undefined
  private parsedCookies: Record<string, string> | undefined

  constructor(
    /** Node's request. */
    readonly source: IncomingMessage,
    /** Node's response of this request. */
    readonly response: ServerResponse,
    readonly url: string,
    readonly headers: Headers.Headers,
    private readonly remoteAddressOverride?: string,
    body?: Uint8Array
  ) {
    super()
    this.method = source.method as HttpMethod.HttpMethod
    this.body = body
  }

  /** A request of Node's server: `headers` read once from `source`. */
  static fromNode(source: IncomingMessage, response: ServerResponse): LocalRequest {
    return new LocalRequest(source, response, source.url ?? "/", source.headers as Headers.Headers)
  }

  /** Hands the body read by the pipeline to every later reader. */
  setBody(bytes: Uint8Array): void {
    this.body = bytes
    this.bodyAsText = undefined
  }

  /** The body bytes, once read (undefined before). */
  get bodyBytes(): Uint8Array | undefined {
    return this.body
  }

  get originalUrl(): string {
    return this.source.url ?? this.url
  }

  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket?.remoteAddress)
  }

  get cookies(): Record<string, string> {
    return (this.parsedCookies ??= Cookies.parseHeader(this.headers.cookie ?? ""))
  }

  private unread<A>(): Effect.Effect<A, HttpServerError.RequestError> {
    return Effect.fail(
      new HttpServerError.RequestError({ request: this, reason: "Decode", description: "the body was not read yet" })
    )
  }

  private readText(): string {
    return (this.bodyAsText ??= bodyText(this.body ?? emptyBody))
  }

  /** The body as text, now (empty before the body is read). */
  textNow(): string {
    return this.readText()
  }

  /**
   * The body as JSON, now: `null` when empty; throws {@link MalformedJsonBody} when it is not UTF-8 or not JSON (as
   * {@link json} dies with it).
   */
  jsonNow(): unknown {
    const text = jsonBodyText(this.body ?? emptyBody)
    if (text === "") return null
    try {
      return JSON.parse(text) as unknown
    } catch (error) {
      throw new MalformedJsonBody({ reason: (error as Error).message })
    }
  }

  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    return this.body === undefined ? this.unread() : Effect.sync(() => this.readText())
  }

  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    const body = this.body
    return body === undefined ? this.unread() : Effect.suspend(() => parseJsonBody(body))
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.flatMap(this.text, (text) => Effect.sync(() => UrlParams.fromInput(new URLSearchParams(text))))
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    const bytes = this.body
    if (bytes === undefined) return this.unread()
    return Effect.sync(() => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
  }

  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return this.body === undefined ? Stream.fromEffect(this.unread()) : Stream.succeed(this.body)
  }

  get multipart(): HttpServerRequest.HttpServerRequest["multipart"] {
    return Effect.dieMessage("multipart bodies are not accepted by the local service")
  }

  get multipartStream(): HttpServerRequest.HttpServerRequest["multipartStream"] {
    return Stream.dieMessage("multipart bodies are not accepted by the local service")
  }

  get upgrade(): HttpServerRequest.HttpServerRequest["upgrade"] {
    return Effect.fail(
      new HttpServerError.RequestError({ request: this, reason: "Decode", description: "not an upgradeable request" })
    )
  }

  modify(options: { readonly url?: string; readonly headers?: Headers.Headers; readonly remoteAddress?: string }) {
    return new LocalRequest(
      this.source,
      this.response,
      options.url ?? this.url,
      options.headers ?? this.headers,
      options.remoteAddress ?? this.remoteAddressOverride,
      this.body
    )
  }

  override toString(): string {
    return `LocalRequest(${this.method} ${this.url})`
  }

  toJSON(): unknown {
    return HttpIncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpServerRequest",
      method: this.method,
      url: this.originalUrl
    })
  }
}

/** The outcome of reading a body: the bytes, more than the limit (read to the end and dropped), or a failure. */
export type BodyRead =
  | { readonly _tag: "Read"; readonly bytes: Uint8Array }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Failed"; readonly message: string }

/**
 * One body being read from a Node request: collects the chunks, then resumes `resume` once, and takes its listeners
 * off the request (a request keeps its listeners, and what they hold, as long as Node keeps the request, which
 * would keep every object of the request alive through young-generation collections). A class with bound
 * methods: no closures named per request.
 */
class BodyReader {
  chunks: Array<Buffer> = []
  size = 0
  done = false
  readonly onData = this.data.bind(this)
  readonly onEnd = this.end.bind(this)
  readonly onError = this.error.bind(this)
  readonly onClose = this.close.bind(this)

  constructor(
    readonly source: IncomingMessage,
    readonly maxBytes: number,
    readonly then: (read: BodyRead) => void
  ) {
    source.on("data", this.onData)
    source.on("end", this.onEnd)
    source.on("error", this.onError)
    source.on("close", this.onClose)
  }

  private data(chunk: Buffer): void {
    this.size += chunk.byteLength
    if (this.size <= this.maxBytes) this.chunks.push(chunk)
    else this.chunks = []
  }

  private settle(read: BodyRead): void {
    if (this.done) return
    this.done = true
    this.chunks = []
    this.source.off("data", this.onData)
    this.source.off("end", this.onEnd)
    this.source.off("error", this.onError)
    this.source.off("close", this.onClose)
    this.then(read)
  }

  private end(): void {
    if (this.size > this.maxBytes) return this.settle({ _tag: "TooLarge" })
    const chunks = this.chunks
    const bytes = chunks.length === 1 ? chunks[0] : chunks.length === 0 ? emptyBody : Buffer.concat(chunks, this.size)
    this.settle({ _tag: "Read", bytes })
  }

  private error(error: Error): void {
    this.settle({ _tag: "Failed", message: error.message })
  }

  private close(): void {
    this.settle({ _tag: "Failed", message: "the connection closed before the end of the body" })
  }
}

/**
 * Reads the whole body of a Node request, at most `maxBytes`: a body with `Content-Length` (already checked against
 * the limit; Node's parser enforces the length) is kept as it arrives; a chunked body is counted as it arrives and,
 * once over the limit, read to its end and dropped (`TooLarge`), so the client still gets an answer instead of a
 * dropped connection. A connection closed or failing before the end is `Failed` (so an interrupted request, whose
 * client left, also ends here).
 */
export const readNodeBody = (source: IncomingMessage, maxBytes: number): Effect.Effect<BodyRead> =>
  Effect.async<BodyRead>((resume) => void new BodyReader(source, maxBytes, (read) => resume(Effect.succeed(read))))

/** {@link readNodeBody} without an effect: `then` is called once with the outcome. */
export const readNodeBodyThen = (source: IncomingMessage, maxBytes: number, then: (read: BodyRead) => void): void =>
  void new BodyReader(source, maxBytes, then)

/** True when a request declares a body: a `Content-Length` other than 0, or a `Transfer-Encoding`. */
export const hasBody = (headers: Headers.Headers): boolean =>
  headers["content-length"] !== undefined ? headers["content-length"] !== "0" : headers["transfer-encoding"] !== undefined
