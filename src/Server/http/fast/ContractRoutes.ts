/**
 * The contract's endpoints as routes of the fast path, compiled once from the `HttpApi` contract and the handlers of
 * its groups.
 *
 * `HttpApiBuilder.group` turns each handler into a route that, per request, runs a generator over its decoders,
 * merges the group's services into the request's context and reads the success schema's annotations for each answer.
 * A group built with `HandlerGroups.group` (neutral to the serving path) is recorded in the `HandlerGroups.Registry`
 * too; {@link routes} compiles each of its endpoints once from public reflection (`HttpApiEndpoint`'s schemas,
 * `HttpApiSchema`'s annotations): the same decoders in `HttpApiBuilder`'s order (path, payload, headers, query), the
 * same handler, the success schemas as `HttpApiBuilder`'s union of them, with each answer's status and encoding read
 * when building. A schema that runs synchronously is applied without an effect. {@link dispatcher} routes requests
 * with the router `HttpRouter` uses (`find-my-way-ts`).
 *
 * An endpoint with its own middleware or a multipart stream payload makes {@link routes} fail when the service starts
 * (the stock path serves such a contract). Decoding failures are `HttpApiDecodeError`s as `HttpApiBuilder` makes
 * them; everything else fails as the handler fails.
 *
 * Source: docs/decisions/0001-two-serving-paths.md; docs/decisions/0002-what-the-fast-paths-save.md.
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
import { Context, Effect, Either, Exit, Option, ParseResult, type Schema, Tracer } from "effect"
import * as FindMyWay from "find-my-way-ts"
import type { BufferedRequest } from "../../pipeline/RequestBody.js"
import * as HandlerGroups from "../HandlerGroups.js"
import * as QueryParams from "./QueryParams.js"

type Answer = Effect.Effect<HttpServerResponse.HttpServerResponse, ParseResult.ParseError>

/**
 * A schema's decoder or encoder (`ParseResult.decodeUnknown`, `encodeUnknown`): its outcome is an `Either` when the
 * schema ran synchronously, else an effect to run.
 */
type Parse = (input: unknown) => Effect.Effect<unknown, ParseResult.ParseIssue>

/**
 * `onValue` of what `parsed` gives, or `onIssue` of why it fails: at once when `parsed` is an `Either`, else once it
 * has run.
 */
const afterParse = <A, E>(
  parsed: Effect.Effect<unknown, ParseResult.ParseIssue>,
  onIssue: (issue: ParseResult.ParseIssue) => Effect.Effect<A, E>,
  onValue: (value: unknown) => Effect.Effect<A, E>
): Effect.Effect<A, E> => {
  if (!Either.isEither(parsed)) return Effect.matchEffect(parsed, { onFailure: onIssue, onSuccess: onValue })
  const outcome = parsed as Either.Either<unknown, ParseResult.ParseIssue>
  return Either.isRight(outcome) ? onValue(outcome.right) : onIssue(outcome.left)
}

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
 * answers it, as `HttpApiBuilder`'s union of the success schemas does; a value none encodes fails with the first
 * schema's issue.
 */
const valueEncoder = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): (value: unknown) => Answer => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, endpoint.successSchema)
  const members = [...schemas].map((member) => {
    const schema = member as Schema.Schema<unknown, unknown>
    return { encode: ParseResult.encodeUnknown(schema) as Parse, respond: responder(schema) }
  })
  const from = (index: number, value: unknown, first: ParseResult.ParseIssue | undefined): Answer => {
    if (index === members.length) return Effect.fail(new ParseResult.ParseError({ issue: first! }))
    const member = members[index]
    return afterParse(member.encode(value), (issue) => from(index + 1, value, first ?? issue), member.respond)
  }
  return (value) => from(0, value, undefined)
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
  readonly decode: Parse
  readonly read: (input: RouteInput) => Read
}

/** The decoding steps of an endpoint, in the order of `HttpApiBuilder`: path, payload, headers, query. */
const stepsOf = (item: HttpApiBuilderItem): Array<Step> => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  const steps: Array<Step> = []
  const add = (key: Step["key"], schema: Schema.Schema.Any, read: Step["read"]) =>
    steps.push({ key, decode: ParseResult.decodeUnknown(schema as Schema.Schema<unknown, unknown>) as Parse, read })
  if (Option.isSome(endpoint.pathSchema)) add("path", endpoint.pathSchema.value, (input) => ({ value: input.params }))
  if (!item.withFullRequest && Option.isSome(endpoint.payloadSchema)) {
    add("payload", endpoint.payloadSchema.value, (input) => requestPayload(input.request, input.query))
  }
  if (Option.isSome(endpoint.headersSchema)) {
    add("headers", endpoint.headersSchema.value, (input) => ({ value: input.request.headers }))
  }
  if (Option.isSome(endpoint.urlParamsSchema)) {
    const ast = endpoint.urlParamsSchema.value.ast
    add("urlParams", endpoint.urlParamsSchema.value, (input) => ({ value: QueryParams.normalize(input.query, ast) }))
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

  /** Decodes steps `from` onwards into `input`, then runs the handler. */
  const decodeFrom = (
    from: number,
    route: RouteInput,
    input: Record<string, unknown>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
    for (let index = from; index < steps.length; index++) {
      const step = steps[index]
      const raw = step.read(route)
      if ("defect" in raw) return Effect.die(raw.defect)
      const decoded = step.decode(raw.value)
      if (Either.isEither(decoded) && Either.isRight(decoded)) {
        input[step.key] = decoded.right
        continue
      }
      return afterParse(decoded, (issue) => decodeFailure(new ParseResult.ParseError({ issue })), (value) => {
        input[step.key] = value
        return decodeFrom(index + 1, route, input)
      })
    }
    return respond(input)
  }

  const run = (route: RouteInput) => decodeFrom(0, route, { request: route.request })
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
