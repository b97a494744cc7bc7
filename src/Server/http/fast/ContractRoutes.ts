/**
 * The contract's endpoints as routes of the fast path, compiled once from the `HttpApi` contract and the handlers of
 * its groups.
 *
 * `HttpApiBuilder.group` turns each handler into a route that, per request, runs a generator over the path, payload,
 * header and query decoders, merges the group's whole service context into the request's, and looks the success
 * schema's status and encoding up in its annotations (for each answer). A group built with `HandlerGroups.group`
 * (src/Server/http/HandlerGroups.ts, neutral to the serving path) is still an ordinary `HttpApiBuilder` group, and
 * its handlers are also recorded in the `HandlerGroups.Registry` the fast path provides; {@link routes} compiles each
 * endpoint once from public reflection (`HttpApiEndpoint`'s schemas, `HttpApiSchema`'s annotations): the same
 * decoders (the contract's schemas, in `HttpApiBuilder`'s order: path, payload, headers, query; synchronously when
 * the schema allows it, no effect per step), the same handler, the same encoder (the success schemas in order, as
 * `HttpApiBuilder`'s union of them; a JSON answer written to a buffer from Node's pool), with the status, encoding and
 * emptiness of the answer read from the contract when building. The handler runs in the request's own context (which
 * the Node handler builds over the groups' services: no merge per request). {@link dispatcher} routes requests with
 * the router `HttpRouter` uses (`find-my-way-ts`).
 *
 * Every endpoint of the registered groups must compile: an endpoint with its own middleware or a multipart stream
 * payload makes {@link routes} fail when the service starts (the stock path serves such a contract). Decoding
 * failures are `HttpApiDecodeError`s as `HttpApiBuilder` makes them; everything else fails as the handler fails.
 *
 * Source: docs/decisions/0001-two-serving-paths.md; docs/decisions/0002-what-the-fast-paths-save.md; the contract
 * (src/Contract/Api.ts).
 *
 * @since 0.1.0
 */
import {
  HttpApiError,
  type HttpApiEndpoint,
  HttpApiSchema,
  HttpMethod,
  HttpServerError,
  type HttpServerRequest,
  HttpServerResponse,
  UrlParams
} from "@effect/platform"
import { Context, Effect, Either, Exit, Option, ParseResult, Schema, Tracer } from "effect"
import * as FindMyWay from "find-my-way-ts"
import type { BufferedRequest } from "../../pipeline/RequestBody.js"
import * as HandlerGroups from "../HandlerGroups.js"
import * as QueryParams from "./QueryParams.js"

/** A parse issue that means "not synchronously" (async schema, or a schema that needs a service): use the effect. */
const needsEffect = (issue: ParseResult.ParseIssue) => issue._tag === "Forbidden"

type Answer = Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError>

/** A schema's synchronous (`Either`) and effectful decoder, or encoder. */
interface Codec {
  readonly sync: (input: unknown) => Either.Either<unknown, ParseResult.ParseIssue>
  readonly effect: (input: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
}

const decoder = (schema: Schema.Schema.Any): Codec => ({
  sync: ParseResult.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>),
  effect: Schema.decodeUnknown(schema as Schema.Schema<unknown, unknown>)
})

const decodeFailure = (error: ParseResult.ParseError) => HttpApiError.HttpApiDecodeError.refailParseError(error)

/** The answer of one success schema to an encoded value: status, content type and emptiness read once. */
const responder = (schema: Schema.Schema<unknown, unknown>): (data: unknown) => Answer => {
  const status = HttpApiSchema.getStatusSuccessAST(schema.ast)
  if (HttpApiSchema.isVoid(schema.ast)) return () => Effect.sync(() => HttpServerResponse.empty({ status }))
  const encoding = HttpApiSchema.getEncoding(schema.ast)
  const options = { status, contentType: encoding.contentType }
  return (data) => {
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
}

/**
 * The encoder of an endpoint's answer: the first success schema (in the contract's order) that encodes the value
 * answers it, as `HttpApiBuilder`'s union of the success schemas does; synchronously when the schema can (else with
 * its effectful encoder).
 */
const valueEncoder = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): (value: unknown) => Answer => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, endpoint.successSchema)
  const members = [...schemas].map((member) => {
    const schema = member as Schema.Schema<unknown, unknown>
    return { sync: ParseResult.encodeUnknownEither(schema), effect: Schema.encode(schema), respond: responder(schema) }
  })
  return (value) => {
    let issue: ParseResult.ParseIssue | undefined
    for (let index = 0; index < members.length; index++) {
      const member = members[index]
      const encoded = member.sync(value)
      if (Either.isRight(encoded)) return member.respond(encoded.right)
      if (needsEffect(encoded.left)) {
        return Effect.firstSuccessOf(members.slice(index).map((rest) => Effect.flatMap(rest.effect(value), rest.respond)))
      }
      issue ??= encoded.left
    }
    return Effect.fail(new ParseResult.ParseError({ issue: issue! }))
  }
}

