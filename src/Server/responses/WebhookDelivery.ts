/**
 * Completion webhooks of the local service: HTTP POST of the finished response object (JSON, the same object
 * GET /responses/{response_id} returns) to `metadata.completion_webhook`, with `Authorization: Bearer <webhook_token>`
 * when a token is set, retried in rounds by one Schedule ({@link deliveryRounds}).
 *
 * Source: spec "Events / Completion webhook" rules 1-7 and Limits ("Webhook retries: 3 attempts per round within
 * 30 seconds; at most 20 rounds; at most 60 requests per response"); the round delays are boxkit's choice
 * (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { HttpBody, HttpClient, HttpClientError, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import {
  Clock,
  Context,
  Data,
  Deferred,
  Duration,
  Effect,
  FiberSet,
  Layer,
  Option,
  Predicate,
  type Redacted,
  Schedule,
  ScheduleDecision,
  ScheduleInterval,
  Stream
} from "effect"
import { isLiveClock } from "../../Http/LiveClock.js"
import * as UndiciHttpClient from "../../Http/UndiciHttpClient.js"
import * as SelfDelivery from "../http/SelfDelivery.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import { DurableWork, type StoredDelivery } from "../state/DurableWork.js"
import { Logs, Responses } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"
import * as StoreOutage from "../state/StoreOutage.js"
import { FairQueue } from "./FairQueue.js"

/** Attempts in one round, back to back (spec: 3). */
export const attemptsPerRound = 3
/** The time budget of one round (spec: 30 seconds). */
export const roundBudget = Duration.seconds(30)
/** Rounds at most (spec: 20). */
export const maxRounds = 20
/** Requests at most for one response (spec: 60 = 20 rounds of 3 attempts). */
export const maxRequests = attemptsPerRound * maxRounds
/** Delay before the second round; it doubles each round up to {@link maxRoundDelay}. */
export const firstRoundDelay = Duration.seconds(5)
/** The longest delay between rounds ("increasing delays of up to a few minutes"): 5 minutes. */
export const maxRoundDelay = Duration.minutes(5)
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
 * The delay after failed round `round` (1-based) before the next one: 5 s, 10 s, 20 s, 40 s, 80 s, 160 s, then 300 s
 * for every later round.
 */
export const roundDelay = (round: number): Duration.Duration =>
  Duration.millis(Math.min(Duration.toMillis(firstRoundDelay) * 2 ** (round - 1), Duration.toMillis(maxRoundDelay)))

/** Where a delivery is in its rounds: the 1-based `round`, the 1-based `attempt` within it, and when the round began. */
export interface DeliveryPosition {
  readonly round: number
  readonly attempt: number
  readonly roundStartedAtMillis: number
}

/** The start time (ms) an input of {@link deliveryRounds} reports, when it is a failure that carries one. */
const startedAt = (input: unknown): number | undefined =>
  Predicate.hasProperty(input, "startedAtMillis") && typeof input.startedAtMillis === "number"
    ? input.startedAtMillis
    : undefined

/**
 * The retry policy of webhook deliveries, as one Schedule over failed attempts (spec Events rule 5). Within a round
 * the next attempt follows at once while fewer than 3 attempts were made and the round's 30-second budget is not
 * spent; then the next round starts after {@link roundDelay} (5 s doubling to 5 minutes); after round 20 it stops, so
 * at most 60 requests are made. A success (2xx) is not an input: `Effect.retry` stops there. The first round starts
 * when the first failed attempt started (its `startedAtMillis`, else when it failed). Outputs the position of the next
 * attempt.
 */
export const deliveryRounds: Schedule.Schedule<DeliveryPosition, unknown> = deliveryRoundsFrom(undefined)

/**
 * {@link deliveryRounds} from `position`, the attempt just made (a delivery resumed after a restart goes on where its
 * rounds stood); `undefined` for a delivery whose first attempt just failed.
 */
