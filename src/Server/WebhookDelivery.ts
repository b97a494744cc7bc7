/**
 * Completion webhooks of the local service: HTTP POST of the finished response object to
 * `metadata.completion_webhook`, with `Authorization: Bearer <webhook_token>` when set, retried in rounds.
 *
 * Source: spec "Events / Completion webhook" rules 2-6 and Limits ("Webhook retries: 3 attempts per round within
 * 30 seconds; at most 20 rounds; at most 60 requests per response").
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
/** Rounds at most (spec: 20), so at most 60 requests per response. */
export const maxRounds = 20
/** Delay before the second round; it doubles each round up to {@link maxRoundDelay}. */
export const firstRoundDelay = Duration.seconds(5)
/** The longest delay between rounds ("increasing delays of up to a few minutes"): 5 minutes. */
export const maxRoundDelay = Duration.minutes(5)
/** The timeout of one delivery attempt: 10 seconds (so three attempts fit the 30-second round budget). */
export const attemptTimeout = Duration.seconds(10)

/** Where a delivery is in its rounds: the 1-based `round`, the `attempt` within it, and when the round started. */
export interface DeliveryPosition {
  readonly round: number
  readonly attempt: number
  readonly roundStartedAtMillis: number
}

/**
 * The retry policy of webhook deliveries as one Schedule over failed attempts. Within a round the next attempt follows
 * at once while fewer than 3 attempts were made and the round's 30-second budget is not spent; then the next round
 * starts after 5 s, 10 s, 20 s, 40 s, 80 s, 160 s, then 300 s (5 min) for every later round; after round 20 it stops.
 * It outputs the position of the next attempt.
 */
export const deliveryRounds: Schedule.Schedule<DeliveryPosition, unknown> = Schedule.makeWithState<
  DeliveryPosition | undefined,
  unknown,
  DeliveryPosition
>(undefined, (now, _input, state) => {
  const current = state ?? { round: 1, attempt: 1, roundStartedAtMillis: now }
  const withinBudget = now - current.roundStartedAtMillis < Duration.toMillis(roundBudget)
  if (current.attempt < attemptsPerRound && withinBudget) {
    const next = { ...current, attempt: current.attempt + 1 }
    return Effect.succeed([next, next, ScheduleDecision.continueWith(ScheduleInterval.after(now))] as const)
  }
  if (current.round >= maxRounds) {
    return Effect.succeed([current, current, ScheduleDecision.done] as const)
  }
  const delay = Math.min(
    Duration.toMillis(firstRoundDelay) * 2 ** (current.round - 1),
    Duration.toMillis(maxRoundDelay)
  )
  const next = { round: current.round + 1, attempt: 1, roundStartedAtMillis: now + delay }
  return Effect.succeed([next, next, ScheduleDecision.continueWith(ScheduleInterval.after(now + delay))] as const)
})

/** One failed delivery attempt: a non-2xx status or a network error (spec rule 5). */
export class DeliveryFailed extends Data.TaggedError("DeliveryFailed")<{
  readonly status: number | null
  readonly reason: string
}> {}

/** A webhook to deliver: the response id, its URL, the optional token, and the JSON body. */
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

/**
 * The delivery service: at most `concurrency` attempts at once (default 64), each with a 10-second timeout, retried by
 * {@link deliveryRounds}. Every attempt is written to the delivery log; failures are logged and never change the
 * response. A 2xx starts the response's retention clock (spec rule 7).
 */
export const layer = (options: { readonly concurrency?: number } = {}) =>
  Layer.scoped(
    WebhookDelivery,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const logs = yield* Logs
      const responses = yield* Responses
      const permits = yield* Effect.makeSemaphore(options.concurrency ?? 64)
      const scope = yield* Effect.scope

      const attempt = (delivery: Delivery, position: DeliveryPosition) =>
        Effect.gen(function*() {
          let request = HttpClientRequest.post(delivery.url).pipe(HttpClientRequest.bodyUnsafeJson(delivery.body))
          if (delivery.token !== null) request = HttpClientRequest.bearerToken(request, delivery.token)
          const outcome = yield* client.execute(request).pipe(
            Effect.flatMap((response) => Effect.as(response.text.pipe(Effect.ignore), response.status)),
            Effect.scoped,
            Effect.timeoutFail({
              duration: attemptTimeout,
              onTimeout: () => new DeliveryFailed({ status: null, reason: "timed out after 10 seconds" })
            }),
            Effect.catchAll((error) =>
              Effect.fail(
                error instanceof DeliveryFailed ? error : new DeliveryFailed({ status: null, reason: error.message })
              )
            ),
            permits.withPermits(1),
            Effect.either
          )
          const at = DateTime.formatIso(yield* DateTime.now)
          const ok = outcome._tag === "Right" && outcome.right >= 200 && outcome.right < 300
          yield* logs.delivery({
            response_id: delivery.responseId,
            url: delivery.url,
            round: position.round,
            attempt: position.attempt,
            status: outcome._tag === "Right" ? outcome.right : null,
            error: outcome._tag === "Left" ? outcome.left.reason : null,
            ok,
            at
          })
          if (outcome._tag === "Left") return yield* Effect.fail(outcome.left)
          if (!ok) return yield* Effect.fail(new DeliveryFailed({ status: outcome.right, reason: `status ${outcome.right}` }))
          const now = yield* Clock.currentTimeMillis
          yield* responses.update(delivery.responseId, (record) =>
            record.firstDeliveredAtMillis === null ? { ...record, firstDeliveredAtMillis: now } : record)
        })

      const run = (delivery: Delivery) =>
        Effect.gen(function*() {
          let position: DeliveryPosition = { round: 1, attempt: 1, roundStartedAtMillis: 0 }
          yield* Effect.suspend(() => attempt(delivery, position)).pipe(
            Effect.retry(deliveryRounds.pipe(Schedule.tapOutput((next) =>
              Effect.sync(() => {
                position = next
              })
            )))
          )
        }).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning("completion webhook was not delivered after every round").pipe(
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
export const isWebhookUrl = (text: string | undefined): text is string =>
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
