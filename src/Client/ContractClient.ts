/**
 * A client derived from an `HttpApi` contract with the shape and types of `HttpApiClient.makeWith`
 * (`client.group.endpoint({ path, urlParams, payload, headers, withResponse })`), every encoder, decoder and URL
 * template prepared once when the client is made (and, for an endpoint without a headers schema, the request's method
 * and headers), so that a call only encodes its inputs, sets its URL and body and decodes one answer. The request is
 * built when the endpoint function is called (an encoding failure is the returned effect's failure); running the
 * returned effect again (a retry) sends that same request again.
 *
 * Per call, as `HttpApiClient` does: path parameters encoded with the path schema into the path template; the
 * payload encoded by its schema's encoding (JSON by default, text or bytes; a union's first member that encodes it);
 * headers and URL params encoded with their schemas; the request executed with the given `HttpClient`, marked to be
 * read whole (`UndiciHttpClient.readWhole`); a status of 400 or more handed to `onErrorStatus`; a success status the
 * endpoint declares decoded with its schema from JSON (an empty body as `undefined`; no schema: void); any other
 * status an `HttpClientError.ResponseError` (reason `Decode`); schema failures `ParseError`s; `withResponse: true`
 * answers `[value, response]`. Refused when the client is made (it throws): answers other than JSON, payloads of URL
 * params, a payload on GET, HEAD or OPTIONS; a `FormData` payload is not sent as form data. The contract's
 * client-side middleware is not run (its only middleware is bearer security, whose header the caller adds).
 *
 * Kept beside `HttpApiClient` while it pays for itself (BENCHMARKS.md section 9,
 * docs/decisions/0006-client-own-code-or-stock.md); test/client/ContractClient.test.ts checks that both send and
 * decode the same.
 *
 * @since 0.1.0
 */
import {
  HttpApi,
  type HttpApiClient,
  type HttpApiEndpoint,
  type HttpApiGroup,
  HttpApiSchema,
  HttpBody,
  type HttpClient,
  HttpClientError,
  HttpClientRequest,
  type HttpClientResponse,
  HttpMethod,
  UrlParams
} from "@effect/platform"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import type * as AST from "effect/SchemaAST"
import * as UndiciHttpClient from "../Http/UndiciHttpClient.js"

