/**
 * Waiting by polling on a Schedule with a deadline, shared by `Boxes.awaitStatus` and `Responses.awaitCompletion`.
 *
 * Cadence: the first read at once, then waits of `interval` (default 100 ms) doubling up to `maxInterval`
 * (default 2 s): reads at 0, 100, 300, 700, 1500, 3100, 5100, ... ms. The deadline bounds the cadence: a wait that
 * would pass it is shortened so that the last read happens exactly at the deadline, and no read starts after it.
 *
 * Source: spec "Create a box" ("Poll status: `running` is ready, `failed` did not start") and "Events" (poll a
 * response until it is finished); the numbers are boxkit's choices (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Option, Ref, Schedule, ScheduleDecision, ScheduleInterval } from "effect"

/** Default first wait between two reads. */
export const defaultInterval = Duration.millis(100)

/** Default longest wait between two reads. */
export const defaultMaxInterval = Duration.seconds(2)

/**
 * The polling cadence without a deadline: waits of `interval` doubling per read, each at most `maxInterval`.
 */
export const pollingSchedule = (
  interval: Duration.Duration = defaultInterval,
  maxInterval: Duration.Duration = defaultMaxInterval
) => Schedule.exponential(interval).pipe(Schedule.union(Schedule.spaced(maxInterval)))

/**
 * The polling cadence bounded by a deadline (epoch milliseconds, as `Clock.currentTimeMillis`): waits of `interval`
 * doubling up to `maxInterval`, the last wait shortened to end at `deadlineAtMillis`, and done once a read ends at or
 * after it. Its output is the number of waits so far.
 */
export const scheduleUntil = <In = unknown>(options: {
  readonly deadlineAtMillis: number
  readonly interval?: Duration.Duration | undefined
  readonly maxInterval?: Duration.Duration | undefined
}): Schedule.Schedule<number, In> => {
  const interval = Duration.toMillis(options.interval ?? defaultInterval)
  const maxInterval = Duration.toMillis(options.maxInterval ?? defaultMaxInterval)
  return Schedule.makeWithState<number, In, number>(0, (now, _, waits) =>
    Effect.succeed(
      now >= options.deadlineAtMillis
        ? [waits, waits, ScheduleDecision.done] as const
        : [
          waits + 1,
          waits + 1,
          ScheduleDecision.continueWith(ScheduleInterval.after(
            Math.min(now + Math.min(maxInterval, interval * 2 ** Math.min(waits, 52)), options.deadlineAtMillis)
          ))
        ] as const
    ))
}

/**
 * Runs `read` on {@link scheduleUntil} until `done` holds for its value, and returns that value. A failure of `read`
 * stops the polling at once with that failure. When the deadline (`timeout` from now) passes first, fails with
 * `onTimeout(last)`, where `last` is the value of the last read (None when no read finished).
 *
 * `read` must be bounded in time itself (client calls are: see `Transport.call`); the deadline is enforced between
 * reads, not by interrupting one.
 */
export const pollUntil = <A, E, R, T>(
  read: Effect.Effect<A, E, R>,
  options: {
    readonly done: (value: A) => boolean
    readonly timeout: Duration.Duration
    readonly interval?: Duration.Duration | undefined
    readonly maxInterval?: Duration.Duration | undefined
    readonly onTimeout: (last: Option.Option<A>) => T
  }
): Effect.Effect<A, E | T, R> =>
  Effect.gen(function*() {
    const startedAt = yield* Clock.currentTimeMillis
    const last = yield* Ref.make(Option.none<A>())
    const tracked: Effect.Effect<A, E, R> = Effect.tap(read, (value) => Ref.set(last, Option.some(value)))
    yield* Effect.repeat(tracked, {
      schedule: scheduleUntil<A>({
        deadlineAtMillis: startedAt + Duration.toMillis(options.timeout),
        interval: options.interval,
        maxInterval: options.maxInterval
      }),
      until: options.done
    })
    const observed = yield* Ref.get(last)
    if (Option.isSome(observed) && options.done(observed.value)) return observed.value
    return yield* Effect.fail(options.onTimeout(observed))
  })