/**
 * {@link valueEncoder}, with the answers of values registered with `HandlerGroups.encodeOnce` kept: the successful
 * `Exit` holding the response (immutable), its body copied out of Node's shared pool so that it does not keep a
 * pool slab alive.
 */
const successEncoder = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): (value: unknown) => Answer => {
  const encode = valueEncoder(endpoint)
  const answers = new WeakMap<object, Answer>()
  return (value) => {
    if (!HandlerGroups.isEncodedOnce(value)) return encode(value)
    const known = answers.get(value)
    if (known !== undefined) return known
    const answer = encode(value)
    if (!Exit.isExit(answer) || !Exit.isSuccess(answer)) return answer
    const response = answer.value as HttpServerResponse.HttpServerResponse
    const body = response.body
    const kept = body._tag === "Uint8Array"
      ? Exit.succeed(HttpServerResponse.uint8Array(Uint8Array.from(body.body), {
        status: response.status,
        contentType: body.contentType
      }))
      : answer
    answers.set(value, kept)
    return kept
  }
}

/** A value of the input, or a defect reading it. */
type Read = { readonly value: unknown } | { readonly defect: unknown }

/** The body of a request as `HttpApiBuilder` hands it to a payload decoder (by Content-Type; JSON by default). */
const requestPayload = (request: BufferedRequest, urlParams: Readonly<Record<string, string | Array<string>>>): Read => {
  if (!HttpMethod.hasBody(request.method)) return { value: urlParams }
  const header = request.headers["content-type"]
  const contentType = header ? header.toLowerCase().trim() : "application/json"
  try {
    if (contentType.includes("application/json")) return { value: request.jsonNow() }
    if (contentType.includes("x-www-form-urlencoded")) {
      return { value: UrlParams.toRecord(UrlParams.fromInput(new URLSearchParams(request.textNow()))) }
    }
    if (contentType.startsWith("text/")) return { value: request.textNow() }
    return { value: new Uint8Array(request.bodyBytes ?? []) }
  } catch (defect) {
    return { defect }
  }
}

/**
 * What a route is run with: the request (its body in memory: the request pipeline reads it first), its route
 * parameters and its parsed query.
 */
export interface RouteInput {
  readonly request: BufferedRequest
  readonly params: Readonly<Record<string, string | undefined>>
  readonly query: Readonly<Record<string, string | Array<string>>>
}

/** One decoding step of a request: where its input comes from and where its output goes in the handler's input. */
interface Step {
  readonly key: "path" | "payload" | "headers" | "urlParams"
  readonly decoder: Codec
  readonly read: (input: RouteInput) => Read
}

/** The decoding steps of an endpoint, in the order of `HttpApiBuilder`: path, payload, headers, query. */
const stepsOf = (item: HttpApiBuilderItem): Array<Step> => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  const steps: Array<Step> = []
  if (Option.isSome(endpoint.pathSchema)) {
    steps.push({ key: "path", decoder: decoder(endpoint.pathSchema.value), read: (input) => ({ value: input.params }) })
  }
  if (!item.withFullRequest && Option.isSome(endpoint.payloadSchema)) {
    const read = (input: RouteInput) => requestPayload(input.request, input.query)
    steps.push({ key: "payload", decoder: decoder(endpoint.payloadSchema.value), read })
  }
  if (Option.isSome(endpoint.headersSchema)) {
    const read = (input: RouteInput) => ({ value: input.request.headers })
    steps.push({ key: "headers", decoder: decoder(endpoint.headersSchema.value), read })
  }
  if (Option.isSome(endpoint.urlParamsSchema)) {
    const ast = endpoint.urlParamsSchema.value.ast
    const read = (input: RouteInput) => ({ value: QueryParams.normalize(input.query, ast) })
    steps.push({ key: "urlParams", decoder: decoder(endpoint.urlParamsSchema.value), read })
  }
  return steps
}

/** A handled endpoint as `HandlerGroups.Registration` records it. */
type HttpApiBuilderItem = HandlerGroups.Registration["items"][number]

/** One compiled route: its operation, where it is, and what it runs for a request. */
export interface CompiledRoute {
  /** `group.endpoint`, e.g. `boxes.create`. */
  readonly name: string
  readonly method: HttpMethod.HttpMethod
  readonly path: string
  /** As `HttpApiBuilder`'s `handleRaw`/`handle` option: the handler is not interrupted when its client leaves. */
  readonly uninterruptible: boolean
  readonly run: (input: RouteInput) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
}

