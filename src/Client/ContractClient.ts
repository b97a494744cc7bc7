/**
 * A client derived from an `HttpApi` contract with the same shape and types as `HttpApiClient.makeWith`
 * (`client.group.endpoint({ path, urlParams, payload, headers, withResponse })`), built for a low cost per call:
 * every encoder, decoder and URL template is prepared once when the client is made (and the request itself, method
 * and headers, for an endpoint without a headers schema), so a call only encodes its inputs, sets its URL and body
 * and decodes one answer. (`HttpApiClient` re-merges the construction context, re-applies a base-URL request mapper
 * and decodes through a schema from `ArrayBuffer` on every call (docs/decisions/0002-what-the-fast-paths-save.md).)
 *
 * The request is built when the endpoint function is called (an encoding failure is the returned effect's failure);
 * running the returned effect again (a retry) sends that same request again.
 *
 * What it does per call, as `HttpApiClient` does:
 * - path parameters encoded with the endpoint's path schema and put into its path template as they are;
 * - the payload encoded with its schema: for methods with a body by the schema's encoding (JSON by default; text,
 *   bytes, URL params; a `FormData` payload as is); for GET, HEAD and OPTIONS as URL params;
 * - headers and URL params encoded with their schemas;
 * - the request executed with the given `HttpClient`;
 * - an answer of status 400 or more handed to `onErrorStatus` (the toolkit's envelope decoding, in Transport.ts);
 *   a success status the endpoint declares decoded with its schema (an empty body as `undefined`; no schema: void,
 *   the body read and dropped);
 *   any other status is an `HttpClientError.ResponseError` (reason `Decode`);
 * - schema failures are `ParseError`s; `withResponse: true` answers `[value, response]`.
 * Client-side middleware of the contract is not run (the contract's only middleware is bearer security, whose header
 * the caller adds).
 *
 * Kept beside `HttpApiClient` because it pays for itself (BENCHMARKS.md section 9, docs/decisions/0006-client-own-code-or-stock.md);
 * test/client/ContractClient.test.ts checks that both send and decode the same.
 *
 * Source: `@effect/platform` 0.97 `HttpApiClient` (the behaviour reproduced); BENCHMARKS.md sections 2 and 9.
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

/** The decoder of one success schema (one member of a union when members differ in encoding). */
const memberDecoder = (ast: AST.AST, fallback?: HttpApiSchema.Encoding): Decoder => {
  const encoding = HttpApiSchema.getEncoding(ast, fallback)
  const decode = Schema.decodeUnknown(Schema.make(ast))
  switch (encoding.kind) {
    case "Json":
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
    case "Text":
      return (response) => Effect.flatMap(response.text, decode)
    case "Uint8Array":
      return (response) => Effect.flatMap(response.arrayBuffer, (buffer) => decode(new Uint8Array(buffer)))
    case "UrlParams": {
      const decodeParams = Schema.decodeUnknown(UrlParams.schemaParse(Schema.make(ast) as Schema.Schema<any, any>))
      return (response) => Effect.flatMap(response.urlParamsBody, decodeParams)
    }
  }
}

/** The encoding kinds a success schema's answers can have (one per union member). */
const successEncodings = (ast: AST.AST): Array<HttpApiSchema.Encoding["kind"]> =>
  ast._tag === "Union"
    ? ast.types.map((member) => HttpApiSchema.getEncoding(member, HttpApiSchema.getEncoding(ast)).kind)
    : [HttpApiSchema.getEncoding(ast).kind]

/** The decoder of a success schema: unions whose members share an encoding are decoded as one schema. */
const successDecoder = (ast: AST.AST): Decoder => {
  if (ast._tag !== "Union") return memberDecoder(ast)
  const kinds = new Set(ast.types.map((member) => HttpApiSchema.getEncoding(member, HttpApiSchema.getEncoding(ast)).kind))
  if (kinds.size <= 1) return memberDecoder(ast)
  const members = ast.types.map((member) => memberDecoder(member, HttpApiSchema.getEncoding(ast)))
  return (response) =>
    members.slice(1).reduce<Effect.Effect<unknown, unknown>>(
      (previous, next) => Effect.catchAll(previous, () => next(response)),
      members[0](response)
    )
}

type BodyEncoder = (payload: unknown) => Either.Either<HttpBody.HttpBody, ParseResult.ParseError>

