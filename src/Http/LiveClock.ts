/**
 * Whether a fiber runs on Effect's live `Clock`. The toolkit's HTTP client bounds an attempt with a plain
 * `setTimeout` (`UndiciHttpClient.withDeadline`), right only on the live clock (time `Date.now()`, sleeps
 * `setTimeout`); under any other clock (a `TestClock`, `Effect.withClock`) the toolkit uses `Effect.timeoutFail`.
 * Effect has no public "is this the live clock" test, so this compares with the clock of
 * `DefaultServices.liveServices`; test/client/LiveClock.test.ts fails if that stops holding after an upgrade.
 *
 * Source: docs/decisions/0006-client-own-code-or-stock.md.
 *
 * @since 0.1.0
 */
import { Clock, Context, DefaultServices, type Fiber } from "effect"

/** The clock of Effect's live default services. */
const liveClock: Clock.Clock = Context.get(DefaultServices.liveServices, Clock.Clock)

/**
 * True when `fiber` runs on Effect's live clock (time `Date.now()`, sleeps `setTimeout`); false under a `TestClock`
 * or any clock given with `Effect.withClock`.
 *
 * @since 0.1.0
 * @category Predicates
 */
export const runsOnLiveClock = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean => isLiveClock(clockOf(fiber))

/**
 * True when `clock` is Effect's live clock (e.g. the one `Effect.clockWith` gives on a default runtime).
 *
 * @since 0.1.0
 * @category Predicates
 */
export const isLiveClock = (clock: Clock.Clock): boolean => clock === liveClock

/**
 * The `Clock` `fiber` runs on.
 *
 * @since 0.1.0
 * @category Getters
 */
export const clockOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Clock.Clock =>
  Context.get(fiber.currentDefaultServices, Clock.Clock)
