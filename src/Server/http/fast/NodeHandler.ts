/**
 * The Node request handler of the local service: the contract's routes (ContractRoutes.ts: compiled from the
 * `HttpApi` contract and the handlers of its groups), dispatched with only the machinery the service needs, and
 * answers written straight to Node's response.
 *
 * A `/v1` request: steps 1-5 of the request pipeline (RequestPipeline.ts: draining, declared length,
 * authentication, credits, the new-organization cap) run when it arrives, in a short fiber of their own; its body is
 * read with Node's events; then one fiber (uninterruptible, except where the router and the fault injector allow it)
 * runs idempotency and the route, with the caller, route parameters and query provided to the route; every failure
 * is answered with the error envelope (ErrorResponse.ts). The answer is written when the fiber ends. With a fault
 * configured, the whole pipeline runs in the fiber behind the fault injector instead, faults first.
 *
 * Left out compared with `HttpApiBuilder.httpApp` served by `HttpServer.serve`: the server span (on with
 * `LocalServiceConfig.requestTracing`), pre-response handlers, the contract-level
 * `Authorization` middleware (the pipeline already resolved the caller: see {@link make}), the error encoding of the
 * contract (every failure is answered by ErrorResponse.ts, as before), and the fault injector when no fault is
 * configured. `GET /openapi.json` is answered without a fiber, from bytes
 * encoded once.
 *
 * Source: docs/decisions/0002-what-the-fast-paths-save.md (machinery cut per request, not behaviour); ../shared/notes/effect-3.22.md
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
  HttpServerResponse,
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
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import { FaultInjection } from "../../pipeline/FaultInjection.js"
import { BufferedRequest, hasBody, readBodyThen } from "../../pipeline/RequestBody.js"
import * as RequestPipeline from "../../pipeline/RequestPipeline.js"
import * as ErrorResponse from "../ErrorResponse.js"
import * as SelfDelivery from "../SelfDelivery.js"
import * as ContractRoutes from "./ContractRoutes.js"

/** A request of this handler: the request object of the pipeline, with Node's response it writes. */
type LocalRequest = BufferedRequest & { readonly response: ServerResponse }

/** A Node `request` listener. */
export type NodeListener = (request: IncomingMessage, response: ServerResponse) => void

