/**
 * The Node request handler of the local service: the contract's routes (ContractRoutes.ts: compiled from the
 * `HttpApi` contract and the handlers of its groups), dispatched with only the machinery the service needs, and
 * answers written straight to Node's response.
 *
 * A `/v1` request: steps 1-5 of the request pipeline (RequestPipeline.ts: draining, declared length,
 * authentication, credits, the new-organization cap) run when it arrives, as plain code; its body is read with
 * Node's events; then one fiber (uninterruptible, except where the router and the fault injector allow it) runs
 * idempotency and the route, with the caller, route parameters and query put into the request's own context; every
 * failure is answered with the error envelope (ErrorResponse.ts). The answer is written when the fiber ends. With a
 * fault configured, the whole pipeline runs in the fiber behind the fault injector instead, faults first.
 *
 * Left out compared with `HttpApiBuilder.httpApp` served by `HttpServer.serve`: the server span (on with
 * `LocalServiceConfig.requestTracing`), pre-response handlers, the contract-level
 * `Authorization` middleware (the pipeline already resolved the caller: see {@link make}), the error encoding of the
 * contract (every failure is answered by ErrorResponse.ts, as before), context merges and copies per request, and
 * the fault injector when no fault is configured. `GET /openapi.json` is answered without a fiber, from bytes
 * encoded once.
 *
 * Source: issue 6 (optimization: "cut machinery per request, not behaviour"); ../shared/notes/effect-3.22.md
 * (per-request costs of the Effect HTTP stack).
 *
 * @since 0.1.0
 */
import {
  Cookies,
  Headers,
  HttpApi,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  type HttpServerResponse,
  HttpTraceContext
} from "@effect/platform"
import { Cause, Chunk, Context, Effect, type Fiber, Option, Runtime, RuntimeFlags, Scope, Stream } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import type { ReadableStream as NodeWebReadableStream } from "node:stream/web"
import { pipeline as pipeStreams } from "node:stream/promises"
import * as ApiError from "../../../ApiError.js"
import { Authorization } from "../../../Contract/Api.js"
import { Principal } from "../../../Contract/Principal.js"
import * as ContractRoutes from "./ContractRoutes.js"
import * as ErrorResponse from "../ErrorResponse.js"
import { FaultInjection } from "../../pipeline/FaultInjection.js"
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import { LocalRequest } from "./NodeRequest.js"
import * as RequestPipeline from "../../pipeline/RequestPipeline.js"

/** Runs `effect` with a fresh `Scope` in the fiber's own context (see `make`), closed with its exit. */
const withRequestScope = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Scope.make(), (scope) =>
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      fiber.currentContext.unsafeMap.set(Scope.Scope.key, scope)
      return Effect.onExit(effect, (exit) => Scope.close(scope, exit))
    }))

/** A Node `request` listener. */
export type NodeListener = (request: IncomingMessage, response: ServerResponse) => void

