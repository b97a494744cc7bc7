/**
 * The contract's endpoints as routes of the local service, compiled once from the `HttpApi` contract and the
 * handlers of the `HttpApiBuilder` groups.
 *
 * `HttpApiBuilder.group` turns each handler into a route that, per request, runs a generator over the path, payload,
 * header and query decoders, merges the group's whole service context into the request's, and looks the success
 * schema's status and encoding up in its annotations (for each answer). A group built with `HandlerGroups.group`
 * (src/Server/http/HandlerGroups.ts, neutral to the serving path) is still registered with `HttpApiBuilder` as usual
 * (the types check that every endpoint is handled, and the stock path serves those routes), and its handlers are also
 * recorded in the `HandlerGroups.Registry` the fast path provides; {@link routes}
 * then compiles each of those endpoints once: the same decoders (the contract's schemas, applied in the same order
 * as `HttpApiBuilder`: path, payload, headers, query; synchronously when the body is in memory and the schema
 * allows it, no effect per step), the same handler, the same encoder (synchronous too, a JSON answer written to a
 * buffer from Node's pool), with the status, encoding and emptiness of the answer read from the contract when
 * building, and the handler run in the request's own context (which the Node handler builds over the groups'
 * services: no merge per request). {@link dispatcher} routes requests with the router `HttpRouter` uses
 * (`find-my-way-ts`), providing the route parameters and query to the route.
 *
 * Endpoints this does not compile (groups built with `HttpApiBuilder.group` directly, several success schemas,
 * multipart streams, group or endpoint middleware) keep `HttpApiBuilder`'s route unchanged. Decoding failures are
 * `HttpApiDecodeError`s as `HttpApiBuilder` makes them; everything else fails as the handler fails.
 *
 * Source: docs/decisions/0002-what-the-fast-paths-save.md (what `HttpApiBuilder` does per request); the contract (src/Contract/Api.ts).
 *
 * @since 0.1.0
 */
import {
  HttpApiBuilder,
  HttpApiError,
  type HttpApiEndpoint,
  HttpApiSchema,
  HttpMethod,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerRespondable,
  HttpServerResponse,
  UrlParams
} from "@effect/platform"
import { Chunk, Context, Effect, Either, Exit, Option, ParseResult, Schema, Tracer } from "effect"
import * as FindMyWay from "find-my-way-ts"
import * as HandlerGroups from "../HandlerGroups.js"
import { LocalRequest } from "./NodeRequest.js"
import * as QueryParams from "./QueryParams.js"

/** The key of an endpoint among routes: method and path. */
const keyOf = (method: string, path: string) => `${method} ${path}`

/** A parse issue that means "not synchronously" (async schema, or a schema that needs a service): use the effect. */
const needsEffect = (issue: ParseResult.ParseIssue) => issue._tag === "Forbidden"

/**
 * A decoder of the contract: synchronous (`Either`) first, with the schema's effectful decoder when the schema
 * cannot decode synchronously (an asynchronous schema or one that needs a service).
 */
interface Decoder {
  readonly sync: (input: unknown) => Either.Either<unknown, ParseResult.ParseIssue>
  readonly effect: (input: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
}

const decoder = (schema: Schema.Schema.Any): Decoder => ({
  sync: ParseResult.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>),
  effect: Schema.decodeUnknown(schema as Schema.Schema<unknown, unknown>)
})

const decodeFailure = (error: ParseResult.ParseError) => HttpApiError.HttpApiDecodeError.refailParseError(error)

/**
 * The encoder of an endpoint's answer, or undefined when it has several success schemas (not compiled): the
 * status, content type and emptiness are read from the contract once; the value is encoded synchronously when the
 * schema can (else with its effectful encoder); a JSON answer is written to a buffer from Node's pool. A value
 * registered with `HandlerGroups.encodeOnce` is encoded on its first answer only.
 */
