/**
 * The body of a request, read one way on every serving path: once, from Node's `IncomingMessage`, with a byte limit
 * (`readBody`, `readBodyThen`; a body over the limit is a 400, never a dropped connection), then held in memory by
 * the request object the contract's decoders and handlers read (`BufferedRequest`: `arrayBuffer`, `text`, `json`,
 * `urlParamsBody`, `stream` answer from the bytes). The request pipeline reads a `/v1` body with it on both serving
 * paths (`readRequestBody`, `withBody`), and so do the `/_local/*` routes (`readJson`); the checks of a JSON body
 * before it is parsed (`invalidUtf8`, `refusedBeforeParse`) live here too.
 *
 * Source: spec "Endpoints / Common rules" (a body too large is an error envelope); docs/ASSUMPTIONS.md "Serving",
 * "Text fields", "Request body limits"; ../shared/notes/effect-3.22.md ("Reading the body twice", "Body size").
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
import { isUtf8 } from "node:buffer"
import { IncomingMessage, type ServerResponse } from "node:http"
import * as ApiError from "../../ApiError.js"
import * as Json from "../../Domain/Json.js"
import { MalformedJsonBody, notUtf8Reason } from "../http/ErrorResponse.js"

/**
 * The body of a request that has none.
 *
 * @since 0.1.0
 * @category body
 */
export const emptyBody: Uint8Array = new Uint8Array(0)

/**
 * The UTF-8 text of a body, without a leading byte order mark (as `TextDecoder` reads it).
 *
 * @since 0.1.0
 * @category body
 */
export const bodyText = (bytes: Uint8Array): string => {
  if (bytes.byteLength === 0) return ""
  const text = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString(
    "utf8"
  )
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
}

/**
 * The text of a JSON body, without a leading byte order mark; throws {@link MalformedJsonBody} ({@link notUtf8Reason})
 * when the bytes are not UTF-8, instead of reading U+FFFD in their place (the request pipeline refuses such a body
 * first, naming its field; this keeps every JSON read strict). Source: docs/ASSUMPTIONS.md "Text fields".
 *
 * @since 0.1.0
 * @category body
 */