/** Routes served beside `/v1`: a fixed answer, or an app run in the request's fiber. */
export interface ExtraRoutes {
  /** Answers written without a fiber, by exact path (any method): the bytes and their content type. */
  readonly fixed: ReadonlyMap<string, { readonly body: Uint8Array; readonly contentType: string }>
  /** Pages answered without a key, by exact path (any method): an effect answering it, run in the request's fiber. */
  readonly pages: ReadonlyMap<string, Effect.Effect<HttpServerResponse.HttpServerResponse>>
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
      if (typeof body.body !== "string" && !(body.body instanceof Uint8Array)) return false
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
    case "Raw":
    case "FormData": {
      // A pipeable or form body (writeNow wrote the others), through its web form.
      const web = HttpServerResponse.toWeb(response)
      const webHeaders: Record<string, string | Array<string>> = { ...headers }
      web.headers.forEach((value, key) => {
        if (key !== "set-cookie") webHeaders[key] = value
      })
      nodeResponse.writeHead(response.status, webHeaders)
      return Effect.interruptible(Effect.catchAllCause(
        Effect.tryPromise((signal) => pipeStreams(Readable.fromWeb(web.body as NodeWebReadableStream, { signal }), nodeResponse)),
        (cause) => Effect.zipRight(endAfterFailure(nodeResponse), Effect.logError("writing an answer's body failed", cause))
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
 * `@effect/platform`'s `HttpMiddleware.tracer` (which its 0.97 release does not export): method, URL, user agent, the request headers (redacted by
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

/** The answer to a cause that reached the top of a request: interruptions stay interruptions. */
const envelope = (cause: Cause.Cause<unknown>, request: HttpServerRequest.HttpServerRequest) =>
  Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : ErrorResponse.fromCause(cause, request)

/** An app answering one request, with the request in its context. */
type RequestApp = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>

/** What serving a request reads, gathered once when the listener is built (never per request). */
interface NodeServing {
  readonly extra: ExtraRoutes
  readonly requestTracing: boolean
  readonly pipeline: RequestPipeline.Pipeline
  readonly faults: Context.Tag.Service<FaultInjection>
  /** The services of the contract's groups, without the groups' layer scope: copied into each request's context. */
  readonly services: Map<string, unknown>
  /** Runs an effect in a fiber that starts uninterruptible, with the service's fiber refs (a request's fiber). */
  readonly runUninterruptible: <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>
  /** Runs an effect in an interruptible fiber with the service's fiber refs (admission, logging). */
  readonly runInterruptible: <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>
  /** The contract's route for an admitted caller, in a context that holds the caller already. */
  readonly route: RequestPipeline.Run<unknown, HttpServerRequest.HttpServerRequest>
  /** The contract's route for an admitted caller, with the caller provided. */
  readonly routeWithCaller: RequestPipeline.Run<unknown, HttpServerRequest.HttpServerRequest>
}

/** The context of one request: the services, the request and, when given, the caller. */
const contextOf = (serving: NodeServing, request: LocalRequest, principal: Principal["Type"] | undefined) => {
  const context = new Map(serving.services)
  context.set(HttpServerRequest.HttpServerRequest.key, request)
  if (principal !== undefined) context.set(Principal.key, principal)
  return context
}

/**
 * Runs `effect` in a request's fiber with `context` (made once per request, by {@link contextOf}, and not shared: it
 * replaces the fiber's, no merge) and a `Scope` of its own added to it (what `HttpServer.serve` gives each request),
 * closed with the effect's exit so that a handler's finalizers run when the request ends.
 */
const forkScoped = <A, E>(
  serving: NodeServing,
  context: Map<string, unknown>,
  effect: Effect.Effect<A, E, HttpServerRequest.HttpServerRequest>
) =>
  serving.runUninterruptible(Effect.flatMap(Scope.make(), (scope) => {
    context.set(Scope.Scope.key, scope)
    return Effect.onExit(
      Effect.mapInputContext(effect, () => Context.unsafeMake<HttpServerRequest.HttpServerRequest>(context)),
      (exit) => Scope.close(scope, exit)
    )
  }))

/** Runs `effect` in a request's fiber with `context` as it is (see {@link forkScoped}). */
const forkUnscoped = <A, E>(
  serving: NodeServing,
  context: Map<string, unknown>,
  effect: Effect.Effect<A, E, HttpServerRequest.HttpServerRequest>
) =>
  serving.runUninterruptible(
    Effect.mapInputContext(effect, () => Context.unsafeMake<HttpServerRequest.HttpServerRequest>(context))
  )

/** The answer of one request: its app, every failure but an interruption answered with the envelope. */
const answer = (serving: NodeServing, request: LocalRequest, app: RequestApp) =>
  Effect.catchAllCause(
    serving.requestTracing ? traceRequest(request, app) : app,
    (cause) => envelope(cause, request)
  ) as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

/** Counts nothing: a page beside `/v1` whose client leaves is not a `/v1` client abort. */
const countNoAbort = (_: LocalRequest): void => {}

/**
 * Runs one request's app in a fiber of its own (with `principal` in its context when given) and answers with its
 * outcome; `countAbort` is called when its client leaves first; `ended` is called once when the fiber has ended,
 * whatever its outcome. A client that leaves interrupts the fiber.
 */
const serveInFiber = (
  serving: NodeServing,
  request: LocalRequest,
  app: RequestApp,
  countAbort: (request: LocalRequest) => void,
  principal?: Principal["Type"],
  ended?: () => void
) => {
  const nodeResponse = request.response
  const context = contextOf(serving, request, principal)
  const main = forkScoped(serving, context, answer(serving, request, app))
  let fiber: Fiber.RuntimeFiber<unknown, unknown> = main
  main.addObserver((exit) => {
    ended?.()
    if (exit._tag === "Failure") {
      // Interrupted (the client left, or an injected reset): nothing to answer, unless the connection is still up.
      if (!nodeResponse.writableEnded && !nodeResponse.destroyed) {
        writeSafely(request, ErrorResponse.fromApiError(ApiError.make.server("The request was interrupted.")))
      }
      return
    }
    // Answers in memory are written now; a streamed one in a fiber of its own, which a client abort interrupts.
    if (!writeSafely(request, exit.value)) {
      fiber = forkUnscoped(
        serving,
        context,
        Effect.catchAllCause(Effect.suspend(() => writeResponse(request, exit.value)), (cause) =>
          Cause.isInterruptedOnly(cause)
            ? endAfterFailure(nodeResponse)
            : Effect.zipRight(endAfterFailure(nodeResponse), Effect.logError("an answer could not be written", cause)))
      )
    }
  })
  nodeResponse.on("close", () => {
    if (nodeResponse.writableEnded) return
    countAbort(request)
    fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
  })
}

/** Answers a `/v1` request refused before its fiber started (by admission, or its body). */
const refuse = (serving: NodeServing, request: LocalRequest, refusal: HttpServerResponse.HttpServerResponse) => {
  if (request.response.destroyed) serving.faults.countClientAbort(request)
  else writeSafely(request, refusal)
}

/** Runs an admitted `/v1` request in its fiber, `body` read already (undefined: it has none). */
const serveWithBody = (
  serving: NodeServing,
  request: LocalRequest,
  admitted: RequestPipeline.Admitted,
  body: Uint8Array | undefined
) =>
  serveInFiber(
    serving,
    request,
    serving.pipeline.runAdmitted(request, admitted, serving.route, body),
    serving.faults.countClientAbort,
    admitted.principal,
    admitted.release
  )

/**
 * A `/v1` request without faults, after admission (steps 1-5): its body is read with Node's events, and only
 * then the request's fiber starts, with the body in memory: a fiber suspended on the body kept far more garbage
 * alive under load (docs/decisions/0002-what-the-fast-paths-save.md).
 */
const serveAdmitted = (serving: NodeServing, request: LocalRequest, admitted: RequestPipeline.Admit) => {
  if (admitted._tag === "Refused") return refuse(serving, request, admitted.response)
  if (!hasBody(request.headers)) return serveWithBody(serving, request, admitted, undefined)
  readBodyThen(request.source, admitted.maxBodyBytes, (read) => {
    const refusal = serving.pipeline.refuseBody(read, admitted.maxBodyBytes)
    if (refusal === undefined && read._tag === "Read") return serveWithBody(serving, request, admitted, read.bytes)
    admitted.release()
    refuse(serving, request, refusal!)
  })
}

/**
 * Admission when the request arrives: decided now for a caller of the pipeline's index (most requests), else in
 * a short fiber of its own that asks the identity store.
 */
const admitThenServe = (serving: NodeServing, request: LocalRequest) => {
  const now = serving.pipeline.admitNow(request)
  if (now !== undefined) return serveAdmitted(serving, request, now)
  serving.runInterruptible(serving.pipeline.admit(request)).addObserver((exit) => {
    if (exit._tag === "Success") return serveAdmitted(serving, request, exit.value)
    serving.runInterruptible(Effect.logError("the local service could not admit a request", exit.cause))
    refuse(serving, request, ErrorResponse.fromApiError(ApiError.make.server()))
  })
}

/** Routes one Node request: a self-delivery refusal, a fixed answer, a page, the extra app, or `/v1`. */
const receive = (serving: NodeServing, source: IncomingMessage, nodeResponse: ServerResponse) => {
  if (source.headers[SelfDelivery.deliveryHeader] !== undefined) {
    writeSafely(BufferedRequest.fromNode(source, nodeResponse), SelfDelivery.refusal())
    return
  }
  const { extra, faults } = serving
  const url = source.url ?? "/"
  const queryAt = url.indexOf("?")
  const path = queryAt < 0 ? url : url.slice(0, queryAt)
  const fixed = extra.fixed.get(path)
  if (fixed !== undefined) {
    nodeResponse.writeHead(200, { "content-type": fixed.contentType, "content-length": fixed.body.byteLength })
    nodeResponse.end(fixed.body)
    return
  }
  const request = BufferedRequest.fromNode(source, nodeResponse)
  const page = extra.pages.get(path)
  if (page !== undefined) return serveInFiber(serving, request, page, countNoAbort)
  if (path.startsWith(extra.prefix)) return serveInFiber(serving, request, extra.app(request, path), countNoAbort)
  faults.countRequest()
  // With faults, the fault comes first: the whole pipeline runs in the request's fiber.
  if (faults.enabled) {
    const app = faults.wrap(serving.pipeline.handle(request, serving.routeWithCaller))
    return serveInFiber(serving, request, app, faults.countClientAbort)
  }
  admitThenServe(serving, request)
}

/** The keys of the contract middleware the request pipeline satisfies: `Authorization` (it provides `Principal`). */
const satisfiedMiddleware: ReadonlySet<string> = new Set([Authorization.key])

/**
 * Builds the Node `request` listener of the local service: `/v1` through the fault injector (only when a fault is
 * configured) and the request pipeline into the contract's routes; the paths of `extra` beside it.
 *
 * The contract's `Authorization` middleware (declared on every group) is satisfied by the pipeline, which resolves
 * the caller before routing and puts it in the request's context as `Principal`, where the handlers read it. Any
 * other contract or group middleware (by its tag's key) makes the build fail: this path would not run it.
 */
export const make = (extra: ExtraRoutes) =>
  Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const { api } = yield* HttpApi.Api
    const middlewares = [...api.middlewares, ...Object.values(api.groups).flatMap((group) => [...group.middlewares])]
    for (const middleware of middlewares) {
      if (!satisfiedMiddleware.has(middleware.key)) {
        return yield* Effect.dieMessage(`NodeHandler: unsupported contract or group middleware ${middleware.key}`)
      }
    }
    const contract = yield* ContractRoutes.routes
    const dispatch = ContractRoutes.dispatcher(contract.routes, RequestPipeline.routerConfig)
    const runtime = yield* Effect.runtime<never>()
    // The context of every request: the services of the contract's groups (what their handlers use), without the
    // groups' layer scope, plus the request and, when known before the fiber starts, the caller (one copy of the
    // services per request). The fiber refs are the service's (logger, tracer, clock: a TestClock in tests). Fibers
    // start uninterruptible (the router makes a handler interruptible, the fault injector its latency), as
    // `HttpServer.serve` runs requests.
    const fiberRefs = runtime.fiberRefs
    const runtimeFlags = RuntimeFlags.disable(runtime.runtimeFlags, RuntimeFlags.Interruption)
    // The pipeline hands on the request it was given, its body in place (RequestBody.withBody).
    const route = (_: Principal["Type"], request: HttpServerRequest.HttpServerRequest) =>
      Effect.catchAllCause(dispatch(request as BufferedRequest), (cause) => envelope(cause, request))
    const serving: NodeServing = {
      extra,
      requestTracing: config.requestTracing,
      pipeline: yield* RequestPipeline.make,
      faults: yield* FaultInjection,
      services: Context.omit(Scope.Scope)(contract.services).unsafeMap,
      runUninterruptible: Runtime.runFork(Runtime.make({ context: Context.empty(), fiberRefs, runtimeFlags })),
      runInterruptible: Runtime.runFork(
        Runtime.make({ context: Context.empty(), fiberRefs, runtimeFlags: runtime.runtimeFlags })
      ),
      route,
      routeWithCaller: (principal, request) => Effect.provideService(route(principal, request), Principal, principal)
    }
    const listener: NodeListener = (source, nodeResponse) => {
      try {
        receive(serving, source, nodeResponse)
      } catch (error) {
        // Never expected: the steps before a fiber are plain code.
        serving.runInterruptible(Effect.logError("the local service could not take a request", error))
        writeSafely(
          BufferedRequest.fromNode(source, nodeResponse),
          ErrorResponse.fromApiError(ApiError.make.server())
        )
      }
    }
    return listener
  })
