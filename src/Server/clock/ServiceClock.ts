/**
 * The one clock of the local service and what moves it. `--clock real` (the default) is Effect's live clock;
 * `--clock virtual` is a {@link VirtualClock} (real time plus a stored offset, at real speed) given to every fiber of
 * the service, so every rule that reads `Clock` or sleeps on it follows it.
 *
 * {@link ServiceClock.advance} moves a virtual clock forward and, before it returns, runs what became due in between,
 * in time order: each time-driven part of the service registers a {@link DuePart} (its next due instant and the work
 * that is due then); the advance steps the clock to the earliest instant due within the move, runs and awaits that
 * part's due work, and so on, then sets the final time and runs the parts without instants (sweeps). A part's due work
 * is the same work its own background loop does (which also wakes, since its sleep follows the clock), and safe to run
 * twice. The offset is stored (ClockOffset.ts): a restart on a durable store resumes it; instances sharing a database
 * read it at each `GET /_local/clock` and every {@link pollInterval}.
 *
 * Source: docs/decisions/0007-virtual-clock.md, docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, DefaultServices, Duration, Effect, Layer, Option, Schedule, type Scope } from "effect"
import type { StoreError } from "../state/StoreError.js"
import { ClockOffset } from "./ClockOffset.js"
import { VirtualClock } from "./VirtualClock.js"

export { sleepUntil, VirtualClock } from "./VirtualClock.js"

/**
 * `real`: the service runs on the real time and cannot be advanced; `virtual`: real time plus an offset that
 * {@link ServiceClock.advance} raises.
 *
 * @since 0.1.0
 * @category Models
 */
export type ClockMode = "real" | "virtual"

/** The clock modes, as `--clock` takes them. @since 0.1.0 @category Constants */
export const clockModes: ReadonlyArray<ClockMode> = ["real", "virtual"]

/**
 * The largest advance, in seconds (3,650 days): larger moves are refused as bad input.
 *
 * @since 0.1.0
 * @category Constants
 */
export const maxAdvanceSeconds = 3650 * 86_400

/**
 * How often a service on a durable store reads the stored offset, to follow advances made by another instance
 * (real time: 1 s).
 *
 * @since 0.1.0
 * @category Constants
 */
export const pollInterval: Duration.Duration = Duration.seconds(1)

/**
 * The clock as `GET /_local/clock` shows it: its `mode`, its time (`nowMillis`, Unix milliseconds) and how far it is
 * ahead of the real time (`offsetMillis`; 0 on a real clock).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ClockReading {
  readonly mode: ClockMode
  readonly nowMillis: number
  readonly offsetMillis: number
}

/**
 * The answer of `GET /_local/clock` and `POST /_local/clock/advance`: `now` (RFC 3339, UTC, milliseconds), `mode`,
 * and `offset_seconds` (how far the clock is ahead of the real time, in seconds, fractions kept).
 *
 * @since 0.1.0
 * @category Models
 */
export const toJson = (reading: ClockReading) => ({
  now: new Date(reading.nowMillis).toISOString(),
  mode: reading.mode,
  offset_seconds: reading.offsetMillis / 1000
})

/**
 * An advance asked of a real clock (`boxkit serve` without `--clock virtual`): answered 409.
 *
 * @since 0.1.0
 * @category Errors
 */
export class ClockIsReal extends Data.TaggedError("ClockIsReal")<{}> {
  override get message(): string {
    return "The service's clock is real: start it with --clock virtual to advance it."
  }
}