const successEncoder = (
  endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
): ((value: unknown) => Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError>) | undefined => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, endpoint.successSchema)
  if (schemas.size !== 1) return undefined
  const schema = [...schemas][0] as Schema.Schema<unknown, unknown>
  const status = HttpApiSchema.getStatusSuccessAST(schema.ast)
  if (HttpApiSchema.isVoid(schema.ast)) {
    const empty = () => HttpServerResponse.empty({ status })
    return () => Effect.sync(empty)
  }
  const encoding = HttpApiSchema.getEncoding(schema.ast)
  const encodeSync = ParseResult.encodeUnknownEither(schema)
  const encodeEffect = Schema.encode(schema)
  const options = { status, contentType: encoding.contentType }
  const toResponse = (data: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError> => {
    switch (encoding.kind) {
      case "Json": {
        let text: string | undefined
        try {
          text = JSON.stringify(data)
        } catch (error) {
          return Effect.fail(
            new ParseResult.ParseError({ issue: new ParseResult.Type(schema.ast, error, "Could not encode to JSON") })
          )
        }
        // Buffer.from takes small answers from Node's shared pool: no array buffer of its own per answer.
        return Effect.succeed(HttpServerResponse.uint8Array(Buffer.from(text ?? "", "utf8"), options))
      }
      case "Text":
        return Effect.succeed(HttpServerResponse.text(data as string, options))
      case "Uint8Array":
        return Effect.succeed(HttpServerResponse.uint8Array(data as Uint8Array, options))
      case "UrlParams":
        return Effect.succeed(HttpServerResponse.urlParams(data as UrlParams.Input, options))
    }
  }
  const encode = (value: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError> => {
    const encoded = encodeSync(value)
    if (Either.isRight(encoded)) return toResponse(encoded.right)
    if (needsEffect(encoded.left)) return Effect.flatMap(encodeEffect(value), toResponse)
    return Effect.fail(new ParseResult.ParseError({ issue: encoded.left }))
  }
  // The answers of values registered with HandlerGroups.encodeOnce: the successful `Exit` holding the response (immutable), with
  // its body copied out of Node's shared pool so that it does not keep a pool slab alive.
  const answers = new WeakMap<object, Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError>>()
  return (value) => {
    if (!HandlerGroups.isEncodedOnce(value)) return encode(value)
    const known = answers.get(value)
    if (known !== undefined) return known
    const answer = encode(value)
    if (Exit.isExit(answer) && Exit.isSuccess(answer)) {
      const body = (answer.value as HttpServerResponse.HttpServerResponse).body
      const kept = body._tag === "Uint8Array"
        ? Exit.succeed(HttpServerResponse.uint8Array(Uint8Array.from(body.body), options))
        : answer
      answers.set(value, kept)
      return kept
    }
    return answer
  }
}

/** The body of a request as `HttpApiBuilder` hands it to a payload decoder (by Content-Type; JSON by default). */
const requestPayload = (
  request: HttpServerRequest.HttpServerRequest,
  urlParams: Readonly<Record<string, string | Array<string>>>
): Effect.Effect<unknown> => {
  if (!HttpMethod.hasBody(request.method)) return Effect.succeed(urlParams)
  const header = request.headers["content-type"]
  const contentType = header ? header.toLowerCase().trim() : "application/json"
  if (contentType.includes("application/json")) return Effect.orDie(request.json)
  if (contentType.includes("multipart/form-data")) {
    return Effect.dieMessage("multipart bodies are not accepted by the local service")
  }
  if (contentType.includes("x-www-form-urlencoded")) return Effect.map(Effect.orDie(request.urlParamsBody), UrlParams.toRecord)
  if (contentType.startsWith("text/")) return Effect.orDie(request.text)
  return Effect.map(Effect.orDie(request.arrayBuffer), (buffer) => new Uint8Array(buffer))
}

/** {@link requestPayload} without an effect, for a request whose body is in memory; undefined for any other. */
const requestPayloadNow = (
  request: HttpServerRequest.HttpServerRequest,
  urlParams: Readonly<Record<string, string | Array<string>>>
): { readonly value: unknown } | { readonly defect: unknown } | undefined => {
  if (!HttpMethod.hasBody(request.method)) return { value: urlParams }
  if (!(request instanceof LocalRequest) || request.bodyBytes === undefined) return undefined
  const header = request.headers["content-type"]
  const contentType = header ? header.toLowerCase().trim() : "application/json"
  try {
    if (contentType.includes("application/json")) return { value: request.jsonNow() }
    if (contentType.includes("multipart/form-data")) return undefined
    if (contentType.includes("x-www-form-urlencoded")) {
      return { value: UrlParams.toRecord(UrlParams.fromInput(new URLSearchParams(request.textNow()))) }
    }
    if (contentType.startsWith("text/")) return { value: request.textNow() }
    return { value: new Uint8Array(request.bodyBytes) }
  } catch (defect) {
    return { defect }
  }
}

/** Query parameters as `HttpApiBuilder` hands them to the decoder: arrays where the schema wants several values. */
const normalizeUrlParams = QueryParams.normalize

/** What a route is run with: the request, its route parameters and its parsed query. */
export interface RouteInput {
  readonly request: HttpServerRequest.HttpServerRequest
  readonly params: Readonly<Record<string, string | undefined>>
  readonly query: Readonly<Record<string, string | Array<string>>>
}

/** One decoding step of a request: where its input comes from and where its output goes in the handler's input. */
interface Step {
  readonly key: "path" | "payload" | "headers" | "urlParams"
  readonly decoder: Decoder
  /** The input, now; undefined when it can only be read with an effect. */
  readonly now: (input: RouteInput) => { readonly value: unknown } | { readonly defect: unknown } | undefined
  /** The input, read with an effect. */
  readonly effect: (input: RouteInput) => Effect.Effect<unknown>
}

/**
 * The routes compiled here, with the function each runs for a request (they answer an `HttpServerResponse`: no
 * `Respondable` conversion is needed).
 */
const compiledRoutes = new WeakMap<object, (input: RouteInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>>()

/**
 * The route of one handled endpoint, or undefined when it is not compiled (see the module docs). As a route, it
 * reads the request, its route parameters and query from the context, as `HttpApiBuilder`'s route does; the
 * {@link dispatcher} hands them to it directly. It needs every service of its group in the context of the request. Per request: the decoders run synchronously (no effect per
 * step) when the body is in memory and the schemas allow it, then the handler, then the encoder.
 */
export const compile = (item: HttpApiBuilder.Handlers.Item<any, any>): HttpRouter.Route<unknown, never> | undefined => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  if (endpoint.middlewares.size > 0) return undefined
  if (Option.isSome(endpoint.payloadSchema) && HttpApiSchema.getMultipartStream(endpoint.payloadSchema.value.ast) !== undefined) {
    return undefined
  }
  const encodeSuccess = successEncoder(endpoint)
  if (encodeSuccess === undefined) return undefined
  // The steps in the order of HttpApiBuilder: path, payload, headers, query.
  const steps: Array<Step> = []
  if (Option.isSome(endpoint.pathSchema)) {
    steps.push({
      key: "path",
      decoder: decoder(endpoint.pathSchema.value),
      now: (input) => ({ value: input.params }),
      effect: (input) => Effect.sync(() => input.params)
    })
  }
  if (!item.withFullRequest && Option.isSome(endpoint.payloadSchema)) {
    steps.push({
      key: "payload",
      decoder: decoder(endpoint.payloadSchema.value),
      now: (input) => requestPayloadNow(input.request, input.query),
      effect: (input) => requestPayload(input.request, input.query)
    })
  }
  if (Option.isSome(endpoint.headersSchema)) {
    steps.push({
      key: "headers",
      decoder: decoder(endpoint.headersSchema.value),
      now: (input) => ({ value: input.request.headers }),
      effect: (input) => Effect.sync(() => input.request.headers)
    })
  }
  if (Option.isSome(endpoint.urlParamsSchema)) {
    const ast = endpoint.urlParamsSchema.value.ast
    steps.push({
      key: "urlParams",
      decoder: decoder(endpoint.urlParamsSchema.value),
      now: (input) => ({ value: normalizeUrlParams(input.query, ast) }),
      effect: (input) => Effect.sync(() => normalizeUrlParams(input.query, ast))
    })
  }
  const handler = item.handler

  const respond = (input: Record<string, unknown>): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> =>
    Effect.catchIf(
      Effect.flatMap(handler(input) as Effect.Effect<unknown, unknown>, (response: unknown) =>
        HttpServerResponse.isServerResponse(response)
          ? Effect.succeed(response)
          : encodeSuccess(response)),
      // As HttpApiBuilder: a schema failure of the handler or the encoder is an HttpApiDecodeError too.
      ParseResult.isParseError,
      decodeFailure
    )

  /** Steps `from` onwards with effects, then the handler. */
  const withEffects = (
    from: number,
    route: RouteInput,
    input: Record<string, unknown>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
    let program: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> = Effect.suspend(() => respond(input))
    for (let index = steps.length - 1; index >= from; index--) {
      const step = steps[index]
      const decoded = Effect.catchAll(Effect.flatMap(step.effect(route), step.decoder.effect), decodeFailure)
      program = Effect.zipRight(Effect.map(decoded, (value) => (input[step.key] = value)), program)
    }
    return program
  }

  const run = (route: RouteInput): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
    const input: Record<string, unknown> = { request: route.request }
    for (let index = 0; index < steps.length; index++) {
      const step = steps[index]
      const raw = step.now(route)
      if (raw === undefined) return withEffects(index, route, input)
      if ("defect" in raw) return Effect.die(raw.defect)
      const decoded = step.decoder.sync(raw.value)
      if (Either.isRight(decoded)) {
        input[step.key] = decoded.right
        continue
      }
      if (needsEffect(decoded.left)) return withEffects(index, route, input)
      return decodeFailure(new ParseResult.ParseError({ issue: decoded.left }))
    }
    return respond(input)
  }
  const routed: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> = Effect.withFiberRuntime((fiber) => {
    const context = fiber.currentContext
    return run({
      request: Context.unsafeGet(context, HttpServerRequest.HttpServerRequest),
      params: Context.unsafeGet(context, HttpRouter.RouteContext).params,
      query: Context.unsafeGet(context, HttpServerRequest.ParsedSearchParams)
    })
  })
  const compiled = HttpRouter.makeRoute(endpoint.method, endpoint.path, routed, { uninterruptible: item.uninterruptible })
  compiledRoutes.set(compiled, run)
  return compiled
}

