/**
 * Completion webhooks of the local service: HTTP POST of the finished response object (JSON, the same object
 * GET /responses/{response_id} returns) to `metadata.completion_webhook`, with `Authorization: Bearer <webhook_token>`
 * when a token is set, retried in rounds by one Schedule. This module runs the deliveries (the workers, the rounds in
 * the background, the deliveries taken over from the store); one attempt is WebhookAttempt.ts, the retry policy
 * WebhookRounds.ts, the URL rules WebhookUrl.ts.
 *
 * Source: spec "Events / Completion webhook" rules 1-7 and Limits ("Webhook retries: 3 attempts per round within
 * 30 seconds; at most 20 rounds; at most 60 requests per response"); the round delays are boxkit's choice
 * (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { HttpClient, type HttpClientRequest } from "@effect/platform"
import { Clock, Context, Deferred, Duration, Effect, FiberSet, Layer, Schedule } from "effect"
import * as UndiciHttpClient from "../../Http/UndiciHttpClient.js"
import * as ServiceClock from "../clock/ServiceClock.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import { DurableWork, type StoredDelivery } from "../state/DurableWork.js"
import { Logs, Responses } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"
import * as StoreOutage from "../state/StoreOutage.js"
import { FairQueue } from "./FairQueue.js"
import { DueDeliveries } from "./WebhookDue.js"
import {
  type AttemptServices,
  attemptDelivery,
  attemptOn,
  attemptTimeout,
  bestEffortBookkeeping,
  type Delivery,
  type DeliveryFailed,
  deliveryRequestOf
} from "./WebhookAttempt.js"
import { type DeliveryPosition, deliveryRoundsFrom, roundDelay } from "./WebhookRounds.js"

export { attemptTimeout, type Delivery, DeliveryFailed, maxReplyBytes } from "./WebhookAttempt.js"
export * from "./WebhookRounds.js"
export { isWebhookUrl, redactUserinfo } from "./WebhookUrl.js"

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
interface DeliveryServices extends AttemptServices {
  /** The attempts waiting for a worker, one lane per organization. */
  readonly attempts: FairQueue<Effect.Effect<void>>
  /** The fibers of deliveries retried or resumed in the background, stopped with the layer. */
  readonly running: FiberSet.FiberSet<void, never>
  /** When each delivery is due next, for an advance of the virtual clock (WebhookDue.ts). */
  readonly due: DueDeliveries
}

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
 *
 * The Schedule decides the positions; the wait for each is until its round's start on the service's clock
 * (`ServiceClock.sleepUntil`), not the Schedule's own sleep: that is a delay counted from when the Schedule stepped,
 * and an advance of the virtual clock can come between the two (once the next round is announced due, while its
 * position is being stored: a round trip to PostgreSQL), so a sleep armed after it would wait the whole delay again,
 * in real time.
 */
const retryRounds = (
  services: DeliveryServices,
  delivery: Delivery,
  request: HttpClientRequest.HttpClientRequest,
  first: DeliveryFailed,
  from?: DeliveryPosition
) => {
  let position: DeliveryPosition = from ?? { round: 1, attempt: 1, roundStartedAtMillis: first.startedAtMillis }
  const rounds = deliveryRoundsFrom(from).pipe(Schedule.modifyDelay(() => Duration.zero), Schedule.tapOutput((next) =>
    Effect.suspend(() => {
      const previous = position
      position = next
      services.due.dueAt(delivery.responseId, next.roundStartedAtMillis)
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
        onSuccess: (next) =>
          Effect.catchAll(
            ServiceClock.sleepUntil(next.roundStartedAtMillis).pipe(
              Effect.zipRight(Effect.sync(() => services.due.running(delivery.responseId))),
              Effect.zipRight(
                onWorker(services.attempts, delivery.orgId, attemptDelivery(services, delivery, request, next))
              )
            ),
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
    services.due.dueAt(stored.responseId, stored.position.roundStartedAtMillis)
    yield* ServiceClock.sleepUntil(stored.position.roundStartedAtMillis)
    services.due.running(stored.responseId)
    const request = deliveryRequestOf(delivery)
    yield* Effect.catchAll(
      onWorker(services.attempts, delivery.orgId, attemptDelivery(services, delivery, request, stored.position)),
      (failure) => retryRounds(services, delivery, request, failure, stored.position)
    ).pipe(Effect.catchAll(logGivenUp(services, delivery)))
  }).pipe(
    Effect.catchAll(StoreOutage.logStoreFailure("resuming a completion webhook")),
    Effect.ensuring(Effect.sync(() => services.due.forget(stored.responseId)))
  )

/**
 * The first attempt of a delivery (on a worker); when it fails, the rounds go on in a fiber of their own. The delivery
 * is forgotten by the advances of the clock (WebhookDue.ts) once it is delivered or given up.
 */
const firstAttempt = (services: DeliveryServices, delivery: Delivery) =>
  Effect.clockWith((clock) => {
    const request = deliveryRequestOf(delivery)
    const forget = Effect.sync(() => services.due.forget(delivery.responseId))
    return Effect.matchEffect(
      attemptOn(services, delivery, request, {
        round: 1,
        attempt: 1,
        roundStartedAtMillis: clock.unsafeCurrentTimeMillis()
      }, clock),
      {
        onSuccess: () => forget,
        onFailure: (failure) =>
          failure.final === true
            ? Effect.zipRight(logGivenUp(services, delivery)(failure), forget)
            : Effect.asVoid(FiberSet.run(
              services.running,
              retryRounds(services, delivery, request, failure).pipe(
                Effect.catchAll(logGivenUp(services, delivery)),
                Effect.ensuring(forget)
              )
            ))
      }
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
        running: yield* FiberSet.make<void, never>(),
        due: new DueDeliveries()
      }
      // An advance of the virtual clock sends the rounds due inside it, in order, and waits for them (ServiceClock.ts).
      yield* ServiceClock.registerDue({
        name: "webhook rounds",
        nextDueMillis: (untilMillis) =>
          Effect.map(Clock.currentTimeMillis, (now) => services.due.next(untilMillis, now)),
        runDue: Effect.flatMap(Clock.currentTimeMillis, (now) => services.due.settled(now))
      })
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
            Effect.sync(() => {
              services.due.running(delivery.responseId)
              services.attempts.offer(delivery.orgId, firstAttempt(services, delivery))
            })
          )
      }
    })
  )