export const jsonBodyText = (bytes: Uint8Array): string => {
  // One native check, then Buffer's decoder: faster than a fatal TextDecoder for the small bodies of most requests.
  if (!isUtf8(bytes)) throw new MalformedJsonBody({ reason: notUtf8Reason })
  return bodyText(bytes)
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
 * The outcome of reading a body: the bytes, more than the limit (read to the end and dropped), or a failure (the
 * message says why: the connection closed, or Node's error).
 *
 * @since 0.1.0
 * @category body
 */
export type BodyRead =
  | { readonly _tag: "Read"; readonly bytes: Uint8Array }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Failed"; readonly message: string }

/**
 * One body being read from a Node request: collects the chunks, then resumes `then` once, and takes its listeners
 * off the request (a request keeps its listeners, and what they hold, as long as Node keeps the request, which
 * would keep every object of the request alive through young-generation collections). A class with bound
 * methods: no closures made per request.
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
 * Reads the whole body of a Node request, at most `maxBytes` bytes: a body with `Content-Length` (already checked
 * against the limit; Node's parser enforces the length) is kept as it arrives; a chunked body is counted as it
 * arrives and, once over the limit, read to its end and dropped (`TooLarge`), so the client still gets an answer
 * instead of a dropped connection. A connection closed or failing before the end is `Failed` (so an interrupted
 * request, whose client left, also ends here). Never fails.
 *
 * @since 0.1.0
 * @category body
 */
export const readBody = (source: IncomingMessage, maxBytes: number): Effect.Effect<BodyRead> =>
  Effect.async<BodyRead>((resume) => void new BodyReader(source, maxBytes, (read) => resume(Effect.succeed(read))))

/**
 * {@link readBody} without an effect: `then` is called once with the outcome.
 *
 * @since 0.1.0
 * @category body
 */
export const readBodyThen = (source: IncomingMessage, maxBytes: number, then: (read: BodyRead) => void): void =>
  void new BodyReader(source, maxBytes, then)

/**
 * True when a request declares a body: a `Content-Length` other than 0, or a `Transfer-Encoding`.
 *
 * @since 0.1.0
 * @category body
 */
export const hasBody = (headers: Headers.Headers): boolean =>
  headers["content-length"] !== undefined ? headers["content-length"] !== "0" : headers["transfer-encoding"] !== undefined


/**
 * A request over Node's `IncomingMessage` whose body, once read (`readBody`), is held in memory: `arrayBuffer`,
 * `text`, `json`, `urlParamsBody` and `stream` answer from the bytes handed to `setBody` (before that they fail with
 * a `RequestError`: the request pipeline always reads the body first). `headers` is Node's header object (lowercase
 * names), read once; `response` is Node's response when the serving path writes it itself (undefined otherwise).
 * Multipart bodies and upgrades are not served. The one request object of a `/v1` request after its body is read,
 * on both serving paths.
 *
 * @since 0.1.0
 * @category body
 */
export class BufferedRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  readonly method: HttpMethod.HttpMethod
  private body: Uint8Array | undefined
  private bodyAsText: string | undefined
  private parsedCookies: Record<string, string> | undefined

  constructor(
    /** Node's request. */
    readonly source: IncomingMessage,
    /** Node's response of this request, when the serving path writes it itself. */
    readonly response: ServerResponse | undefined,
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
  static fromNode(source: IncomingMessage, response: ServerResponse): BufferedRequest & { readonly response: ServerResponse } {
    return new BufferedRequest(source, response, source.url ?? "/", source.headers as Headers.Headers) as
      & BufferedRequest
      & { readonly response: ServerResponse }
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

  /** The body as text, now (empty before the body is read). */
  textNow(): string {
    return (this.bodyAsText ??= bodyText(this.body ?? emptyBody))
  }

  /**
   * The body as JSON, now: `null` when empty; throws {@link MalformedJsonBody} when it is not UTF-8 or not JSON (as
   * `json` dies with it).
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
    return this.body === undefined ? this.unread() : Effect.sync(() => this.textNow())
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
    return new BufferedRequest(
      this.source,
      this.response,
      options.url ?? this.url,
      options.headers ?? this.headers,
      options.remoteAddress ?? this.remoteAddressOverride,
      this.body
    )
  }

  override toString(): string {
    return `BufferedRequest(${this.method} ${this.url})`
  }

  toJSON(): unknown {
    return HttpIncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpServerRequest",
      method: this.method,
      url: this.originalUrl
    })
  }
}

/**
 * Node's request behind `request`, whichever serving path made it (the stock path's request and
 * {@link BufferedRequest} both hold it as `source`); undefined for a request that is not Node's.
 *
 * @since 0.1.0
 * @category body
 */
export const nodeSource = (request: HttpServerRequest.HttpServerRequest): IncomingMessage | undefined =>
  request.source instanceof IncomingMessage ? request.source : undefined

/**
 * Reads the whole body of `request` with {@link readBody}, at most `maxBytes` bytes. A request that is not Node's
 * (no `IncomingMessage` as its `source`) is `Failed`: both serving paths are Node servers.
 *
 * @since 0.1.0
 * @category body
 */
export const readRequestBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number): Effect.Effect<BodyRead> => {
  const source = nodeSource(request)
  return source === undefined
    ? Effect.succeed({ _tag: "Failed", message: "not a request of Node's HTTP server" })
    : readBody(source, maxBytes)
}

/**
 * `request` with its body `bytes` in memory: a {@link BufferedRequest} takes them in place (the same object is
 * returned); any other request of Node's server becomes a {@link BufferedRequest} over the same Node request, URL,
 * headers and client address. A request that is not Node's (tests) becomes one over a stand-in with its method.
 *
 * @since 0.1.0
 * @category body
 */
export const withBody = (request: HttpServerRequest.HttpServerRequest, bytes: Uint8Array): BufferedRequest => {
  if (request instanceof BufferedRequest) {
    request.setBody(bytes)
    return request
  }
  const source = nodeSource(request) ?? ({ method: request.method, url: request.url } as IncomingMessage)
  return new BufferedRequest(source, undefined, request.url, request.headers, Option.getOrUndefined(request.remoteAddress), bytes)
}

/**
 * The answer to a body over `maxBytes`, naming its size (`size`: "N bytes" as declared, or "more than N bytes").
 *
 * @since 0.1.0
 * @category body
 */
export const tooLarge = (size: string, maxBytes: number): ApiError.InvalidRequestError =>
  ApiError.make.invalidRequest(`Request body too large: ${size}; the maximum is ${maxBytes} bytes.`)

/**
 * Why a body could not be taken (too large for `maxBytes`, unreadable), or undefined when it was read.
 *
 * @since 0.1.0
 * @category body
 */
export const refusal = (read: BodyRead, maxBytes: number): ApiError.InvalidRequestError | undefined => {
  switch (read._tag) {
    case "Read":
      return undefined
    case "TooLarge":
      return tooLarge(`more than ${maxBytes} bytes`, maxBytes)
    case "Failed":
      return ApiError.make.invalidRequest(`Request body could not be read: ${read.message}`)
  }
}

/**
 * The JSON value of `request`'s body, read with {@link readRequestBody} (at most `maxBytes`): fails with the 400 of
 * {@link refusal} when it cannot be read, dies with {@link MalformedJsonBody} when it is not JSON (as `json` does).
 *
 * @since 0.1.0
 * @category body
 */
export const readJson = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number
): Effect.Effect<unknown, ApiError.InvalidRequestError> => {
  if (request instanceof BufferedRequest && request.bodyBytes !== undefined) return parseJsonBody(request.bodyBytes)
  if (!hasBody(request.headers)) return parseJsonBody(emptyBody)
  return Effect.flatMap(readRequestBody(request, maxBytes), (read) => {
    const refused = refusal(read, maxBytes)
    return refused !== undefined || read._tag !== "Read" ? Effect.fail(refused!) : parseJsonBody(read.bytes)
  })
}

/** True when the first `length` bytes are UTF-8, or a UTF-8 text cut inside its last character. */
const utf8Prefix = (bytes: Uint8Array, length: number): boolean => {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, length), { stream: true })
    return true
  } catch {
    return false
  }
}