/** The routes of the contract and the services the compiled ones need in the context of each request. */
export interface ContractRoutes {
  readonly routes: ReadonlyArray<HttpRouter.Route<unknown, unknown>>
  /** Every service of the groups built with `HandlerGroups.group`: the base of each request's context. */
  readonly services: Context.Context<never>
  /** `group.endpoint` names of the compiled endpoints (the others run `HttpApiBuilder`'s route). */
  readonly compiled: ReadonlyArray<string>
}

/**
 * The routes of the contract: the compiled route of every endpoint of the groups in the `HandlerGroups.Registry` that
 * compiles, `HttpApiBuilder`'s route (from `HttpApiBuilder.Router`) for every other one.
 */
export const routes: Effect.Effect<ContractRoutes, never, HandlerGroups.Registry | HttpApiBuilder.Router> = Effect.gen(function*() {
  const registry = yield* HandlerGroups.Registry
  const platform = yield* HttpApiBuilder.Router.router
  const compiledRoutes: Array<HttpRouter.Route<unknown, never>> = []
  const compiledKeys = new Set<string>()
  const compiled: Array<string> = []
  let services = Context.empty() as Context.Context<never>
  for (const registration of registry.all()) {
    services = Context.merge(services, registration.context)
    for (const item of registration.items) {
      const route = compile(item)
      if (route === undefined) continue
      compiledRoutes.push(route)
      compiledKeys.add(keyOf(route.method, route.path))
      compiled.push(`${registration.group.identifier}.${item.endpoint.name}`)
    }
  }
  const kept = Chunk.toReadonlyArray(platform.routes).filter((route) => !compiledKeys.has(keyOf(route.method, route.path)))
  const all: Array<HttpRouter.Route<unknown, unknown>> = [...compiledRoutes, ...kept]
  return { routes: all, services, compiled }
})

