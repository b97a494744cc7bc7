/**
 * A completion-webhook receiver for daemons: checks `Authorization: Bearer <webhook_token>` in constant time, decodes
 * the body with the Model response schema, de-duplicates by response id, hands each completion exactly once to the
 * handler, and answers 2xx only after the handler accepted it (so a failure leads to redelivery).
 *
 * Answers: 200 (handed over, or a duplicate already handed over), 401 (bad or missing token), 400 (not a model
 * response), 409 (the same response is being handled right now: the sender retries), 500 (the handler failed).
 *
 * Source: spec "Events / Completion webhook" rules 2-5 ("receivers dedupe by response id").
 *
 * @since 0.1.0
 */
import {
  HttpApp,
  HttpIncomingMessage,
  HttpMiddleware,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Clock, Context, Duration, Effect, Layer, Option, Queue, Redacted, Stream } from "effect"
import { timingSafeEqual } from "node:crypto"
import { createServer, IncomingMessage } from "node:http"
import type { ModelResponse } from "../Domain/ModelResponse.js"
import { decodeModelResponse } from "./WebhookBody.js"

/**
 * Where completions already handed over are remembered. Pluggable; {@link memoryStore} is the default.
 *
 * @since 0.1.0
 * @category Models
 */
export interface DeduplicationStore {
  /** True when `responseId` was handed over before (and not yet forgotten). */
  readonly seen: (responseId: string) => Effect.Effect<boolean>
  /** Remembers `responseId` as handed over. */
  readonly remember: (responseId: string) => Effect.Effect<void>
}

/**
 * An in-memory store that forgets ids after `ttl` (default 2 hours). The local service redelivers for at most about
 * 80 minutes (20 rounds: delays of 5 s doubling to 5 minutes, 70 minutes in all, plus up to 30 s per round), so the
 * default outlives every redelivery; a daemon that restarts needs a durable store to stay exactly-once.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const memoryStore = (ttl: Duration.Duration = Duration.hours(2)): Effect.Effect<DeduplicationStore> =>
  Effect.sync(() => {
    const seenAt = new Map<string, number>()
    const ttlMillis = Duration.toMillis(ttl)
    return {
      seen: (responseId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const at = seenAt.get(responseId)
          if (at === undefined) return false
          if (now - at >= ttlMillis) {
            seenAt.delete(responseId)
            return false
          }
          return true
        }),
      remember: (responseId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          seenAt.set(responseId, now)
          if (seenAt.size % 4096 === 0) {
            for (const [id, at] of seenAt) if (now - at >= ttlMillis) seenAt.delete(id)
          }
        })
    }
  })

/** Options of a receiver. @since 0.1.0 @category Models */
export interface ReceiverOptions<E, R> {
  /** The expected `webhook_token`; when set, requests without `Authorization: Bearer <token>` get 401. */
  readonly token?: Redacted.Redacted<string> | undefined
  /** The de-duplication store (default: {@link memoryStore} with a 2-hour ttl). */
  readonly store?: DeduplicationStore | undefined
  /** Called once per completion; answer 2xx only after it succeeds. */
  readonly handler: (response: ModelResponse) => Effect.Effect<void, E, R>
}

/** Constant-time comparison of a presented bearer token with the expected one. @since 0.1.0 @category Utils */
export const tokenMatches = (header: string | undefined, expected: Redacted.Redacted<string>): boolean =>
  bytesMatch(header, Buffer.from(Redacted.value(expected)))

/** {@link tokenMatches} against the expected token's bytes (computed once per receiver). */
const bytesMatch = (header: string | undefined, wanted: Buffer): boolean => {
  const match = /^Bearer[ \t]+(\S+)$/i.exec(header ?? "")
  const presented = Buffer.from(match?.[1] ?? "")
  // Compare equal-length buffers so the time does not depend on where they differ.
  const same = timingSafeEqual(
    presented.length === wanted.length ? presented : Buffer.alloc(wanted.length),
    wanted
  )
  return same && presented.length === wanted.length
}

/**
 * The body of `request` parsed as JSON (null when empty), failing past `HttpIncomingMessage.MaxBodySize` bytes (the
 * Node server's default: 10 MiB) as `request.json` does. Node's request is read straight from its events, without
 * the fiber and cache that `request.json` makes for each request; any other server's request is read by `request.json`.
 */
const bodyJson = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<unknown, unknown> => {
  const source = request.source
  if (!(source instanceof IncomingMessage)) return request.json
  return Effect.flatMap(HttpIncomingMessage.MaxBodySize, (maxBodySize) =>
    Effect.async<unknown, unknown>((resume) => {
      // As `request.json`: no limit when none is set (or it is 0).
      const limit = Option.isSome(maxBodySize) && Number(maxBodySize.value) > 0 ? Number(maxBodySize.value) : Infinity
      const chunks: Array<Buffer> = []
      let bytes = 0
      const stop = () => {
        source.off("data", onData)
        source.off("end", onEnd)
        source.off("error", onError)
      }
      const onData = (chunk: Buffer) => {
        bytes += chunk.byteLength
        if (bytes <= limit) return void chunks.push(chunk)
        stop()
        source.destroy()
        resume(Effect.fail(new Error("the body is larger than the server's MaxBodySize")))
      }
      const onEnd = () => {
        stop()
        const text = Buffer.concat(chunks).toString("utf8")
        resume(Effect.try(() => (text === "" ? null : JSON.parse(text) as unknown)))
      }
      const onError = (error: Error) => {
        stop()
        resume(Effect.fail(error))
      }
      source.on("data", onData)
      source.on("end", onEnd)
      source.on("error", onError)
      return Effect.sync(stop)
    }))
}

