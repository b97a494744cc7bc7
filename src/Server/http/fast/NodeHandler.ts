/**
 * The Node request handler of the local service: the contract's routes (ContractRoutes.ts) behind the request
 * pipeline, with answers in memory written straight to Node's response.
 *
 * A `/v1` request: admission (RequestPipeline.ts steps 1-5) when it arrives, outside any fiber for a caller the
 * pipeline knows; its body read with Node's events; then one fiber (uninterruptible, except where the router and the
 * fault injector allow it) runs idempotency and the route; every failure is answered with the error envelope
 * (ErrorResponse.ts). With a fault configured, the whole pipeline runs in that fiber behind the fault injector.
 *
 * Left out compared with `HttpApiBuilder.httpApp` served by `HttpServer.serve`: the server span unless
 * `LocalServiceConfig.requestTracing` is on, pre-response handlers, the contract's `Authorization` middleware (the
 * pipeline resolves the caller: see {@link make}) and its error encoding (ErrorResponse.ts answers every failure).
 *
 * Source: docs/decisions/0001-two-serving-paths.md; docs/decisions/0002-what-the-fast-paths-save.md.
 *
 * @since 0.1.0
 */
import { Cookies, HttpApi, HttpApp, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Context, Effect, type Fiber, Runtime, RuntimeFlags, Scope } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import { pipeline as pipeStreams } from "node:stream/promises"
import type { ReadableStream as NodeWebReadableStream } from "node:stream/web"
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

/** The headers of `response` for Node's `writeHead`, its cookies among them. */
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
 * or bytes); false when it must be written with {@link writeStreamed} (a stream, a pipeable body, form data).
 * Nothing is written to a response that already ended or whose connection is gone (true).
 */
const writeNow = (request: LocalRequest, response: HttpServerResponse.HttpServerResponse): boolean => {
  const nodeResponse = request.response
  if (nodeResponse.writableEnded || nodeResponse.destroyed) return true
  const body = response.body
  const inMemory = body._tag === "Empty" || body._tag === "Uint8Array" ||
    (body._tag === "Raw" && (typeof body.body === "string" || body.body instanceof Uint8Array))
  if (!inMemory) return false
  nodeResponse.writeHead(response.status, headersOf(response))
  nodeResponse.end(body._tag === "Empty" ? undefined : body.body as string | Uint8Array)
  return true
}

/**
 * {@link writeNow}, never throwing: when Node refuses the answer (e.g. a header value it cannot send), a 500
 * envelope goes out instead if nothing was sent yet, else the connection is closed.
 */
const writeSafely = (request: LocalRequest, response: HttpServerResponse.HttpServerResponse): boolean => {
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
 * Writes an answer whose body is not in memory (a stream, a pipeable body, form data) through its web form
 * (`HttpServerResponse.toWeb`), interruptibly (a client that leaves stops it). A body that fails ends the response (a
 * 500 when nothing was sent yet) and is logged; an interrupted one only ends it.
 */
const writeStreamed = (request: LocalRequest, response: HttpServerResponse.HttpServerResponse): Effect.Effect<void> => {
  const nodeResponse = request.response
  const written = Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const web = HttpServerResponse.toWeb(response, { runtime })
    const headers: Record<string, string | Array<string>> = {}
    web.headers.forEach((value, key) => {
      if (key !== "set-cookie") headers[key] = value
    })
    const cookies = web.headers.getSetCookie()
    if (cookies.length > 0) headers["set-cookie"] = cookies
    nodeResponse.writeHead(web.status, headers)
    return Effect.tryPromise((signal) =>
      pipeStreams(Readable.fromWeb(web.body as NodeWebReadableStream, { signal }), nodeResponse)
    )
  })
  return Effect.catchAllCause(Effect.interruptible(written), (cause) =>
    Effect.zipRight(
      Effect.sync(() => {
        if (!nodeResponse.headersSent) nodeResponse.writeHead(500)
        if (!nodeResponse.writableEnded) nodeResponse.end()
      }),
      Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("an answer's body could not be written", cause)
    ))
}

/**
 * A server span around a request's answer (`LocalServiceConfig.requestTracing`): `HttpApp.toHandled`'s, the span
 * `HttpServer.serve` makes (method, URL, redacted headers, status; the parent from the request's trace headers).
 */
const traceRequest = (app: RequestApp): RequestApp => {
  let answered: HttpServerResponse.HttpServerResponse | undefined
  const handled = HttpApp.toHandled(app, (_, response) => Effect.sync(() => (answered = response)))
  return Effect.map(handled, () => answered!)
}

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

/**
 * The answer of one request: its app, every failure but an interruption answered with the envelope; inside a server
 * span when `requestTracing` is on.
 */
const answer = (serving: NodeServing, request: LocalRequest, app: RequestApp): RequestApp => {
  const enveloped = Effect.catchAllCause(app, (cause) => envelope(cause, request))
  return serving.requestTracing ? traceRequest(enveloped) : enveloped
}

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
    if (!writeSafely(request, exit.value)) fiber = forkScoped(serving, context, writeStreamed(request, exit.value))
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
const serveWithBody = (serving: NodeServing, request: LocalRequest, admitted: RequestPipeline.Admitted, body?: Uint8Array) => {
  const app = serving.pipeline.runAdmitted(request, admitted, serving.route, body)
  serveInFiber(serving, request, app, serving.faults.countClientAbort, admitted.principal, admitted.release)
}

/**
 * A `/v1` request without faults, after admission (steps 1-5): its body is read with Node's events, and only
 * then the request's fiber starts, with the body in memory: a fiber suspended on the body kept far more garbage
 * alive under load (docs/decisions/0002-what-the-fast-paths-save.md).
 */
const serveAdmitted = (serving: NodeServing, request: LocalRequest, admitted: RequestPipeline.Admit) => {
  if (admitted._tag === "Refused") return refuse(serving, request, admitted.response)
  if (!hasBody(request.headers)) return serveWithBody(serving, request, admitted)
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
    // Request fibers take the service's fiber refs (logger, tracer, clock) and start uninterruptible, as
    // `HttpServer.serve` runs requests (the router makes a handler interruptible, the fault injector its latency).
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
        writeSafely(BufferedRequest.fromNode(source, nodeResponse), ErrorResponse.fromApiError(ApiError.make.server()))
      }
    }
    return listener
  })