class RouteContextImpl implements HttpRouter.RouteContext {
  readonly [HttpRouter.RouteContextTypeId]: HttpRouter.RouteContextTypeId = HttpRouter.RouteContextTypeId
  constructor(
    readonly route: HttpRouter.Route<unknown, unknown>,
    readonly params: Readonly<Record<string, string | undefined>>
  ) {}
}

/**
 * Routes a request as `HttpRouter.toHttpApp` does (the same router, `find-my-way-ts`, with `config`; `HEAD` falls
 * back to `GET`; no route is `RouteNotFound`; a route is interruptible unless marked otherwise; the route's path on
 * the parent span as `http.route`). A compiled route is handed its parameters and query directly; any other gets
 * them in its context, as `HttpRouter` provides them.
 */
export const dispatcher = (
  routes: ReadonlyArray<HttpRouter.Route<unknown, unknown>>,
  config: Partial<FindMyWay.RouterConfig>
) => {
  const router = FindMyWay.make<HttpRouter.Route<unknown, unknown>>(config)
  for (const route of routes) {
    if (route.method === "*") router.all(route.path, route)
    else router.on(route.method, route.path, route)
  }
  return (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
    let found = router.find(request.method, request.url)
    if (found === undefined && request.method === "HEAD") found = router.find("GET", request.url)
    if (found === undefined) return Effect.fail(new HttpServerError.RouteNotFound({ request }))
    const route = found.handler
    const run = compiledRoutes.get(route)
    const { params, searchParams } = found
    const response = run !== undefined
      ? run({ request, params, query: searchParams })
      : Effect.flatMap(
        Effect.mapInputContext(route.handler as Effect.Effect<unknown, unknown>, (context: Context.Context<never>) =>
          Context.add(
            Context.add(context, HttpServerRequest.ParsedSearchParams, searchParams),
            HttpRouter.RouteContext,
            new RouteContextImpl(route, params)
          )),
        (value) =>
          HttpServerResponse.isServerResponse(value)
            ? Effect.succeed(value)
            : HttpServerRespondable.toResponse(value as HttpServerRespondable.Respondable)
      )
    const routed = Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, unknown>((fiber) => {
      const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
      if (span._tag === "Some" && span.value._tag === "Span") span.value.attribute("http.route", route.path)
      return response
    })
    return route.uninterruptible ? routed : Effect.interruptible(routed)
  }
}