/**
 * A time-driven part of the service, as an advance sees it: `nextDueMillis(untilMillis)`, the earliest instant (Unix
 * milliseconds of the service's clock) at which it has work due, if it is at or before `untilMillis` (None when it
 * has none by then; absent for a part run once at the advance's final time: a sweep, whose outcome does not depend on
 * when it ran); `runDue`, the work due by the clock's time, awaited. Both may fail with the store's `StoreError`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface DuePart {
  readonly name: string
  readonly nextDueMillis?: ((untilMillis: number) => Effect.Effect<Option.Option<number>, StoreError>) | undefined
  readonly runDue: Effect.Effect<unknown, StoreError>
}

/**
 * The service's clock: its `mode`, the `Clock` its fibers run on (`clock`), `read` (the stored offset read first,
 * so an advance by another instance is seen), `advance` (moves a virtual clock forward by `millis` and runs what
 * became due, in time order; fails with {@link ClockIsReal} on a real clock, `StoreError` when the store does) and
 * `register` (a {@link DuePart}, for as long as the scope lasts) and `resume` (a virtual clock set at least
 * `offsetMillis` ahead of the real time, stored: a snapshot's clock; a real clock ignores it).
 *
 * @since 0.1.0
 * @category Services
 */
export class ServiceClock extends Context.Tag("boxkit/server/ServiceClock")<ServiceClock, {
  readonly mode: ClockMode
  readonly clock: VirtualClock | undefined
  readonly read: Effect.Effect<ClockReading, StoreError>
  readonly advance: (millis: number) => Effect.Effect<ClockReading, ClockIsReal | StoreError>
  readonly register: (part: DuePart) => Effect.Effect<void, never, Scope.Scope>
  readonly resume: (offsetMillis: number) => Effect.Effect<void, StoreError>
}>() {}

/**
 * Registers `part` with the service's clock when there is one (a service built without it, e.g. a part's own test,
 * has no advances to serve).
 *
 * @since 0.1.0
 * @category Utils
 */
export const registerDue = (part: DuePart): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.serviceOption(ServiceClock), (service) =>
    Option.isSome(service) ? service.value.register(part) : Effect.void)

/**
 * The clock of a service in `mode`: a fresh {@link VirtualClock} (offset zero until the stored one is read), or
 * undefined for the real clock (Effect's live clock stays).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeClock = (mode: ClockMode): VirtualClock | undefined =>
  mode === "virtual" ? new VirtualClock() : undefined

/**
 * `layer` with every fiber it starts (its background loops, and the requests of a serving path built inside it) on
 * `clock`; the layer as it is for the real clock (undefined).
 *
 * @since 0.1.0
 * @category Layers
 */
export const onClock =
  (clock: VirtualClock | undefined) => <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
    clock === undefined
      ? layer
      : Layer.locallyWith(layer, DefaultServices.currentServices, Context.add(Clock.Clock, clock))

/**
 * The process's real clock: Effect's live clock, whatever clock the fiber runs on (the service's virtual clock, or a
 * `TestClock`). For what is about the processes rather than the simulated world: the polling of the stored offset,
 * and the instances' heartbeats and whether an instance is alive (state/sql/SqlWork.ts), which an advance must not
 * move (an instance an hour behind in reading the offset is not an hour dead).
 *
 * Source: docs/decisions/0007-virtual-clock.md.
 *
 * @since 0.1.0
 * @category Constants
 */
export const realClock: Clock.Clock = Context.get(DefaultServices.liveServices, Clock.Clock)

/**
 * The real wall-clock time of the process, Unix milliseconds ({@link realClock}), never the service's clock.
 *
 * Source: docs/decisions/0007-virtual-clock.md.
 *
 * @since 0.1.0
 * @category Utils
 */
export const realTimeMillis: Effect.Effect<number> = realClock.currentTimeMillis

/**
 * The earliest of `instants` (Unix milliseconds; nulls skipped), for a part's `nextDueMillis`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const earliest = (instants: Iterable<number | null | undefined>): Option.Option<number> => {
  let found: number | undefined
  for (const instant of instants) {
    if (instant !== null && instant !== undefined && (found === undefined || instant < found)) found = instant
  }
  return Option.fromNullable(found)
}

/** Steps that an advance takes at most (instants it stops at): a part whose due instant never passes cannot hang it. */
const maxSteps = 1_000_000

