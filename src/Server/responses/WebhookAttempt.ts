/**
 * One attempt of a completion webhook: the HTTP POST of the finished response object (JSON) to the webhook URL, with
 * `Authorization: Bearer <webhook_token>` when a token is set, bounded by the attempt's timeout and what is left of its
 * round; the answer's status decides (a 2xx is delivered), its body is read up to {@link maxReplyBytes} and discarded;
 * the attempt is written to the delivery log.
 *
 * Source: spec "Events / Completion webhook" rules 2-7; docs/ASSUMPTIONS.md "Webhooks" (the reply cap, the attempt
 * timeout, the service's own address).
 *
 * @since 0.1.0
 */
import { HttpBody, HttpClientError, HttpClientRequest, type HttpClient, type HttpClientResponse } from "@effect/platform"
import { type Clock, type Context, Data, Duration, Effect, Either, type Redacted, Stream } from "effect"
import { isLiveClock } from "../../Http/LiveClock.js"
import * as UndiciHttpClient from "../../Http/UndiciHttpClient.js"
import * as SelfDelivery from "../http/SelfDelivery.js"
import type { DurableWork } from "../state/DurableWork.js"
import type { Logs, Responses } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"
import * as StoreOutage from "../state/StoreOutage.js"
import { type DeliveryPosition, roundBudget } from "./WebhookRounds.js"
import { redactUserinfo } from "./WebhookUrl.js"

/**
 * The default timeout of one delivery attempt: 10 seconds, so three attempts fit the 30-second round budget. It covers
 * the whole exchange: connecting, sending, the answer's head and reading its body (up to {@link maxReplyBytes}).
 */
export const attemptTimeout = Duration.seconds(10)
/**
 * The most bytes of a receiver's answer body read per attempt: 64 KiB (docs/ASSUMPTIONS.md "Webhooks"). The body is
 * read only to free the connection and is discarded; past this the connection is closed instead of read further.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxReplyBytes = 64 * 1024

/**
 * One failed delivery attempt (spec rule 5): a non-2xx `status`, or a network error or timeout (`status` null), with
 * the `reason` and when the attempt started (`startedAtMillis`).
 */
export class DeliveryFailed extends Data.TaggedError("DeliveryFailed")<{
  readonly status: number | null
  readonly reason: string
  readonly startedAtMillis: number
  /** True when retrying cannot help: the URL is the service's own address (SelfDelivery.ts). */
  readonly final?: boolean
}> {}

/**
 * A webhook to deliver: the response id, the organization that owns the response (`orgId`: deliveries are shared
 * fairly among organizations), its URL, the optional token (never logged), and the JSON body.
 */
export interface Delivery {
  readonly responseId: string
  readonly orgId: string
  readonly url: string
  readonly token: Redacted.Redacted<string> | null
  readonly body: unknown
}

/** The services and settings an attempt runs with (built once by the delivery layer). */
export interface AttemptServices {
  readonly client: HttpClient.HttpClient
  /** The client is the toolkit's `UndiciHttpClient`: it bounds an exchange by a deadline and reads the answer's body. */
  readonly clientHonoursDeadline: boolean
  readonly logs: Context.Tag.Service<Logs>
  readonly responses: Context.Tag.Service<Responses>
  readonly work: Context.Tag.Service<DurableWork>
  /** The timeout of one attempt, in milliseconds (never more than what is left of the round). */
  readonly attemptTimeoutMillis: number
}

/**
 * The POST of one delivery (the same request for every attempt). The toolkit's client reads the answer's body with the
 * answer, at most {@link maxReplyBytes} of it (`readWhole`; other clients ignore the mark).
 */
export const deliveryRequestOf = (delivery: Delivery) => {
  const request = HttpClientRequest.post(delivery.url).pipe(
    HttpClientRequest.setHeader(SelfDelivery.deliveryHeader, "1"),
    // Buffer.from: the same bytes as HttpBody.text's TextEncoder, about 3 times faster.
    HttpClientRequest.setBody(HttpBody.uint8Array(Buffer.from(JSON.stringify(delivery.body) ?? "null", "utf8"), "application/json"))
  )
  return UndiciHttpClient.readWhole(
    delivery.token === null ? request : HttpClientRequest.bearerToken(request, delivery.token),
    maxReplyBytes
  )
}

/** What a failed exchange is logged as: the timeout's message (`expired`), or the error's. */
const describeFailure = (expired: string) => (error: unknown): string =>
  typeof error === "string"
    ? error
    : HttpClientError.isHttpClientError(error) && error.cause === expired
    ? expired
    : error instanceof Error
    ? error.message
    : String(error)

/**
 * Reads `response`'s body up to {@link maxReplyBytes} and discards it, never failing: the status is already decided.
 * The toolkit's client has read it with the answer (capped, within the attempt's deadline), so there is nothing left to
 * read. With another client it is read as a stream until it ends or passes the cap (the stream, so the connection, is
 * then closed), within what is left of the attempt's time (`deadlineMillis`, epoch milliseconds).
 */
const drainReply = (
  services: AttemptServices,
  response: HttpClientResponse.HttpClientResponse,
  deadlineMillis: number,
  clock: Clock.Clock
) => {
  if (services.clientHonoursDeadline) return Effect.void
  const read = Stream.runFoldWhile(response.stream, 0, (bytes) => bytes <= maxReplyBytes, (bytes, chunk) => bytes + chunk.byteLength)
  const left = Math.max(1, deadlineMillis - clock.unsafeCurrentTimeMillis())
  return Effect.ignore(Effect.timeoutFail(read, { duration: left, onTimeout: () => "expired" }))
}