/** Options of {@link make}. */
export interface ContractClientOptions<E, R, E2> {
  /** Executes every request. */
  readonly httpClient: HttpClient.HttpClient.With<E, R>
  /** Prepended to every endpoint path (e.g. `http://127.0.0.1:8787`; the contract's paths carry `/v1`). */
  readonly baseUrl: string
  /** Headers sent on every request (before the endpoint's own), e.g. `authorization`. */
  readonly headers?: Readonly<Record<string, string>>
  /** Rewrites the encoded headers of each request (e.g. re-spelling a non-ASCII header value). */
  readonly mapHeaders?: (headers: Record<string, string>) => Record<string, string>
  /** Turns an answer of status 400 or more into the call's failure. */
  readonly onErrorStatus: (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<never, E2>
}

type Decoder = (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<unknown, unknown>

const parseFailure = (ast: AST.AST, actual: unknown, message: string) =>
  new ParseResult.ParseError({ issue: new ParseResult.Type(ast, actual, message) })

/** The encoding kind of `ast`, and of each member when it is a union (a member's own, else the union's). */
const encodingKinds = (ast: AST.AST): ReadonlyArray<HttpApiSchema.Encoding["kind"]> =>
  ast._tag === "Union"
    ? ast.types.map((member) => HttpApiSchema.getEncoding(member, HttpApiSchema.getEncoding(ast)).kind)
    : [HttpApiSchema.getEncoding(ast).kind]

/** The decoder of a JSON success schema (an empty body decoded as `undefined`, as `HttpApiClient` does). */
const jsonDecoder = (ast: AST.AST): Decoder => {
  if (encodingKinds(ast).some((kind) => kind !== "Json")) throw new Error("ContractClient decodes JSON answers only")
  const decode = Schema.decodeUnknown(Schema.make(ast))
  return (response) =>
    Effect.flatMap(response.text, (text) => {
      if (text === "") return decode(undefined)
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        return Effect.fail(parseFailure(ast, text, "Could not parse JSON"))
      }
      return decode(json)
    })
}

type BodyEncoder = (payload: unknown) => Either.Either<HttpBody.HttpBody, ParseResult.ParseError>

/** The body encoder of one payload schema member: JSON, text or bytes, by its encoding. */
const memberBodyEncoder = (ast: AST.AST): BodyEncoder => {
  const { contentType, kind } = HttpApiSchema.getEncoding(ast)
  if (kind === "UrlParams") throw new Error("ContractClient sends JSON, text or bytes only")
  const encode = Schema.encodeUnknownEither(Schema.make(ast))
  return (payload) =>
    Either.flatMap(encode(payload), (encoded) => {
      if (kind === "Uint8Array") {
        return encoded instanceof Uint8Array
          ? Either.right(HttpBody.uint8Array(encoded, contentType))
          : Either.left(parseFailure(ast, encoded, "Expected a Uint8Array"))
      }
      if (kind === "Text" && typeof encoded !== "string") return Either.left(parseFailure(ast, encoded, "Expected a string"))
      try {
        // Buffer.from: the same bytes as HttpBody.text's TextEncoder, for less CPU.
        const text = kind === "Text" ? encoded as string : JSON.stringify(encoded) ?? ""
        return Either.right(HttpBody.uint8Array(Buffer.from(text, "utf8"), contentType))
      } catch {
        return Either.left(parseFailure(ast, encoded, "Could not encode as JSON"))
      }
    })
}

/** The body encoder of a payload schema: the first union member that encodes the payload wins. */
const bodyEncoder = (ast: AST.AST): BodyEncoder => {
  const members = (ast._tag === "Union" ? ast.types : [ast]).map(memberBodyEncoder)
  return (payload) => {
    let last = members[0](payload)
    for (let index = 1; Either.isLeft(last) && index < members.length; index++) last = members[index](payload)
    return last
  }
}

const paramsRegex = /:(\w+)\??/g

/** The path template of an endpoint as a function of its (encoded) parameters, as `HttpApiClient` builds it. */
const compilePath = (path: string): PathOf => {
  const segments = path.split(paramsRegex)
  if (segments.length === 1) return () => path
  return (params) => {
    let url = segments[0]
    for (let i = 1; i < segments.length; i++) url += i % 2 === 0 ? segments[i] : params[segments[i]]
    return url
  }
}

type PathOf = (params: Record<string, string>) => string

/** The path function of each endpoint of a contract, by the endpoint (made on first use). */
const paths = new WeakMap<object, PathOf>()

/**
 * The path of one endpoint of `api` (`group`.`endpoint`) as a function of its path parameters, e.g.
 * `pathOf(BoxServiceApi, "clipboard", "write")({ box_id })` is `/v1/boxes/<box_id>/clipboard`: for callers that send
 * the request themselves (a raw body) but take the URL from the contract. Throws when the endpoint does not exist.
 */
export const pathOf = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, ApiError, ApiR>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  group: string,
  endpoint: string
): PathOf => {
  const groups = api.groups as unknown as Readonly<Record<string, HttpApiGroup.HttpApiGroup.AnyWithProps | undefined>>
  const found = groups[group]?.endpoints[endpoint]
  if (found === undefined) throw new Error(`ContractClient.pathOf: no endpoint ${group}.${endpoint}`)
  let path = paths.get(found)
  if (path === undefined) paths.set(found, path = compilePath(found.path))
  return path
}

type Encoder = (input: unknown) => Either.Either<unknown, ParseResult.ParseError>

/** The encoder of an optional schema (path, headers, URL params). */
const encoderOf = (schema: Option.Option<{ readonly ast: AST.AST }>): Encoder | undefined =>
  Option.isSome(schema) ? Schema.encodeUnknownEither(Schema.make(schema.value.ast)) : undefined

/** What a call of an endpoint takes (`HttpApiClient`'s request shape). */
interface EndpointInput {
  readonly path?: unknown
  readonly urlParams?: unknown
  readonly payload?: unknown
  readonly headers?: unknown
  readonly withResponse?: boolean
}

/**
 * One endpoint, its encoders, decoders and URL template prepared once; {@link call} is one call of it. An endpoint
 * without a headers schema sends the same headers on every call, so its request (method and headers) is built once
 * too, and a call only sets its URL, URL params and body on it.
 */
class Endpoint<E, R, E2> {
  private readonly makePath: PathOf
  private readonly encodePath: Encoder | undefined
  private readonly encodeBody: BodyEncoder | undefined
  private readonly encodeHeaders: Encoder | undefined
  private readonly encodeUrlParams: Encoder | undefined
  private readonly decoders = new Map<number, Decoder>()
  private readonly fixedRequest: HttpClientRequest.HttpClientRequest | undefined