/** The body encoder of one payload schema member, by its encoding. */
const memberBodyEncoder = (ast: AST.AST): BodyEncoder => {
  const encoding = HttpApiSchema.getEncoding(ast)
  const encode = Schema.encodeUnknownEither(Schema.make(ast))
  return (payload) =>
    Either.flatMap(encode(payload), (encoded): Either.Either<HttpBody.HttpBody, ParseResult.ParseError> => {
      switch (encoding.kind) {
        case "Json":
          try {
            // Buffer.from: the same bytes as HttpBody.text's TextEncoder, about 3 times faster.
            return Either.right(HttpBody.uint8Array(Buffer.from(JSON.stringify(encoded) ?? "", "utf8"), encoding.contentType))
          } catch {
            return Either.left(parseFailure(ast, encoded, "Could not encode as JSON"))
          }
        case "Text":
          return typeof encoded === "string"
            ? Either.right(HttpBody.uint8Array(Buffer.from(encoded, "utf8"), encoding.contentType))
            : Either.left(parseFailure(ast, encoded, "Expected a string"))
        case "UrlParams":
          return Either.right(HttpBody.urlParams(UrlParams.fromInput(encoded as UrlParams.Input)))
        case "Uint8Array":
          return encoded instanceof Uint8Array
            ? Either.right(HttpBody.uint8Array(encoded, encoding.contentType))
            : Either.left(parseFailure(ast, encoded, "Expected a Uint8Array"))
      }
    })
}

/** The body encoder of a payload schema: the first union member that encodes the payload wins. */
const bodyEncoder = (ast: AST.AST): BodyEncoder => {
  const members = (ast._tag === "Union" ? ast.types : [ast]).map(memberBodyEncoder)
  if (members.length === 1) return members[0]
  return (payload) => {
    let last: Either.Either<HttpBody.HttpBody, ParseResult.ParseError> | undefined
    for (const member of members) {
      last = member(payload)
      if (Either.isRight(last)) return last
    }
    return last!
  }
}

const paramsRegex = /:(\w+)\??/g

/** The path template of an endpoint as a function of its (encoded) parameters, as `HttpApiClient` builds it. */
const compilePath = (path: string): (params: Record<string, string>) => string => {
  const segments = path.split(paramsRegex)
  if (segments.length === 1) return () => path
  return (params) => {
    let url = segments[0]
    for (let i = 1; i < segments.length; i++) url += i % 2 === 0 ? segments[i] : params[segments[i]]
    return url
  }
}

/**
 * The path of one endpoint of `api` (`group`.`endpoint`) as a function of its path parameters, e.g.
 * `pathOf(BoxServiceApi, "clipboard", "write")({ box_id })` is `/v1/boxes/<box_id>/clipboard`: for callers that send
 * the request themselves (a raw body) but take the URL from the contract. Dies when the endpoint does not exist.
 * The contract is searched once per endpoint (reflecting the whole API costs more than a call), then the function is
 * remembered.
 */
export const pathOf = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, ApiError, ApiR>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  group: string,
  endpoint: string
): (params: Record<string, string>) => string => {
  let paths = pathsOf.get(api)
  if (paths === undefined) {
    paths = new Map()
    pathsOf.set(api, paths)
  }
  let path = paths.get(`${group}.${endpoint}`)
  if (path === undefined) {
    path = findPath(api, group, endpoint)
    paths.set(`${group}.${endpoint}`, path)
  }
  return path
}

/** The path functions found by {@link pathOf}, per contract and `group.endpoint`. */
const pathsOf = new WeakMap<object, Map<string, (params: Record<string, string>) => string>>()

/** The path of `group`.`endpoint` in `api`, compiled; throws when there is none. */
const findPath = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, ApiError, ApiR>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  group: string,
  endpoint: string
) => {
  let found: string | undefined
  HttpApi.reflect(api, {
    onGroup() {},
    onEndpoint(reflected) {
      if (reflected.group.identifier === group && reflected.endpoint.name === endpoint) found = reflected.endpoint.path
    }
  })
  if (found === undefined) throw new Error(`ContractClient.pathOf: no endpoint ${group}.${endpoint}`)
  return compilePath(found)
}