// The fixed answers, made once (a response is an immutable value).
const answers = {
  methodNotAllowed: HttpServerResponse.empty({ status: 405 }),
  badToken: HttpServerResponse.unsafeJson({ error: "invalid webhook token" }, { status: 401 }),
  notAResponse: HttpServerResponse.unsafeJson({ error: "the body is not a model response" }, { status: 400 }),
  duplicate: HttpServerResponse.unsafeJson({ received: true, duplicate: true }),
  busy: HttpServerResponse.unsafeJson({ error: "this response is being handled; retry later" }, { status: 409 }),
  received: HttpServerResponse.unsafeJson({ received: true, duplicate: false }),
  handlerFailed: HttpServerResponse.unsafeJson({ error: "the handler failed; deliver again" }, { status: 500 }),
  broken: HttpServerResponse.empty({ status: 500 })
}

/** The receiver as an `HttpApp` to mount in your own server (any path). @since 0.1.0 @category Constructors */
export const makeHttpApp = <E, R>(
  options: ReceiverOptions<E, R>
): Effect.Effect<HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest>> =>
  Effect.gen(function*() {
    const store = options.store ?? (yield* memoryStore())
    const handling = new Set<string>()
    const wanted = options.token === undefined ? undefined : Buffer.from(Redacted.value(options.token))
    return Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method !== "POST") return answers.methodNotAllowed
      if (wanted !== undefined && !bytesMatch(request.headers.authorization, wanted)) return answers.badToken
      const json = yield* Effect.either(bodyJson(request))
      const body = json._tag === "Right" ? decodeModelResponse(json.right) : json
      if (body._tag === "Left") return answers.notAResponse
      const response = body.right
      if (yield* store.seen(response.id)) return answers.duplicate
      if (handling.has(response.id)) return answers.busy
      handling.add(response.id)
      const outcome = yield* options.handler(response).pipe(
        Effect.zipRight(store.remember(response.id)),
        Effect.either,
        Effect.ensuring(Effect.sync(() => handling.delete(response.id)))
      )
      return outcome._tag === "Right" ? answers.received : answers.handlerFailed
    }).pipe(Effect.catchAllCause(() => Effect.succeed(answers.broken)))
  })

/**
 * Options of a receiver served on its own HTTP server ({@link layer}, {@link stream}).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ServeOptions {
  /** Interface to listen on (default 127.0.0.1). */
  readonly host?: string | undefined
  /** Port (default 0: a free port). */
  readonly port?: number | undefined
  /**
   * One `http.server` span per webhook request, as `HttpServer.serve` makes by default (default false: no request
   * span, which costs a fifth to a third of a small request's time; the handler's own spans are unaffected).
   * Source: docs/ASSUMPTIONS.md "Client" (spans configurable and off on hot paths by default).
   */
  readonly requestSpans?: boolean | undefined
}

/**
 * Serves `app` on the `HttpServer` in context, with or without a span per request (`requestSpans`, default false).
 * Lives as long as the enclosing `Scope`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const serve = <R>(app: HttpApp.Default<never, R>, options: Pick<ServeOptions, "requestSpans"> = {}) =>
  options.requestSpans === true
    ? HttpServer.serveEffect(app)
    : HttpMiddleware.withTracerDisabledWhenEffect(HttpServer.serveEffect(app), () => true)

/** The address of a running receiver, e.g. `http://127.0.0.1:40123/webhooks`. @since 0.1.0 @category Services */
export class WebhookReceiverUrl extends Context.Tag("boxkit/WebhookReceiverUrl")<WebhookReceiverUrl, string>() {}

/**
 * A receiver served on its own HTTP server ({@link ServeOptions}: `host` default 127.0.0.1, `port` default 0 = a free
 * port, no request spans by default). Its URL (ending in `/webhooks`; any path is accepted) is provided as
 * {@link WebhookReceiverUrl}.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = <E, R>(options: ReceiverOptions<E, R> & ServeOptions) =>
  Layer.scoped(
    WebhookReceiverUrl,
    Effect.gen(function*() {
      const app = yield* makeHttpApp(options)
      yield* serve(app, options)
      return yield* HttpServer.addressFormattedWith((address) => Effect.succeed(`${address}/webhooks`))
    })
  ).pipe(Layer.provide(NodeHttpServer.layer(createServer, { host: options.host ?? "127.0.0.1", port: options.port ?? 0 })))

/**
 * The completions of a receiver as a `Stream`: each completion is offered to the stream once; the webhook is
 * answered 2xx when the completion is in the stream's buffer. The server lives as long as the enclosing `Scope`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const stream = (options: Omit<ReceiverOptions<never, never>, "handler"> & ServeOptions) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<ModelResponse>()
    const context = yield* Layer.build(layer({ ...options, handler: (response) => Queue.offer(queue, response) }))
    return { url: Context.get(context, WebhookReceiverUrl), completions: Stream.fromQueue(queue) }
  })
