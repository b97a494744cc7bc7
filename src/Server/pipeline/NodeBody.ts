/**
 * The body of a request as bytes: read once from Node's `IncomingMessage` with a byte limit (`readNodeBody`,
 * `readNodeBodyThen`), whether a request declares one (`hasBody`), its text and its JSON (`bodyText`,
 * `jsonBodyText`, `parseJsonBody`), and the shape of a request object that takes its body in place once the request
 * pipeline has read it (`BodyInPlace`). Neutral to the serving path: the request pipeline uses it on both, and a
 * serving path's own request object implements `BodyInPlace`.
 *
 * Source: spec "Endpoints / Common rules" (a body too large is an error envelope, not a dropped connection);
 * docs/ASSUMPTIONS.md "Text fields" (a JSON body that is not UTF-8); ../shared/notes/effect-3.22.md ("Reading the
 * body twice", "Body size").
 *
 * @since 0.1.0
 */
import type { Headers, HttpServerRequest } from "@effect/platform"
import { Effect, Predicate } from "effect"
import type { IncomingMessage } from "node:http"
import { MalformedJsonBody, notUtf8Reason } from "../http/ErrorResponse.js"

const emptyBody = new Uint8Array(0)

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
export const readNodeBody = (source: IncomingMessage, maxBytes: number): Effect.Effect<BodyRead> =>
  Effect.async<BodyRead>((resume) => void new BodyReader(source, maxBytes, (read) => resume(Effect.succeed(read))))

/**
 * {@link readNodeBody} without an effect: `then` is called once with the outcome.
 *
 * @since 0.1.0
 * @category body
 */
export const readNodeBodyThen = (source: IncomingMessage, maxBytes: number, then: (read: BodyRead) => void): void =>
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
 * The mark of a request object that takes its body in place ({@link BodyInPlace}).
 *
 * @since 0.1.0
 * @category body
 */
export const BodyInPlaceTypeId: unique symbol = Symbol.for("boxkit/server/NodeBody/BodyInPlace")

/**
 * A request object of a serving path that reads its body from Node's `source` and, once the request pipeline has
 * read it, answers `arrayBuffer`, `text`, `json` and `stream` from the bytes handed to `setBody` (no wrapper request
 * per body). Any other `HttpServerRequest` gets its body through `RequestBody.withBody`.
 *
 * @since 0.1.0
 * @category body
 */
export interface BodyInPlace {
  readonly [BodyInPlaceTypeId]: typeof BodyInPlaceTypeId
  /** Node's request, whose body has not been read yet. */
  readonly source: IncomingMessage
  /** Hands the body read by the pipeline to every later reader of the request. */
  readonly setBody: (bytes: Uint8Array) => void
}

/**
 * True when `request` takes its body in place ({@link BodyInPlace}).
 *
 * @since 0.1.0
 * @category body
 */
export const takesBodyInPlace = (
  request: HttpServerRequest.HttpServerRequest
): request is HttpServerRequest.HttpServerRequest & BodyInPlace => Predicate.hasProperty(request, BodyInPlaceTypeId)