export function deliveryRoundsFrom(
  position: DeliveryPosition | undefined
): Schedule.Schedule<DeliveryPosition, unknown> {
  return Schedule.makeWithState<DeliveryPosition | undefined, unknown, DeliveryPosition>(position, (now, input, state) => {
    const current = state ?? { round: 1, attempt: 1, roundStartedAtMillis: startedAt(input) ?? now }
    const withinBudget = now - current.roundStartedAtMillis < Duration.toMillis(roundBudget)
    if (current.attempt < attemptsPerRound && withinBudget) {
      const next = { ...current, attempt: current.attempt + 1 }
      return Effect.succeed([next, next, ScheduleDecision.continueWith(ScheduleInterval.after(now))] as const)
    }
    if (current.round >= maxRounds) {
      return Effect.succeed([current, current, ScheduleDecision.done] as const)
    }
    const delay = Duration.toMillis(roundDelay(current.round))
    const next = { round: current.round + 1, attempt: 1, roundStartedAtMillis: now + delay }
    return Effect.succeed([next, next, ScheduleDecision.continueWith(ScheduleInterval.after(now + delay))] as const)
  })
}

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

/**
 * Delivers completion webhooks; `deliver` stores the pending delivery (in the caller's unit of work; `StoreError` when
 * the store fails) and returns at once, and the rounds run in the background.
 */
export class WebhookDelivery extends Context.Tag("boxkit/server/WebhookDelivery")<WebhookDelivery, {
  readonly deliver: (delivery: Delivery) => Effect.Effect<void, StoreError>
}>() {}

/** Options of the delivery service. */
export interface DeliveryOptions {
  /** Attempts in flight at once over all deliveries (default 64); the others wait for a slot. */
  readonly concurrency?: number
  /**
   * Attempts in flight at once for the deliveries of one organization (default all of `concurrency` but an eighth of
   * it, at least 1 kept back: 56 of 64), so that one organization's slow or dead receivers always leave workers to the
   * others, while a single organization keeps nearly the whole pool.
   */
  readonly concurrencyPerOrganization?: number
  /** Timeout of one attempt (default {@link attemptTimeout}, 10 s); never more than what is left of the round. */
  readonly attemptTimeout?: Duration.Duration
}

/** The services and settings every delivery of one {@link layer} runs with. */
interface DeliveryServices {
  readonly client: HttpClient.HttpClient
  /** The client is the toolkit's `UndiciHttpClient`: it bounds an exchange by a deadline and reads the answer's body. */
  readonly clientHonoursDeadline: boolean
  readonly logs: Context.Tag.Service<Logs>
  readonly responses: Context.Tag.Service<Responses>
  readonly work: Context.Tag.Service<DurableWork>
  /** The timeout of one attempt, in milliseconds (never more than what is left of the round). */
  readonly attemptTimeoutMillis: number
  /** The attempts waiting for a worker, one lane per organization. */
  readonly attempts: FairQueue<Effect.Effect<void>>
  /** The fibers of deliveries retried or resumed in the background, stopped with the layer. */
  readonly running: FiberSet.FiberSet<void, never>
}

/**
 * The POST of one delivery (the same request for every attempt). The toolkit's client reads the answer's body with the
 * answer, at most {@link maxReplyBytes} of it (`readWhole`; other clients ignore the mark).
 */
const deliveryRequestOf = (delivery: Delivery) => {
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
  services: DeliveryServices,
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
  services: DeliveryServices,
  request: HttpClientRequest.HttpClientRequest,
  timeout: number,
  clock: Clock.Clock
) => {
  const { client } = services
  const expired = `timed out after ${timeout} ms`
  const timerRunning = services.clientHonoursDeadline && isLiveClock(clock)
  const deadlineMillis = clock.unsafeCurrentTimeMillis() + timeout
  const head: Effect.Effect<HttpClientResponse.HttpClientResponse, unknown> = timerRunning
    ? UndiciHttpClient.withDeadline(client.execute(request), { atMillis: deadlineMillis, onExpire: () => expired })
    : Effect.timeoutFail(client.execute(request), { duration: timeout, onTimeout: () => expired })
  // A refusal by a boxkit service of its own delivery is told apart by its header (status -1: never retried).
  const post = Effect.flatMap(head, (response) =>
    Effect.as(
      drainReply(services, response, deadlineMillis, clock),
      response.headers[SelfDelivery.refusedHeader] !== undefined ? selfRefused : response.status
    ))
  return Effect.either(Effect.mapError(post, describeFailure(expired)))
}

