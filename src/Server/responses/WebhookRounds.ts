/**
 * The retry policy of completion webhooks: rounds of attempts, one Schedule over failed attempts
 * ({@link deliveryRounds}), and the position a delivery has reached in its rounds (stored, so that a delivery resumed
 * after a restart goes on where it stood).
 *
 * Source: spec "Events / Completion webhook" rule 5 and Limits ("Webhook retries: 3 attempts per round within 30
 * seconds; at most 20 rounds; at most 60 requests per response"); the round delays are boxkit's choice
 * (docs/ASSUMPTIONS.md "Webhooks").
 *
 * @since 0.1.0
 */
import { Duration, Effect, Predicate, Schedule, ScheduleDecision, ScheduleInterval } from "effect"

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