/**
 * Where a JSON body is not UTF-8: undefined when it is (the common case, one native check), else the top-level member
 * the first bad byte is in (`field`, null when it is not in a member's value). A body that is not UTF-8 is a 400
 * naming it, never decoded with U+FFFD in place of its bytes (spec: a name is stored exactly as sent;
 * docs/ASSUMPTIONS.md "Text fields").
 *
 * @since 0.1.0
 * @category body
 */
export const invalidUtf8 = (bytes: Uint8Array): { readonly field: string | null } | undefined => {
  if (isUtf8(bytes)) return undefined
  // The longest prefix that is UTF-8 (a prefix of one is one too): the first bad byte follows it.
  let valid = 0
  let invalid = bytes.byteLength
  while (invalid - valid > 1) {
    const middle = Math.floor((valid + invalid) / 2)
    if (utf8Prefix(bytes, middle)) valid = middle
    else invalid = middle
  }
  return Json.memberAt(bytes, valid)
}

/**
 * Why a JSON body is refused before it is parsed, or undefined: arrays and objects nested deeper than
 * `Json.maxDepth`, or a top-level member over its cap (`caps`, the route's `memberCaps`: bytes, or a string's
 * length). One scan of the bytes (`Json.checkBody`), no parse: a 30 MiB `metadata` value costs its reading and a scan
 * of its first cap bytes, not a parse and a decode. The 400 names the top-level member (`param`), as the schema's own
 * refusal would. docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category body
 */
export const refusedBeforeParse = (bytes: Uint8Array, caps: Json.MemberCaps | undefined): ApiError.InvalidRequestError | undefined => {
  // Nothing shorter can nest deeper than the limit or go over a cap (the smallest is Json.memberCapFloor).
  if (bytes.byteLength <= Json.maxDepth * 2) return undefined
  const problem = Json.checkBody(bytes, caps)
  if (problem === undefined) return undefined
  if (problem._tag === "TooDeep") {
    return ApiError.make.invalidRequest(
      `The JSON body nests arrays and objects deeper than ${Json.maxDepth} levels` +
        (problem.field !== null ? ` in ${problem.field}.` : "."),
      problem.field
    )
  }
  return ApiError.make.invalidRequest(
    problem._tag === "OverCap"
      ? `Invalid ${problem.field}: must be at most ${problem.cap} bytes of JSON text (whitespace between tokens not counted).`
      : `Invalid ${problem.field}: a string of at most ${problem.cap} characters.`,
    problem.field
  )
}