/**
 * One exchange of an attempt: its HTTP status, or why it failed (network error, or no answer's head within `timeout`
 * milliseconds), never failing itself. The status stands once the answer's head has arrived: its body is then only
 * drained.
 */
const exchange = (
  services: AttemptServices,
  request: HttpClientRequest.HttpClientRequest,
  timeout: number,
  clock: Clock.Clock
): Effect.Effect<Either.Either<number, string>> => {
  const { client } = services
  const expired = `timed out after ${timeout} ms`
  const timerRunning = services.clientHonoursDeadline && isLiveClock(clock)
  const deadlineMillis = clock.unsafeCurrentTimeMillis() + timeout
  const describe = describeFailure(expired)
  // The toolkit's client has read the answer's body with its head (capped, within the deadline): the status is the
  // outcome, in one step.
  if (timerRunning) {
    return Effect.match(
      UndiciHttpClient.withDeadline(client.execute(request), { atMillis: deadlineMillis, onExpire: () => expired }),
      { onFailure: (error) => Either.left(describe(error)), onSuccess: (response) => Either.right(statusOf(response)) }
    )
  }
  const head = Effect.timeoutFail(client.execute(request), { duration: timeout, onTimeout: () => expired })
  const post = Effect.flatMap(head, (response) =>
    Effect.as(drainReply(services, response, deadlineMillis, clock), statusOf(response)))
  return Effect.either(Effect.mapError(post, describe))
}

/** The outcome of an answer: its status, or {@link selfRefused} when a boxkit service refused its own delivery. */
const statusOf = (response: HttpClientResponse.HttpClientResponse): number =>
  response.headers[SelfDelivery.refusedHeader] !== undefined ? selfRefused : response.status

/**
 * One attempt of `delivery` at `position`: the exchange, bounded by the attempt's timeout and what is left of the
 * round, written to the delivery log. A 2xx records the first delivery time (spec rule 7) and ends the delivery;
 * anything else fails with {@link DeliveryFailed} (`final` for the service's own address).
 */
export const attemptDelivery = (
  services: AttemptServices,
  delivery: Delivery,
  request: HttpClientRequest.HttpClientRequest,
  position: DeliveryPosition
): Effect.Effect<void, DeliveryFailed> =>
  Effect.clockWith((clock) => attemptOn(services, delivery, request, position, clock))

/** {@link attemptDelivery} on `clock` (the service's clock, read once by the caller). */
export const attemptOn = (
  services: AttemptServices,
  delivery: Delivery,
  request: HttpClientRequest.HttpClientRequest,
  position: DeliveryPosition,
  clock: Clock.Clock
): Effect.Effect<void, DeliveryFailed> => {
  const startedAtMillis = clock.unsafeCurrentTimeMillis()
  const left = position.roundStartedAtMillis + roundBudgetMillis - startedAtMillis
  const timeout = Math.max(1, Math.min(services.attemptTimeoutMillis, left))
  return Effect.flatMap(exchange(services, request, timeout, clock), (outcome) => {
    const nowMillis = clock.unsafeCurrentTimeMillis()
    const self = outcome._tag === "Right" && outcome.right === selfRefused
    const status = outcome._tag === "Right" ? (self ? 403 : outcome.right) : null
    const ok = status !== null && status >= 200 && status < 300
    const logged = bestEffortBookkeeping(services.logs.delivery({
      response_id: delivery.responseId,
      url: redactUserinfo(delivery.url),
      round: position.round,
      attempt: position.attempt,
      status,
      error: outcome._tag === "Left" ? outcome.left : self ? selfRefusedReason : null,
      ok,
      at: new Date(nowMillis).toISOString()
    }))
    if (!ok) {
      return Effect.zipRight(
        logged,
        Effect.fail(
          new DeliveryFailed({
            status,
            reason: outcome._tag === "Left" ? outcome.left : self ? selfRefusedReason : `HTTP ${status}`,
            startedAtMillis,
            final: self
          })
        )
      )
    }
    return Effect.zipRight(
      logged,
      Effect.zipRight(
        bestEffortBookkeeping(services.responses.update(delivery.responseId, (record) =>
          record.firstDeliveredAtMillis === null ? { ...record, firstDeliveredAtMillis: nowMillis } : record)),
        bestEffortBookkeeping(services.work.finishDelivery(delivery.responseId))
      )
    )
  })
}

/** The time budget of one round, in milliseconds. */
const roundBudgetMillis = Duration.toMillis(roundBudget)

/**
 * A store write of a delivery's bookkeeping (the attempt's log entry, the first delivery time, the stored position),
 * logged and gone past when the store fails: the receiver's answer decides the delivery, not the store; a position not
 * stored repeats attempts after a restart (at least once, as webhooks are).
 */
export const bestEffortBookkeeping = <A>(effect: Effect.Effect<A, StoreError>): Effect.Effect<void> =>
  Effect.catchAll(Effect.asVoid(effect), StoreOutage.logStoreFailure("recording a completion webhook attempt"))

/** The outcome of an attempt the receiver refused as the sending service's own delivery (SelfDelivery.ts). */
const selfRefused = -1

/** Why such an attempt failed, in the delivery log. */
const selfRefusedReason = "refused: the URL is this service's own address (a webhook is never delivered to the service itself)"