  constructor(
    private readonly endpoint: HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>,
    successes: ReadonlyMap<number, { readonly ast: Option.Option<AST.AST> }>,
    private readonly options: ContractClientOptions<E, R, E2>
  ) {
    if (!HttpMethod.hasBody(endpoint.method) && Option.isSome(endpoint.payloadSchema)) {
      throw new Error(`ContractClient: ${endpoint.name} has a payload on ${endpoint.method}`)
    }
    this.makePath = compilePath(endpoint.path)
    this.encodePath = encoderOf(endpoint.pathSchema)
    this.encodeBody = Option.isSome(endpoint.payloadSchema) ? bodyEncoder(endpoint.payloadSchema.value.ast) : undefined
    this.encodeHeaders = encoderOf(endpoint.headersSchema)
    this.encodeUrlParams = encoderOf(endpoint.urlParamsSchema)
    for (const [status, { ast }] of successes) {
      // No schema: void; the body is still read, so the connection is free for the next request.
      this.decoders.set(status, Option.isNone(ast) ? (response) => Effect.ignore(response.text) : jsonDecoder(ast.value))
    }
    const headers = options.headers ?? {}
    this.fixedRequest = this.encodeHeaders === undefined
      ? HttpClientRequest.make(endpoint.method)("", { headers: options.mapHeaders?.({ ...headers }) ?? headers })
      : undefined
  }

  /** The request of `input` (its answer marked to be read whole: every answer is JSON), or why it does not encode. */
  request(input: EndpointInput | undefined): Either.Either<HttpClientRequest.HttpClientRequest, ParseResult.ParseError> {
    let path: string = this.endpoint.path
    if (input?.path) {
      const encoded = this.encodePath === undefined ? Either.right(input.path) : this.encodePath(input.path)
      if (Either.isLeft(encoded)) return Either.left(encoded.left)
      path = this.makePath(encoded.right as Record<string, string>)
    }
    let body: HttpBody.HttpBody = HttpBody.empty
    if (this.encodeBody !== undefined) {
      const encoded = this.encodeBody(input?.payload)
      if (Either.isLeft(encoded)) return Either.left(encoded.left)
      body = encoded.right
    }
    let urlParams = UrlParams.empty
    if (this.encodeUrlParams !== undefined) {
      const encoded = this.encodeUrlParams(input?.urlParams)
      if (Either.isLeft(encoded)) return Either.left(encoded.left)
      urlParams = UrlParams.fromInput(encoded.right as UrlParams.Input)
    }
    const url = this.options.baseUrl + path
    let request: HttpClientRequest.HttpClientRequest
    if (this.fixedRequest !== undefined) {
      request = HttpClientRequest.setUrl(this.fixedRequest, url)
      if (urlParams.length > 0) request = HttpClientRequest.setUrlParams(request, urlParams)
    } else {
      const encoded = this.encodeHeaders!(input?.headers)
      if (Either.isLeft(encoded)) return Either.left(encoded.left)
      const headers = { ...this.options.headers, ...encoded.right as Record<string, string> }
      request = HttpClientRequest.make(this.endpoint.method)(url, {
        headers: this.options.mapHeaders?.(headers) ?? headers,
        urlParams
      })
    }
    return Either.right(UndiciHttpClient.readWhole(HttpClientRequest.setBody(request, body)))
  }

  /** One call: the request sent, its answer decoded (`[value, response]` with `withResponse`). */
  call(input: EndpointInput | undefined): Effect.Effect<unknown, unknown, R> {
    const request = this.request(input)
    if (Either.isLeft(request)) return Effect.fail(request.left)
    return Effect.flatMap(this.options.httpClient.execute(request.right), (response): Effect.Effect<unknown, unknown> => {
      if (response.status >= 400) return this.options.onErrorStatus(response)
      const decode = this.decoders.get(response.status)
      if (decode === undefined) {
        return Effect.fail(new HttpClientError.ResponseError({ reason: "Decode", request: request.right, response }))
      }
      return input?.withResponse === true ? Effect.map(decode(response), (value) => [value, response]) : decode(response)
    })
  }
}

/**
 * The client of `api`, with the shape and types of `HttpApiClient.makeWith(api, ...)`. Its failures: the endpoint's
 * and the caller's (`E`, `E2`) errors, `HttpClientError` and `ParseError`.
 */
export const make = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, ApiError, ApiR, E, R, E2>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  options: ContractClientOptions<E, R, E2>
): HttpApiClient.Client<Groups, ApiError | E | E2, R> => {
  const client: Record<string, any> = {}
  HttpApi.reflect(api, {
    onGroup({ group }) {
      if (!group.topLevel) client[group.identifier] = {}
    },
    onEndpoint({ endpoint, group, successes }) {
      const target = group.topLevel ? client : client[group.identifier]
      const prepared = new Endpoint(endpoint, successes, options)
      target[endpoint.name] = (input: EndpointInput | undefined) => prepared.call(input)
    }
  })
  return client as HttpApiClient.Client<Groups, ApiError | E | E2, R>
}