/** One endpoint's call function. */
const endpointFunction = <E, R, E2>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<string, HttpMethod.HttpMethod>,
  successes: ReadonlyMap<number, { readonly ast: Option.Option<AST.AST> }>,
  options: ContractClientOptions<E, R, E2>
) => {
  const method = endpoint.method
  const makeRequest = HttpClientRequest.make(method)
  const makePath = compilePath(endpoint.path)
  const encoder = (schema: unknown) => Schema.encodeUnknownEither(schema as Schema.Schema<any, any>)
  const encodePath = Option.map(endpoint.pathSchema, encoder)
  const encodeBody = HttpMethod.hasBody(method)
    ? Option.map(endpoint.payloadSchema, (schema) => bodyEncoder(schema.ast))
    : Option.none()
  const encodeQueryPayload = HttpMethod.hasBody(method) ? Option.none() : Option.map(endpoint.payloadSchema, encoder)
  const encodeHeaders = Option.map(endpoint.headersSchema, encoder)
  const encodeUrlParams = Option.map(endpoint.urlParamsSchema, encoder)
  const decoders = new Map<number, Decoder>()
  for (const [status, { ast }] of successes) {
    // No schema: void; the body is still read, so the connection is free for the next request.
    decoders.set(status, Option.isNone(ast) ? (response) => Effect.ignore(response.text) : successDecoder(ast.value))
  }
  // Every answer of this endpoint is read whole as text (JSON, text or URL params): the toolkit's own client can then
  // hand it over with its body already read.
  const readsText = [...successes.values()].every(({ ast }) =>
    Option.isNone(ast) || successEncodings(ast.value).every((kind) => kind !== "Uint8Array")
  )
  const fixedHeaders = options.headers ?? {}
  const mapHeaders = options.mapHeaders
  // An endpoint without a headers schema sends the same headers on every call: its request is built once (method and
  // headers), and a call only sets its URL, URL params and body on it (each of `HttpClientRequest.make`'s options
  // copies the request once more).
  const fixedRequest = Option.isNone(encodeHeaders)
    ? makeRequest("", { headers: mapHeaders === undefined ? fixedHeaders : mapHeaders({ ...fixedHeaders }) })
    : undefined

  return (request: {
    readonly path?: unknown
    readonly urlParams?: unknown
    readonly payload?: unknown
    readonly headers?: unknown
    readonly withResponse?: boolean
  } | undefined): Effect.Effect<unknown, unknown, R> => {
      let path: string = endpoint.path
      if (request?.path) {
        const encoded = Option.isSome(encodePath) ? encodePath.value(request.path) : Either.right(request.path)
        if (Either.isLeft(encoded)) return Effect.fail(encoded.left)
        path = makePath(encoded.right as Record<string, string>)
      }
      let body: HttpBody.HttpBody = HttpBody.empty
      let urlParams: UrlParams.UrlParams = UrlParams.empty
      if (request?.payload instanceof FormData) {
        body = HttpBody.formData(request.payload)
      } else if (Option.isSome(encodeBody)) {
        const encoded = encodeBody.value(request?.payload)
        if (Either.isLeft(encoded)) return Effect.fail(encoded.left)
        body = encoded.right
      } else if (Option.isSome(encodeQueryPayload)) {
        const encoded = encodeQueryPayload.value(request?.payload)
        if (Either.isLeft(encoded)) return Effect.fail(encoded.left)
        urlParams = UrlParams.fromInput(encoded.right as UrlParams.Input)
      }
      let headers: Record<string, string> | undefined
      if (Option.isSome(encodeHeaders)) {
        const encoded = encodeHeaders.value(request?.headers)
        if (Either.isLeft(encoded)) return Effect.fail(encoded.left)
        headers = { ...fixedHeaders, ...encoded.right as Record<string, string> }
        if (mapHeaders !== undefined) headers = mapHeaders(headers)
      }
      if (Option.isSome(encodeUrlParams)) {
        const encoded = encodeUrlParams.value(request?.urlParams)
        if (Either.isLeft(encoded)) return Effect.fail(encoded.left)
        urlParams = UrlParams.appendAll(urlParams, UrlParams.fromInput(encoded.right as UrlParams.Input))
      }
      let httpRequest: HttpClientRequest.HttpClientRequest
      if (fixedRequest !== undefined) {
        httpRequest = HttpClientRequest.setUrl(fixedRequest, options.baseUrl + path)
        if (urlParams.length > 0) httpRequest = HttpClientRequest.setUrlParams(httpRequest, urlParams)
      } else {
        httpRequest = makeRequest(options.baseUrl + path, { headers, urlParams } as HttpClientRequest.Options.NoUrl)
      }
      httpRequest = HttpClientRequest.setBody(httpRequest, body)
      if (readsText) httpRequest = UndiciHttpClient.readWhole(httpRequest)
      return Effect.flatMap(
        options.httpClient.execute(httpRequest),
        (response): Effect.Effect<unknown, unknown> => {
          if (response.status >= 400) return options.onErrorStatus(response)
          const decode = decoders.get(response.status)
          if (decode === undefined) {
            return Effect.fail(new HttpClientError.ResponseError({ reason: "Decode", request: httpRequest, response }))
          }
          return request?.withResponse === true
            ? Effect.map(decode(response), (value) => [value, response])
            : decode(response)
        }
      )
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
      target[endpoint.name] = endpointFunction(endpoint, successes, options)
    }
  })
  return client as HttpApiClient.Client<Groups, ApiError | E | E2, R>
}
