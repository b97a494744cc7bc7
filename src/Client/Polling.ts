/**
 * Polling on a Schedule with a deadline, shared by `Boxes.awaitStatus` and `Responses.awaitCompletion`.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schedule } from "effect"

/**
 * The polling Schedule: exponential from `interval` (default 100 ms), each delay at most 2 seconds.
 */
export const pollingSchedule = (interval: Duration.Duration = Duration.millis(100)) =>
  Schedule.exponential(interval).pipe(Schedule.union(Schedule.spaced(Duration.seconds(2))))

class NotYet {
  readonly _tag = "NotYet"
}

/**
 * Runs `read` on {@link pollingSchedule} until `done` holds for its value, then returns the value. Errors of `read`
 * stop the polling at once. After `timeout` it fails with `onTimeout()`.
 */
export const pollUntil = <A, E, R, T>(
  read: Effect.Effect<A, E, R>,
  options: {
    readonly done: (value: A) => boolean
    readonly timeout: Duration.Duration
    readonly interval?: Duration.Duration
    readonly onTimeout: () => T
  }
): Effect.Effect<A, E | T, R> =>
  read.pipe(
    Effect.filterOrFail(options.done, () => new NotYet()),
    Effect.retry({ schedule: pollingSchedule(options.interval), while: (error) => error instanceof NotYet }),
    Effect.timeoutFail({ duration: options.timeout, onTimeout: options.onTimeout }),
    Effect.catchIf((error): error is NotYet => error instanceof NotYet, () => Effect.die("polling stopped early"))
  ) as Effect.Effect<A, E | T, R>
