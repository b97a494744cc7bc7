/**
 * The request object of the local service's Node handler: an `HttpServerRequest` over Node's `IncomingMessage` whose
 * body is read once, by the request pipeline, and then answered from memory (`arrayBuffer`, `text`, `json`,
 * `urlParamsBody`, `stream`) to the contract's decoders and handlers.
 *
 * Per request it reads Node's header object once (Node builds it lazily on first access) and allocates nothing else
 * until asked; it is the one request object of the request: no wrapper is made when the body arrives. It is a
 * `NodeBody.BodyInPlace`: the request pipeline reads the body from `source` with NodeBody.ts's readers and hands it
 * over with `setBody`.
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
import { MalformedJsonBody } from "../ErrorResponse.js"
import { BodyInPlaceTypeId, type BodyInPlace, bodyText, jsonBodyText, parseJsonBody } from "../../pipeline/NodeBody.js"

const emptyBody = new Uint8Array(0)

/**
 * One request of the Node handler. `headers` is Node's header object (lowercase names), read once. The body is set
 * by the request pipeline with {@link LocalRequest.setBody} once it is read (a `NodeBody.BodyInPlace`); before that, reading it here fails with
 * a `RequestError` (the pipeline always reads it first).
 */
export class LocalRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest, BodyInPlace {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [BodyInPlaceTypeId]: typeof BodyInPlaceTypeId = BodyInPlaceTypeId
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