/** The earliest due instant of `parts` at or before `targetMillis`, with its part. */
const earliestDue = (parts: ReadonlyArray<DuePart>, targetMillis: number) =>
  Effect.reduce(parts, undefined as { readonly part: DuePart; readonly dueMillis: number } | undefined, (best, part) =>
    part.nextDueMillis === undefined ? Effect.succeed(best) : Effect.map(part.nextDueMillis(targetMillis), (due) =>
      Option.isSome(due) && due.value <= targetMillis && (best === undefined || due.value < best.dueMillis)
        ? { part, dueMillis: due.value }
        : best))

/**
 * Moves `clock` to `targetOffsetMillis` ahead of the real time, stopping at each instant a part has work due, in
 * order, to run it; then runs the sweeps at the final time.
 */
const stepThrough = (clock: VirtualClock, parts: ReadonlyArray<DuePart>, targetOffsetMillis: number) =>
  Effect.gen(function*() {
    for (let step = 0; step < maxSteps; step++) {
      const due = yield* earliestDue(parts, clock.realTimeMillis() + targetOffsetMillis)
      if (due === undefined) break
      clock.moveTo(due.dueMillis)
      yield* due.part.runDue
    }
    clock.setOffset(targetOffsetMillis)
    for (const part of parts) if (part.nextDueMillis === undefined) yield* part.runDue
  })

/**
 * The service's clock in `mode` over the store's {@link ClockOffset}: a virtual `clock` (from {@link makeClock},
 * the one given to the service's fibers) starts at the stored offset; on a durable store (`durable`) it reads the
 * stored offset every {@link pollInterval} of real time. Fails with `StoreError` when the offset cannot be read.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (clock: VirtualClock | undefined, options: { readonly durable: boolean }) =>
  Layer.scoped(
    ServiceClock,
    Effect.gen(function*() {
      const offsets = yield* ClockOffset
      const parts = new Set<DuePart>()
      const advancing = yield* Effect.makeSemaphore(1)
      const follow = (stored: Option.Option<number>) =>
        Effect.sync(() => Option.isSome(stored) && clock?.setOffset(stored.value))
      if (clock !== undefined) {
        yield* Effect.flatMap(offsets.get, follow)
        if (options.durable) {
          yield* Effect.flatMap(offsets.get, follow).pipe(
            Effect.catchAll(Effect.logWarning),
            Effect.repeat(Schedule.spaced(pollInterval)),
            Effect.withClock(realClock),
            Effect.forkScoped
          )
        }
      }
      const reading = (): ClockReading =>
        clock === undefined
          ? { mode: "real", nowMillis: realClock.unsafeCurrentTimeMillis(), offsetMillis: 0 }
          : { mode: "virtual", nowMillis: clock.unsafeCurrentTimeMillis(), offsetMillis: clock.offsetMillis }
      const read = clock === undefined
        ? Effect.sync(reading)
        : Effect.zipRight(Effect.flatMap(offsets.get, follow), Effect.sync(reading))
      return {
        mode: clock === undefined ? "real" : "virtual",
        clock,
        read,
        advance: (millis) =>
          clock === undefined ? Effect.fail(new ClockIsReal()) : advancing.withPermits(1)(Effect.gen(function*() {
            yield* Effect.flatMap(offsets.get, follow)
            const target = clock.offsetMillis + Math.max(0, millis)
            yield* stepThrough(clock, [...parts], target)
            clock.setOffset(yield* offsets.raise(clock.offsetMillis))
            return reading()
            // The parts read the time of the fiber that runs them: the service's clock, whoever asks.
          }).pipe(Effect.withClock(clock))),
        resume: (offsetMillis) =>
          clock === undefined
            ? Effect.void
            : Effect.flatMap(offsets.raise(offsetMillis), (stored) => Effect.sync(() => clock.setOffset(stored))),
        register: (part) =>
          Effect.acquireRelease(Effect.sync(() => parts.add(part)), () => Effect.sync(() => parts.delete(part))).pipe(
            Effect.asVoid
          )
      }
    })
  )
