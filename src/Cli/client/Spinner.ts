/**
 * A live spinner on stderr while a command waits, showing the latest status it was given (`⠹ creating`); on a
 * terminal only: elsewhere the wait is silent, so that logs and pipes get no control characters. The line is cleared
 * when the wait ends, however it ends. With `NO_COLOR` set (or `TERM=dumb`) the spinner uses no ANSI escapes: the
 * line is redrawn after a carriage return and blanked with spaces (Output.colours).
 *
 * Source: docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import { Effect, Fiber, Ref, Schedule } from "effect"
import { colours } from "./Output.js"

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/**
 * Runs `wait` with a `show(status)` it calls with each new status; on a terminal (stderr a TTY) a spinner shows the
 * latest one, redrawn every 80 ms, until `wait` ends. Fails as `wait` fails.
 *
 * @since 0.1.0
 * @category Output
 */
export const spinning = <A, E, R>(
  initial: string,
  wait: (show: (status: string) => Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    if (process.stderr.isTTY !== true) return wait(() => Effect.void)
    return spin(initial, wait, colours(process.stderr))
  })

const spin = <A, E, R>(
  initial: string,
  wait: (show: (status: string) => Effect.Effect<void>) => Effect.Effect<A, E, R>,
  escapes: boolean
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const status = yield* Ref.make(initial)
    let frame = 0
    // Without escapes, a shorter line is padded with spaces over what the longer one before it left.
    let drawn = 0
    const line = (text: string) => {
      const padded = escapes ? text : text.padEnd(drawn)
      drawn = Math.max(drawn, text.length)
      return escapes ? `\r\u001b[2K${padded}` : `\r${padded}`
    }
    const clear = () => (escapes ? "\r\u001b[2K" : `\r${" ".repeat(drawn)}\r`)
    const draw = Effect.flatMap(Ref.get(status), (text) =>
      Effect.sync(() => {
        process.stderr.write(line(`${frames[frame++ % frames.length]} ${text}`))
      }))
    const spinner = yield* Effect.fork(Effect.repeat(draw, Schedule.spaced("80 millis")))
    return yield* wait((text) => Ref.set(status, text)).pipe(
      Effect.ensuring(Effect.zipRight(Fiber.interrupt(spinner), Effect.sync(() => process.stderr.write(clear()))))
    )
  })