/** Routes served beside `/v1`: a fixed answer, or an app run in the request's fiber. */
export interface ExtraRoutes {
  /** Answers written without a fiber, by exact path (any method): the bytes and their content type. */
  readonly fixed: ReadonlyMap<string, { readonly body: Uint8Array; readonly contentType: string }>
  /** Paths starting with this prefix go to {@link ExtraRoutes.app} instead of the contract. */
  readonly prefix: string
  /** The app of {@link ExtraRoutes.prefix}: the request and its path without the query. */
  readonly app: (
    request: HttpServerRequest.HttpServerRequest,
    path: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}

const headersOf = (response: HttpServerResponse.HttpServerResponse): Record<string, string | Array<string>> => {
  if (Cookies.isEmpty(response.cookies)) return response.headers
  const headers: Record<string, string | Array<string>> = { ...response.headers }
  const toSet = Cookies.toSetCookieHeaders(response.cookies)
  if (headers["set-cookie"] !== undefined) toSet.push(headers["set-cookie"] as string)
  headers["set-cookie"] = toSet
  return headers
}

const isPipeable = (raw: unknown): raw is NodeJS.ReadableStream =>
  typeof raw === "object" && raw !== null && "pipe" in raw && typeof raw.pipe === "function"

/**
 * Writes `response` to Node's response of `request` now, when its body is in memory (empty, bytes, or a raw string
 * or bytes); false when it must be written with {@link writeResponse} (a stream, a pipeable body, form data).
 * Nothing is written to a response that already ended or whose connection is gone (true).
 */
export const writeNow = (request: LocalRequest, response: HttpServerResponse.HttpServerResponse): boolean => {
  const nodeResponse = request.response
  if (nodeResponse.writableEnded || nodeResponse.destroyed) return true
  const body = response.body
  switch (body._tag) {
    case "Empty":
      nodeResponse.writeHead(response.status, headersOf(response))
      nodeResponse.end()
      return true
    case "Uint8Array":
      nodeResponse.writeHead(response.status, headersOf(response))
      nodeResponse.end(body.body)
      return true
    case "Raw":
      if (isPipeable(body.body)) return false
      nodeResponse.writeHead(response.status, headersOf(response))
      nodeResponse.end(body.body as string | Uint8Array)
      return true
    default:
      return false
  }
}

/**
 * {@link writeNow}, never throwing: when Node refuses the answer (e.g. a header value it cannot send), a 500
 * envelope goes out instead if nothing was sent yet, else the connection is closed.
 */
export const writeSafely = (request: LocalRequest, response: HttpServerResponse.HttpServerResponse): boolean => {
  try {
    return writeNow(request, response)
  } catch {
    const nodeResponse = request.response
    if (nodeResponse.headersSent) {
      nodeResponse.destroy()
      return true
    }
    try {
      return writeNow(request, ErrorResponse.fromApiError(ApiError.make.server("The answer could not be written.")))
    } catch {
      nodeResponse.destroy()
      return true
    }
  }
}

/**
 * Writes `response` to Node's response of `request` (status, headers, cookies, body). A streamed body is written
 * chunk by chunk, waiting for `drain`, interruptibly (a client that leaves stops the stream).
 */
export const writeResponse = (
  request: LocalRequest,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<void> => {
  if (writeNow(request, response)) return Effect.void
  const nodeResponse = request.response
  const headers = headersOf(response)
  const body = response.body
  switch (body._tag) {
    case "Empty":
    case "Uint8Array":
      return Effect.void
    case "Raw": {
      // A pipeable body (writeNow wrote the others).
      nodeResponse.writeHead(response.status, headers)
      const raw = body.body as NodeJS.ReadableStream
      return Effect.interruptible(Effect.catchAllCause(
        Effect.tryPromise((signal) => pipeStreams(raw, nodeResponse, { signal, end: true })),
        (cause) => Effect.zipRight(endAfterFailure(nodeResponse), Effect.logError("writing a raw body failed", cause))
      ))
    }
    case "FormData": {
      const web = new Response(body.formData)
      const formHeaders: Record<string, string | Array<string>> = { ...headers }
      web.headers.forEach((value, key) => {
        formHeaders[key] = value
      })
      nodeResponse.writeHead(response.status, formHeaders)
      return Effect.interruptible(Effect.catchAllCause(
        Effect.tryPromise((signal) => pipeStreams(Readable.fromWeb(web.body as NodeWebReadableStream, { signal }), nodeResponse)),
        (cause) => Effect.zipRight(endAfterFailure(nodeResponse), Effect.logError("writing a form body failed", cause))
      ))
    }
    case "Stream": {
      nodeResponse.writeHead(response.status, headers)
      const drained = Effect.unsafeMakeLatch()
      nodeResponse.on("drain", () => drained.unsafeOpen())
      return body.stream.pipe(
        Stream.runForEachChunk((chunk) => {
          const parts = Chunk.toReadonlyArray(chunk)
          let needDrain = false
          for (const part of parts) {
            if (!nodeResponse.write(part) && !needDrain) {
              needDrain = true
              drained.unsafeClose()
            }
          }
          return needDrain ? drained.await : Effect.void
        }),
        Effect.interruptible,
        Effect.matchCauseEffect({
          onSuccess: () => Effect.sync(() => nodeResponse.end()),
          onFailure: (cause) =>
            Cause.isInterruptedOnly(cause)
              ? endAfterFailure(nodeResponse)
              : Effect.zipRight(endAfterFailure(nodeResponse), Effect.logError("a streamed answer failed", cause))
        })
      )
    }
  }
}

/** Ends a response whose body could not be written: a 500 when nothing was sent yet, else the end of what was. */
const endAfterFailure = (nodeResponse: ServerResponse) =>
  Effect.sync(() => {
    if (!nodeResponse.headersSent) nodeResponse.writeHead(500)
    if (!nodeResponse.writableEnded) nodeResponse.end()
  })

/**
 * A server span around a request's answer (`LocalServiceConfig.requestTracing`), with the attributes of
 * `@effect/platform`'s `HttpMiddleware.tracer`: method, URL, user agent, the request headers (redacted by
 * `Headers.currentRedactedNames`: `authorization` among them), client address, status and response headers; the
 * parent from the request's trace headers.
 */
export const traceRequest = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const redactedNames = fiber.getFiberRef(Headers.currentRedactedNames)
    const name = Context.get(fiber.currentContext, HttpMiddleware.SpanNameGenerator)(request)
    return Effect.useSpan(name, {
      parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)),
      kind: "server",
      captureStackTrace: false
    }, (span) => {
      span.attribute("http.request.method", request.method)
      const queryAt = request.url.indexOf("?")
      span.attribute("url.path", queryAt < 0 ? request.url : request.url.slice(0, queryAt))
      if (queryAt >= 0) span.attribute("url.query", request.url.slice(queryAt + 1))
      if (request.headers["user-agent"] !== undefined) span.attribute("user_agent.original", request.headers["user-agent"])
      const requestHeaders = Headers.redact(request.headers, redactedNames)
      for (const header in requestHeaders) span.attribute(`http.request.header.${header}`, String(requestHeaders[header]))
      if (request.remoteAddress._tag === "Some") span.attribute("client.address", request.remoteAddress.value)
      return Effect.tap(Effect.withParentSpan(app, span), (response) => {
        span.attribute("http.response.status_code", response.status)
        const responseHeaders = Headers.redact(response.headers, redactedNames)
        for (const header in responseHeaders) span.attribute(`http.response.header.${header}`, String(responseHeaders[header]))
      })
    })
  })

