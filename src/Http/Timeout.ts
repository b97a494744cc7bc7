/**
 * A cheap timeout for client attempts. `Effect.timeoutFail` races two forked fibers (the effect and a sleep) and
 * merges the winner's fiber refs back, and the toolkit used two per call (docs/decisions/0002-what-the-fast-paths-save.md). This runs the
 * effect in one forked fiber and, on the live `Clock`, arms a plain timer (`setTimeout`) instead of a sleeping fiber;
 * under any other `Clock` (e.g. `TestClock`) the timer is a fiber sleeping on that clock, so tests control it. Same
 * outcome as `Effect.timeoutFail`: the effect's own exit when it ends first; otherwise it is interrupted (its
 * finalizers run: an HTTP request is aborted) and awaited, then `onTimeout()` is the failure. Interrupting the caller
 * interrupts the effect. Fiber-ref changes made by the effect are not carried back to the caller.
 *
 * Whether the clock is the live one is asked of LiveClock.ts (the one upstream hook, fenced there with its test).
 *
 * Source: BENCHMARKS.md section 9 and docs/decisions/0006-client-own-code-or-stock.md (beside `Effect.timeoutFail`).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Fiber } from "effect"
import { clockOf, runsOnLiveClock } from "./LiveClock.js"

/** The longest timer `setTimeout` takes; longer timeouts never fire (as Effect's own clock treats them). */
const maxTimerMillis = 2 ** 31 - 1

/**
 * Runs `self`, failing with `onTimeout()` when it has not finished within `millis` milliseconds of the current
 * `Clock` (see the module docs).
 */
export const timeoutFail = <A, E, R, E2>(
  self: Effect.Effect<A, E, R>,
  millis: number,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.withFiberRuntime<A, E | E2, R>((parent) => {
    const clock = clockOf(parent)
    const live = runsOnLiveClock(parent)
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.fork(restore(self)), (child) =>
        Effect.flatMap(
          live ? Effect.succeed(undefined) : Effect.fork(restore(clock.sleep(Duration.millis(millis)))),
          (sleeper) =>
            restore(Effect.async<A, E | E2>((resume) => {
              let settled = false
              let timer: ReturnType<typeof setTimeout> | undefined
              const fire = () => {
                if (settled) return
                settled = true
                resume(Effect.zipRight(Fiber.interrupt(child), Effect.fail(onTimeout())))
              }
              const disarm = () => {
                if (timer !== undefined) clearTimeout(timer)
                if (sleeper !== undefined) sleeper.unsafeInterruptAsFork(parent.id())
              }
              if (sleeper !== undefined) {
                sleeper.addObserver((exit) => {
                  if (exit._tag === "Success") fire()
                })
              } else if (millis <= maxTimerMillis) {
                timer = setTimeout(fire, Math.max(0, millis))
              }
              child.addObserver((exit) => {
                if (settled) return
                settled = true
                disarm()
                resume(exit)
              })
              return Effect.suspend(() => {
                settled = true
                disarm()
                return Fiber.interrupt(child)
              })
            }))
        ))
    )
  })