/**
 * The route of one handled endpoint, or why it cannot be compiled (see the module docs). It needs every service of
 * its group in the context of the request. Per request: the decoders run synchronously (no effect per step) when
 * the schemas allow it, then the handler, then the encoder.
 */
export const compile = (name: string, item: HttpApiBuilderItem): CompiledRoute | string => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  if (endpoint.middlewares.size > 0) return "it has middleware of its own"
  if (Option.isSome(endpoint.payloadSchema) && HttpApiSchema.getMultipartStream(endpoint.payloadSchema.value.ast) !== undefined) {
    return "its payload is a multipart stream"
  }
  const encodeSuccess = successEncoder(endpoint)
  const steps = stepsOf(item)
  const handler = item.handler

  const respond = (input: Record<string, unknown>): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> =>
    Effect.catchIf(
      Effect.flatMap(handler(input) as Effect.Effect<unknown, unknown>, (response: unknown) =>
        HttpServerResponse.isServerResponse(response) ? Effect.succeed(response) : encodeSuccess(response)),
      // As HttpApiBuilder: a schema failure of the handler or the encoder is an HttpApiDecodeError too.
      ParseResult.isParseError,
      decodeFailure
    )

  /** Steps `from` onwards with the schemas' effectful decoders (a schema that cannot decode now), then the handler. */
  const withEffects = (from: number, route: RouteInput, input: Record<string, unknown>) =>
    Effect.flatMap(
      Effect.forEach(steps.slice(from), (step) => {
        const raw = step.read(route)
        if ("defect" in raw) return Effect.die(raw.defect)
        return Effect.map(Effect.catchAll(step.decoder.effect(raw.value), decodeFailure), (value) => {
          input[step.key] = value
        })
      }, { discard: true }),
      () => respond(input)
    )

  const run = (route: RouteInput): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
    const input: Record<string, unknown> = { request: route.request }
    for (let index = 0; index < steps.length; index++) {
      const step = steps[index]
      const raw = step.read(route)
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
  return { name, method: endpoint.method, path: endpoint.path, uninterruptible: item.uninterruptible, run }
}

/** The routes of the contract and the services they need in the context of each request. */
export interface ContractRoutes {
  readonly routes: ReadonlyArray<CompiledRoute>
  /** Every service of the groups built with `HandlerGroups.group`: the base of each request's context. */
  readonly services: Context.Context<never>
}

/**
 * The compiled route of every endpoint of the groups in the `HandlerGroups.Registry`; dies, naming the endpoint, when
 * one cannot be compiled.
 */
export const routes: Effect.Effect<ContractRoutes, never, HandlerGroups.Registry> = Effect.gen(function*() {
  const registry = yield* HandlerGroups.Registry
  const compiled: Array<CompiledRoute> = []
  let services = Context.empty() as Context.Context<never>
  for (const registration of registry.all()) {
    services = Context.merge(services, registration.context)
    for (const item of registration.items) {
      const name = `${registration.group.identifier}.${item.endpoint.name}`
      const route = compile(name, item)
      if (typeof route === "string") return yield* Effect.dieMessage(`the fast path cannot serve ${name}: ${route}`)
      compiled.push(route)
    }
  }
  return { routes: compiled, services }
})

/**
 * Routes a request as `HttpRouter.toHttpApp` does (the same router, `find-my-way-ts`, with `config`; `HEAD` falls
 * back to `GET`; no route is `RouteNotFound`; a route is interruptible unless marked otherwise; the route's path on
 * the parent span as `http.route`).
 */
export const dispatcher = (routes: ReadonlyArray<CompiledRoute>, config: Partial<FindMyWay.RouterConfig>) => {
  const router = FindMyWay.make<CompiledRoute>(config)
  for (const route of routes) router.on(route.method, route.path as FindMyWay.PathInput, route)
  return (request: BufferedRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
    let found = router.find(request.method, request.url)
    if (found === undefined && request.method === "HEAD") found = router.find("GET", request.url)
    if (found === undefined) {
      return Effect.fail(new HttpServerError.RouteNotFound({ request: request as HttpServerRequest.HttpServerRequest }))
    }
    const route = found.handler
    const response = route.run({ request, params: found.params, query: found.searchParams })
    const routed = Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, unknown>((fiber) => {
      const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
      if (span._tag === "Some" && span.value._tag === "Span") span.value.attribute("http.route", route.path)
      return response
    })
    return route.uninterruptible ? routed : Effect.interruptible(routed)
  }
}
