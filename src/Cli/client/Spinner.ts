/**
 * A live spinner on stderr while a command waits, showing the latest status it was given (`⠹ creating`); on a
 * terminal only: elsewhere the wait is silent, so that logs and pipes get no control characters. The line is cleared
 * when the wait ends, however it ends.
 *
 * Source: issue 16 (`boxkit boxes create --wait`).
 *
 * @since 0.1.0
 */
import { Effect, Fiber, Ref, Schedule } from "effect"

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/**
 * Runs `wait` with a `show(status)` it calls with each new status; on a terminal (stderr a TTY) a spinner shows the
 * latest one, redrawn every 80 ms, until `wait` ends.
 */
export const spinning = <A, E, R>(
  initial: string,
  wait: (show: (status: string) => Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    if (process.stderr.isTTY !== true) return wait(() => Effect.void)
    return spin(initial, wait)
  })

const spin = <A, E, R>(
  initial: string,
  wait: (show: (status: string) => Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const status = yield* Ref.make(initial)
    let frame = 0
    const draw = Effect.flatMap(Ref.get(status), (text) =>
      Effect.sync(() => {
        process.stderr.write(`\r\u001b[2K${frames[frame++ % frames.length]} ${text}`)
      }))
    const spinner = yield* Effect.fork(Effect.repeat(draw, Schedule.spaced("80 millis")))
    return yield* wait((text) => Ref.set(status, text)).pipe(
      Effect.ensuring(Effect.zipRight(Fiber.interrupt(spinner), Effect.sync(() => process.stderr.write("\r\u001b[2K"))))
    )
  })