/**
 * One attempt of `delivery` at `position`: the exchange, bounded by the attempt's timeout and what is left of the
 * round, written to the delivery log. A 2xx records the first delivery time (spec rule 7) and ends the delivery;
 * anything else fails with {@link DeliveryFailed} (`final` for the service's own address).
 */
const attemptDelivery = (
  services: DeliveryServices,
  delivery: Delivery,
  request: HttpClientRequest.HttpClientRequest,
  position: DeliveryPosition
) =>
  Effect.clockWith((clock) =>
    Effect.gen(function*() {
      const startedAtMillis = clock.unsafeCurrentTimeMillis()
      const left = position.roundStartedAtMillis + Duration.toMillis(roundBudget) - startedAtMillis
      const outcome = yield* exchange(services, request, Math.max(1, Math.min(services.attemptTimeoutMillis, left)), clock)
      const nowMillis = clock.unsafeCurrentTimeMillis()
      const self = outcome._tag === "Right" && outcome.right === selfRefused
      const status = outcome._tag === "Right" ? (self ? 403 : outcome.right) : null
      const ok = status !== null && status >= 200 && status < 300
      yield* bestEffortBookkeeping(services.logs.delivery({
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
        return yield* Effect.fail(
          new DeliveryFailed({
            status,
            reason: outcome._tag === "Left" ? outcome.left : self ? selfRefusedReason : `HTTP ${status}`,
            startedAtMillis,
            final: self
          })
        )
      }
      yield* bestEffortBookkeeping(services.responses.update(delivery.responseId, (record) =>
        record.firstDeliveredAtMillis === null ? { ...record, firstDeliveredAtMillis: nowMillis } : record))
      yield* bestEffortBookkeeping(services.work.finishDelivery(delivery.responseId))
    })
  )

/**
 * A store write of a delivery's bookkeeping (the attempt's log entry, the first delivery time, the stored position),
 * logged and gone past when the store fails: the receiver's answer decides the delivery, not the store; a position not
 * stored repeats attempts after a restart (at least once, as webhooks are).
 */
const bestEffortBookkeeping = <A>(effect: Effect.Effect<A, StoreError>): Effect.Effect<void> =>
  Effect.catchAll(Effect.asVoid(effect), StoreOutage.logStoreFailure("recording a completion webhook attempt"))

/**
 * Starts `concurrency` workers (stopped with the scope) that run the attempts of `attempts`, one lane per
 * organization taken in turn.
 *
 * FairQueue.ts: one offer per attempt, no fiber per waiting attempt. Not a semaphore: thousands of retries waiting on
 * one (a dead receiver) are all woken at every release, and each wake-up that finds no permit nests another wait in
 * the waiting fiber: memory grew with waiters times releases (3 GB for 2,000 deliveries to a dead port). Not one
 * queue: one organization's backlog would go before every later delivery of the others.
 */
const startWorkers = (attempts: FairQueue<Effect.Effect<void>>, concurrency: number) => {
  const worker = Effect.forever(Effect.flatMap(attempts.take, ({ lane, task }) =>
    Effect.ensuring(task, Effect.sync(() => attempts.done(lane)))))
  return Effect.forkScoped(
    Effect.all(Array.from({ length: concurrency }, () => worker), { concurrency: "unbounded", discard: true })
  )
}

/** `effect` run on a worker, in organization `orgId`'s lane of `attempts`; the caller waits for its outcome. */
const onWorker = <A, E>(
  attempts: FairQueue<Effect.Effect<void>>,
  orgId: string,
  effect: Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  Effect.flatMap(Deferred.make<A, E>(), (outcome) =>
    Effect.zipRight(
      Effect.sync(() => attempts.offer(orgId, Effect.asVoid(Effect.intoDeferred(effect, outcome)))),
      Deferred.await(outcome)
    ))

/**
 * After a failed attempt at `from` (undefined: the first attempt): the rounds of {@link deliveryRoundsFrom}, fed that
 * failure (`first`) first. Each next position is stored before it is waited for (DurableWork.ts).
 */
const retryRounds = (
  services: DeliveryServices,
  delivery: Delivery,
  request: HttpClientRequest.HttpClientRequest,
  first: DeliveryFailed,
  from?: DeliveryPosition
) => {
  let position: DeliveryPosition = from ?? { round: 1, attempt: 1, roundStartedAtMillis: first.startedAtMillis }
  const rounds = deliveryRoundsFrom(from).pipe(Schedule.tapOutput((next) =>
    Effect.suspend(() => {
      const previous = position
      position = next
      const stored = bestEffortBookkeeping(services.work.progressDelivery(delivery.responseId, next))
      return Effect.zipRight(stored, next.round > previous.round
        // At debug level: thousands of deliveries to a dead receiver must not flood the log; giving up is an
        // error.
        ? Effect.logDebug("completion webhook round failed").pipe(Effect.annotateLogs({
          response_id: delivery.responseId,
          round: previous.round,
          next_round_in_ms: Duration.toMillis(roundDelay(previous.round))
        }))
        : Effect.void)
    })
  ))
  return Effect.flatMap(Schedule.driver(rounds), (driver) => {
    const loop = (failure: DeliveryFailed): Effect.Effect<void, DeliveryFailed> =>
      failure.final === true ? Effect.fail(failure) : Effect.matchEffect(driver.next(failure), {
        onFailure: () => Effect.fail(failure),
        onSuccess: () =>
          Effect.catchAll(
            onWorker(services.attempts, delivery.orgId, attemptDelivery(services, delivery, request, position)),
            loop
          )
      })
    return loop(first)
  })
}

/** Logs that `delivery` was given up after every round (the response is unchanged) and ends its stored delivery. */
const logGivenUp = (services: DeliveryServices, delivery: Delivery) => (error: DeliveryFailed) =>
  Effect.logError("completion webhook not delivered after every round; the response is unchanged").pipe(
    Effect.annotateLogs({ response_id: delivery.responseId, reason: error.reason }),
    Effect.zipRight(bestEffortBookkeeping(services.work.finishDelivery(delivery.responseId)))
  )

/**
 * A delivery taken over from the store (after a restart, or from an instance that is gone): its next attempt at its
 * stored position, once that is due, then the rest of its rounds. The token comes from the response record.
 */
const resumeStoredDelivery = (services: DeliveryServices, stored: StoredDelivery) =>
  Effect.gen(function*() {
    const record = yield* services.responses.get(stored.responseId)
    const delivery: Delivery = {
      responseId: stored.responseId,
      orgId: record._tag === "Some" ? record.value.orgId : "",
      url: stored.url,
      token: record._tag === "Some" ? record.value.webhookToken : null,
      body: stored.body
    }
    const wait = stored.position.roundStartedAtMillis - (yield* Clock.currentTimeMillis)
    if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
    const request = deliveryRequestOf(delivery)
    yield* Effect.catchAll(
      onWorker(services.attempts, delivery.orgId, attemptDelivery(services, delivery, request, stored.position)),
      (failure) => retryRounds(services, delivery, request, failure, stored.position)
    ).pipe(Effect.catchAll(logGivenUp(services, delivery)))
  }).pipe(Effect.catchAll(StoreOutage.logStoreFailure("resuming a completion webhook")))

/** The first attempt of a delivery (on a worker); when it fails, the rounds go on in a fiber of their own. */
const firstAttempt = (services: DeliveryServices, delivery: Delivery) =>
  Effect.clockWith((clock) => {
    const request = deliveryRequestOf(delivery)
    return Effect.catchAll(
      attemptDelivery(services, delivery, request, {
        round: 1,
        attempt: 1,
        roundStartedAtMillis: clock.unsafeCurrentTimeMillis()
      }),
      (failure) =>
        failure.final === true
          ? logGivenUp(services, delivery)(failure)
          : Effect.asVoid(FiberSet.run(
            services.running,
            retryRounds(services, delivery, request, failure).pipe(Effect.catchAll(logGivenUp(services, delivery)))
          ))
    )
  })

/**
 * Every `recoveryInterval`, takes over the deliveries whose owner is gone (a restart, another instance that died) and
 * resumes them where their rounds stood, until the scope closes.
 */
const resumeAbandonedDeliveries = (services: DeliveryServices, recoveryInterval: Duration.DurationInput) =>
  services.work.claimDeliveries.pipe(
    Effect.flatMap(Effect.forEach((stored) => FiberSet.run(services.running, resumeStoredDelivery(services, stored)), {
      discard: true
    })),
    Effect.catchAllCause((cause) => Effect.logError("taking over webhook deliveries failed", cause)),
    Effect.repeat(Schedule.spaced(recoveryInterval)),
    Effect.forkScoped
  )

/**
 * The delivery service: at most `concurrency` attempts at once, at most `concurrencyPerOrganization` of them for one
 * organization, the organizations taking turns for free workers (FairQueue.ts), each attempt bounded by its timeout,
 * retried by {@link deliveryRounds}. The answer's status decides (spec rule 5: a 2xx is delivered); its body is read
 * up to {@link maxReplyBytes} and discarded, the connection closed past that (docs/ASSUMPTIONS.md "Webhooks"). Every
 * attempt is written to the delivery log (`Logs.delivery`, shown by `/_local/state`); failed rounds and a delivery
 * given up are logged; failures never change the response (spec rule 6). The first 2xx starts the response's
 * retention clock (spec rule 7).
 *
 * Cost per delivery (most succeed at once): a place in its organization's lane served by `concurrency` workers
 * (stopped with the layer), the JSON body encoded once, and a fiber of its own with the retry Schedule only after a
 * failed first attempt. With the live clock and the toolkit's `UndiciHttpClient` (connections reused, the answer's
 * body read with it and capped by `readWhole`, one plain timer per attempt) an attempt's timeout needs no racing
 * fiber; with any other `HttpClient` or clock it is `Effect.timeoutFail`, and the body is read as a capped stream.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DeliveryOptions = {}) =>
  Layer.scoped(
    WebhookDelivery,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const work = yield* DurableWork
      const config = yield* LocalServiceConfig
      const concurrency = Math.max(1, options.concurrency ?? 64)
      const perOrganization = Math.max(
        1,
        options.concurrencyPerOrganization ?? concurrency - Math.max(1, Math.floor(concurrency / 8))
      )
      const services: DeliveryServices = {
        client,
        clientHonoursDeadline: UndiciHttpClient.honoursDeadline(client),
        logs: yield* Logs,
        responses: yield* Responses,
        work,
        attemptTimeoutMillis: Duration.toMillis(options.attemptTimeout ?? attemptTimeout),
        attempts: new FairQueue<Effect.Effect<void>>(perOrganization),
        running: yield* FiberSet.make<void, never>()
      }
      yield* startWorkers(services.attempts, concurrency)
      // Only a store that keeps work can have deliveries to take over.
      if (work.resumable) yield* resumeAbandonedDeliveries(services, config.recoveryInterval)
      return {
        deliver: (delivery) =>
          Effect.zipRight(
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              work.addDelivery({
                responseId: delivery.responseId,
                url: delivery.url,
                body: delivery.body,
                position: { round: 1, attempt: 1, roundStartedAtMillis: now }
              })),
            Effect.sync(() => services.attempts.offer(delivery.orgId, firstAttempt(services, delivery)))
          )
      }
    })
  )

/** The outcome of an attempt the receiver refused as the sending service's own delivery (SelfDelivery.ts). */
const selfRefused = -1

/** Why such an attempt failed, in the delivery log. */
const selfRefusedReason = "refused: the URL is this service's own address (a webhook is never delivered to the service itself)"

/**
 * `url` with the user name and password of its userinfo replaced by `REDACTED` (`https://REDACTED:REDACTED@host/`),
 * for every answer and log that shows a webhook URL; other texts are returned as they are.
 */
export const redactUserinfo = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.username === "" && parsed.password === "") return url
    if (parsed.username !== "") parsed.username = "REDACTED"
    if (parsed.password !== "") parsed.password = "REDACTED"
    return parsed.toString()
  } catch {
    return url
  }
}

/** True when `text` is an absolute http or https URL (spec rule 1: otherwise no webhook is sent). */
export const isWebhookUrl = (text: string | undefined | null): text is string =>
  Option.fromNullable(text).pipe(
    Option.flatMap((value) => {
      try {
        const url = new URL(value)
        return url.protocol === "http:" || url.protocol === "https:" ? Option.some(url) : Option.none()
      } catch {
        return Option.none()
      }
    }),
    Option.isSome
  )
