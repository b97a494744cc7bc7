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
import { HttpClient, HttpClientRequest } from "@effect/platform"
import {
  Clock,
  Context,
  Data,
  DateTime,
  Duration,
  Effect,
  Layer,
  Option,
  Predicate,
  Redacted,
  Schedule,
  ScheduleDecision,
  ScheduleInterval
} from "effect"
import { Logs, Responses } from "./Repositories.js"

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
/** The default timeout of one delivery attempt: 10 seconds, so three attempts fit the 30-second round budget. */
export const attemptTimeout = Duration.seconds(10)

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
export const deliveryRounds: Schedule.Schedule<DeliveryPosition, unknown> = Schedule.makeWithState<
  DeliveryPosition | undefined,
  unknown,
  DeliveryPosition
>(undefined, (now, input, state) => {
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

/**
 * One failed delivery attempt (spec rule 5): a non-2xx `status`, or a network error or timeout (`status` null), with
 * the `reason` and when the attempt started (`startedAtMillis`).
 */
export class DeliveryFailed extends Data.TaggedError("DeliveryFailed")<{
  readonly status: number | null
  readonly reason: string
  readonly startedAtMillis: number
}> {}

/** A webhook to deliver: the response id, its URL, the optional token (never logged), and the JSON body. */
export interface Delivery {
  readonly responseId: string
  readonly url: string
  readonly token: Redacted.Redacted<string> | null
  readonly body: unknown
}

/** Delivers completion webhooks; `deliver` returns at once and the rounds run in the background. */
export class WebhookDelivery extends Context.Tag("boxkit/server/WebhookDelivery")<WebhookDelivery, {
  readonly deliver: (delivery: Delivery) => Effect.Effect<void>
}>() {}

/** Options of the delivery service. */
export interface DeliveryOptions {
  /** Attempts in flight at once over all deliveries (default 64); the others wait for a slot. */
  readonly concurrency?: number
  /** Timeout of one attempt (default {@link attemptTimeout}, 10 s); never more than what is left of the round. */
  readonly attemptTimeout?: Duration.Duration
}

/**
 * The delivery service: at most `concurrency` attempts at once, each bounded by its timeout, retried by
 * {@link deliveryRounds}. Every attempt is written to the delivery log (`Logs.delivery`, shown by `/_local/state`);
 * failed rounds and a delivery given up are logged; failures never change the response (spec rule 6). The first 2xx
 * starts the response's retention clock (spec rule 7).
 */
export const layer = (options: DeliveryOptions = {}) =>
  Layer.scoped(
    WebhookDelivery,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const logs = yield* Logs
      const responses = yield* Responses
      const permits = yield* Effect.makeSemaphore(options.concurrency ?? 64)
      const scope = yield* Effect.scope
      const timeoutMillis = Duration.toMillis(options.attemptTimeout ?? attemptTimeout)

      const attempt = (delivery: Delivery, position: DeliveryPosition) =>
        Effect.gen(function*() {
          const startedAtMillis = yield* Clock.currentTimeMillis
          const left = position.roundStartedAtMillis + Duration.toMillis(roundBudget) - startedAtMillis
          const timeout = Math.max(1, Math.min(timeoutMillis, left))
          let request = HttpClientRequest.post(delivery.url).pipe(HttpClientRequest.bodyUnsafeJson(delivery.body))
          if (delivery.token !== null) request = HttpClientRequest.bearerToken(request, delivery.token)
          const outcome = yield* client.execute(request).pipe(
            Effect.flatMap((response) => Effect.as(response.text.pipe(Effect.ignore), response.status)),
            Effect.scoped,
            Effect.mapError((error) => error.message),
            Effect.timeoutFail({ duration: Duration.millis(timeout), onTimeout: () => `timed out after ${timeout} ms` }),
            Effect.either
          )
          const at = DateTime.formatIso(yield* DateTime.now)
          const status = outcome._tag === "Right" ? outcome.right : null
          const ok = status !== null && status >= 200 && status < 300
          yield* logs.delivery({
            response_id: delivery.responseId,
            url: delivery.url,
            round: position.round,
            attempt: position.attempt,
            status,
            error: outcome._tag === "Left" ? outcome.left : null,
            ok,
            at
          })
          if (!ok) {
            return yield* Effect.fail(
              new DeliveryFailed({
                status,
                reason: outcome._tag === "Left" ? outcome.left : `HTTP ${status}`,
                startedAtMillis
              })
            )
          }
          const now = yield* Clock.currentTimeMillis
          yield* responses.update(delivery.responseId, (record) =>
            record.firstDeliveredAtMillis === null ? { ...record, firstDeliveredAtMillis: now } : record)
        }).pipe(permits.withPermits(1))

      const run = (delivery: Delivery) =>
        Effect.gen(function*() {
          let position: DeliveryPosition = {
            round: 1,
            attempt: 1,
            roundStartedAtMillis: yield* Clock.currentTimeMillis
          }
          yield* Effect.suspend(() => attempt(delivery, position)).pipe(
            Effect.retry(deliveryRounds.pipe(Schedule.tapOutput((next) =>
              Effect.suspend(() => {
                const previous = position
                position = next
                return next.round > previous.round
                  ? Effect.logWarning("completion webhook round failed").pipe(Effect.annotateLogs({
                    response_id: delivery.responseId,
                    round: previous.round,
                    next_round_in_ms: Duration.toMillis(roundDelay(previous.round))
                  }))
                  : Effect.void
              })
            )))
          )
        }).pipe(
          Effect.catchAll((error) =>
            Effect.logError("completion webhook not delivered after every round; the response is unchanged").pipe(
              Effect.annotateLogs({ response_id: delivery.responseId, reason: error.reason })
            )
          )
        )

      return {
        deliver: (delivery) => Effect.asVoid(Effect.forkIn(run(delivery), scope))
      }
    })
  )

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