/**
 * The context map of one request: its own entries (the request, the caller, the route), over the services shared by
 * every request, without copying them. Reads fall back to the shared services; iteration and `size` show both, own
 * entries winning, so a copy made by `Context.add`, `Context.merge` and the like is the plain union.
 */
export class RequestContextMap extends Map<string, unknown> {
  constructor(private readonly shared: ReadonlyMap<string, unknown>) {
    super()
  }

  override has(key: string): boolean {
    return super.has(key) || this.shared.has(key)
  }

  override get(key: string): unknown {
    return super.has(key) ? super.get(key) : this.shared.get(key)
  }

  override get size(): number {
    let size = this.shared.size
    for (const key of super.keys()) if (!this.shared.has(key)) size++
    return size
  }

  override *entries(): MapIterator<[string, unknown]> {
    for (const entry of this.shared) if (!super.has(entry[0])) yield entry
    yield* super.entries()
  }

  override [Symbol.iterator](): MapIterator<[string, unknown]> {
    return this.entries()
  }

  override *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key
  }

  override *values(): MapIterator<unknown> {
    for (const [, value] of this.entries()) yield value
  }

  override forEach(callback: (value: unknown, key: string, map: Map<string, unknown>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this)
  }
}

/** The answer to a cause that reached the top of a request: interruptions stay interruptions. */
const envelope = (cause: Cause.Cause<unknown>, request: HttpServerRequest.HttpServerRequest) =>
  Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : ErrorResponse.fromCause(cause, request)

/**
 * Builds the Node `request` listener of the local service: `/v1` through the fault injector (only when a fault is
 * configured) and the request pipeline into the contract's routes; the paths of `extra` beside it.
 *
 * The contract's `Authorization` middleware (the only contract-level middleware; anything else is refused when
 * building) is satisfied by the pipeline, which resolves the caller before routing and provides it as `Principal`
 * to the handlers: no FiberRef hand-off, no second look at the `Authorization` header.
 */
export const make = (extra: ExtraRoutes) =>
  Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const { api } = yield* HttpApi.Api
    for (const middleware of api.middlewares) {
      if ((middleware as unknown) !== Authorization) {
        return yield* Effect.dieMessage(`NodeHandler: unsupported contract-level middleware ${middleware.key}`)
      }
    }
    const contract = yield* ContractRoutes.routes
    const dispatch = ContractRoutes.dispatcher(contract.routes, RequestPipeline.routerConfig)
    const pipeline = yield* RequestPipeline.makePipeline
    const faults = yield* FaultInjection
    const runtime = yield* Effect.runtime<never>()
    // The context of every request: the services of the contract's groups (what their handlers use), without the
    // groups' layer scope, shared (RequestContextMap), plus the request; the caller is added once known. The fiber
    // refs are the service's (logger, tracer, clock: a TestClock in tests). Fibers start uninterruptible (the router
    // makes a handler interruptible, the fault injector its latency), as `HttpServer.serve` runs requests.
    const services = Context.omit(Scope.Scope)(contract.services).unsafeMap
    const fiberRefs = runtime.fiberRefs
    const runtimeFlags = RuntimeFlags.disable(runtime.runtimeFlags, RuntimeFlags.Interruption)
    const fork = <A>(request: LocalRequest, effect: Effect.Effect<A, unknown>) => {
      const context = new RequestContextMap(services)
      context.set(HttpServerRequest.HttpServerRequest.key, request)
      return Runtime.runFork(Runtime.make({ context: Context.unsafeMake(context), fiberRefs, runtimeFlags }), effect)
    }

    // The caller, the route parameters and the query go into the request's own context (a map made for this request
    // when its fiber started, or a copy of it made in this request), instead of more copies of the whole context.
    const withCaller = (principal: Principal["Type"], request: HttpServerRequest.HttpServerRequest) =>
      Effect.catchAllCause(
        Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, unknown>((fiber) => {
          const context = fiber.currentContext.unsafeMap
          context.set(Principal.key, principal)
          return dispatch(context, request)
        }),
        (cause) => envelope(cause, request)
      )

    /**
     * The answer of one request: its app, with a `Scope` of its own in the request's context (closed with the app's
     * exit, so a handler's finalizers run when it ends, as under `HttpServer.serve`), every failure but an
     * interruption answered with the envelope.
     */
    const answer = (
      request: LocalRequest,
      app: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>
    ) =>
      Effect.catchAllCause(
        withRequestScope(config.requestTracing ? traceRequest(request, app) : app),
        (cause) => envelope(cause, request)
      ) as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

    /**
     * Runs one request's app in a fiber of its own and answers with its outcome; `started` (a `/v1` request) is
     * counted out when the fiber ends. A client that leaves interrupts the fiber.
     */
    const serve = (
      request: LocalRequest,
      app: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>,
      started: RequestPipeline.Started<unknown, unknown> | undefined
    ) => {
      const nodeResponse = request.response
      const main = fork(request, answer(request, app))
      let fiber: Fiber.RuntimeFiber<unknown, unknown> = main
      main.addObserver((exit) => {
        started?.done()
        if (exit._tag === "Failure") {
          // Interrupted (the client left, or an injected reset): nothing to answer, unless the connection is still up.
          if (!nodeResponse.writableEnded && !nodeResponse.destroyed) {
            writeSafely(request, ErrorResponse.fromApiError(ApiError.make.server("The request was interrupted.")))
          }
          return
        }
        // Answers in memory are written now; a streamed one in a fiber of its own, which a client abort interrupts.
        if (!writeSafely(request, exit.value)) {
          fiber = fork(
            request,
            Effect.catchAllCause(Effect.suspend(() => writeResponse(request, exit.value)), (cause) =>
              Cause.isInterruptedOnly(cause)
                ? endAfterFailure(nodeResponse)
                : Effect.zipRight(endAfterFailure(nodeResponse), Effect.logError("an answer could not be written", cause)))
          )
        }
      })
      nodeResponse.on("close", () => {
        if (nodeResponse.writableEnded) return
        if (started !== undefined) faults.countClientAbort(request)
        fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
      })
    }

    /** Answers a `/v1` request refused before its fiber started (draining, too large, unreadable). */
    const refuse = (
      request: LocalRequest,
      started: RequestPipeline.Started<unknown, unknown>,
      refusal: HttpServerResponse.HttpServerResponse
    ) => {
      started.done()
      if (request.response.destroyed) faults.countClientAbort(request)
      else writeSafely(request, refusal)
    }

    const listener: NodeListener = (source, nodeResponse) => {
      try {
        receive(source, nodeResponse)
      } catch (error) {
        // Never expected: the steps before the fiber are plain reads of in-memory state.
        runFork(Effect.logError("the local service could not take a request", error))
        writeSafely(
          LocalRequest.fromNode(source, nodeResponse),
          ErrorResponse.fromApiError(ApiError.make.server())
        )
      }
    }

    const receive = (source: IncomingMessage, nodeResponse: ServerResponse) => {
      const url = source.url ?? "/"
      const queryAt = url.indexOf("?")
      const path = queryAt < 0 ? url : url.slice(0, queryAt)
      const fixed = extra.fixed.get(path)
      if (fixed !== undefined) {
        nodeResponse.writeHead(200, { "content-type": fixed.contentType, "content-length": fixed.body.byteLength })
        nodeResponse.end(fixed.body)
        return
      }
      const request = LocalRequest.fromNode(source, nodeResponse)
      if (path.startsWith(extra.prefix)) return serve(request, extra.app(request, path), undefined)
      faults.countRequest()
      const started = pipeline.start(request, withCaller)
      // With faults, the fault comes first: the whole pipeline runs in the request's fiber.
      if (faults.enabled) return serve(request, faults.wrap(started.effect), started)
      // Without: admission and the body are taken here, and the fiber starts with the body in memory: a fiber
      // suspended on the body kept far more garbage alive under load (docs/decisions/0002-what-the-fast-paths-save.md).
      const refused = started.admit()
      if (refused !== undefined) return refuse(request, started, refused)
      started.readBody((refusal) =>
        refusal === undefined ? serve(request, started.effect, started) : refuse(request, started, refusal)
      )
    }
    const runFork = Runtime.runFork(Runtime.make({ context: Context.empty(), fiberRefs, runtimeFlags: runtime.runtimeFlags }))
    return listener
  })
