/**
 * The simulated box runtime of the local service: boots boxes (`creating` → `running`, or `failed` with
 * `error_message`), moves them between states, applies upgrades as the spec's States table says (a running box
 * restarts onto the current runtime, taking the boot delay; a paused or sleeping box applies a recorded upgrade on its
 * next wake, a cold start), and terminates boxes whose `max_lifetime_seconds` elapsed, whatever their state (checked
 * every `expiryCheckInterval`, so termination can come after the deadline; an advance of the virtual clock boots and
 * ends boxes at their instants, clock/ServiceClock.ts).
 *
 * Base images of the local runtime (docs/ASSUMPTIONS.md): `debian`, `ubuntu`, `alpine` boot normally;
 * `boxkit/no-clipboard` boots without a clipboard (clipboard writes answer 501); `boxkit/ephemeral` boots without
 * persistence (listener operations answer 409); `boxkit/fail-to-start` ends `failed` with an `error_message`.
 *
 * Source: spec "States and transitions", "Create a box" (max_lifetime_seconds), "POST .../upgrade".
 *
 * @since 0.1.0
 */
import { Clock, Context, Deferred, Duration, Effect, Exit, Layer, Option, Schedule } from "effect"
import * as BoxLifecycle from "../../Domain/BoxLifecycle.js"
import * as ServiceClock from "../clock/ServiceClock.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as ListenerPolicy from "./ListenerPolicy.js"
import { DurableWork } from "../state/DurableWork.js"
import type { StoreError } from "../state/StoreError.js"
import * as StoreOutage from "../state/StoreOutage.js"
import {
  Boxes,
  type BoxRecord,
  type ListenerRecord,
  noListeners,
  noTerminalSizes,
  RuntimeVersion,
  TcpAddresses
} from "../state/Repositories.js"

/** Base images the local runtime knows, with their capabilities. */
export const baseImages: Readonly<Record<string, { clipboard: boolean; persistent: boolean; failsToStart: boolean }>> = {
  debian: { clipboard: true, persistent: true, failsToStart: false },
  ubuntu: { clipboard: true, persistent: true, failsToStart: false },
  alpine: { clipboard: true, persistent: true, failsToStart: false },
  "boxkit/no-clipboard": { clipboard: false, persistent: true, failsToStart: false },
  "boxkit/ephemeral": { clipboard: true, persistent: false, failsToStart: false },
  "boxkit/fail-to-start": { clipboard: true, persistent: true, failsToStart: true }
}

/**
 * The base image named `name`, or undefined when the local service has none of that name. Only the table's own
 * entries count: `__proto__`, `constructor` or `toString` are unknown images, not properties of an object.
 */
export const baseImageOf = (name: string | undefined) =>
  name !== undefined && Object.hasOwn(baseImages, name) ? baseImages[name] : undefined

/** The error message of a box built from `boxkit/fail-to-start`. */
export const failToStartMessage = "The guest failed to boot: the image boxkit/fail-to-start never starts (simulated)."

/** The runtime of the local service; each operation fails with `StoreError` when the state store does. */
export class BoxRuntime extends Context.Tag("boxkit/server/BoxRuntime")<BoxRuntime, {
  /** The current runtime version (guest_schema_version) new boots use. */
  readonly currentVersion: Effect.Effect<number, StoreError>
  /** Raises the current runtime version; boxes on an older one become "not current". */
  readonly setCurrentVersion: (version: number) => Effect.Effect<void, StoreError>
  /**
   * Starts booting a box in `creating`; it becomes `running` (or `failed`) after the boot delay. The boots wait in
   * one queue served by one fiber of the layer's scope (not a fiber per box).
   */
  readonly boot: (boxId: string) => Effect.Effect<void, StoreError>
  /**
   * A wake of a paused or sleeping box (resume). With a recorded upgrade it is a cold start: the box moves onto the
   * current runtime, memory and processes do not survive (clipboard and terminals cleared), `bootCount` + 1.
   */
  readonly wake: (box: BoxRecord) => Effect.Effect<BoxRecord, StoreError>
  /**
   * The upgrade of a running box that is not on the current runtime: it moves onto the current version and restarts
   * (processes stop, memory clears: clipboard and terminals cleared, `bootCount` + 1). The state changes at once; the
   * call returns after the simulated restart time (`bootDelay`). None when the box does not exist.
   */
  readonly restart: (boxId: string) => Effect.Effect<Option.Option<BoxRecord>, StoreError>
  /**
   * Terminates a box now: its listeners go (tcp addresses return to the organization's pool), clipboard and terminals
   * are cleared. None when it does not exist.
   */
  readonly terminate: (boxId: string) => Effect.Effect<Option.Option<BoxRecord>, StoreError>
  /** Terminates every box whose lifetime has elapsed; returns how many. */
  readonly expire: Effect.Effect<number, StoreError>
}>() {}

const terminated = (box: BoxRecord): BoxRecord => ({
  ...box,
  status: BoxLifecycle.terminatedStatus,
  listeners: noListeners,
  clipboard: null,
  terminalSizes: noTerminalSizes
})

/** A cold start onto runtime `version`: memory and processes do not survive. */
const coldStart = (box: BoxRecord, version: number): BoxRecord => ({
  ...box,
  status: "running",
  pendingUpgrade: false,
  guestSchemaVersion: version,
  clipboard: null,
  terminalSizes: noTerminalSizes,
  bootCount: box.bootCount + 1
})

/** A boot: a box in `creating` becomes `running` on runtime `current` (or `failed`); any other box is left as it is. */
const booted = (current: number) => (box: BoxRecord): BoxRecord => {
  if (box.status !== "creating") return box
  const image = baseImageOf(box.image.base)
  const status = BoxLifecycle.afterBoot(image?.failsToStart === true)
  if (status !== "running") return { ...box, status, errorMessage: failToStartMessage }
  return { ...box, status, guestSchemaVersion: current, bootCount: box.bootCount + 1 }
}

/**
 * Terminates a box now, its listeners taken in the same atomic update (so concurrent terminations release each tcp
 * address once) and then given back to the organization's pool. None when it does not exist.
 */
const terminateBox = (
  boxes: Context.Tag.Service<Boxes>,
  tcpAddresses: Context.Tag.Service<TcpAddresses>,
  boxId: string
) =>
  Effect.gen(function*() {
    let released: ReadonlyArray<ListenerRecord> = []
    const updated = yield* boxes.update(boxId, (box) => {
      released = box.listeners
      return terminated(box)
    })
    if (Option.isSome(updated)) yield* ListenerPolicy.releaseAddresses(tcpAddresses, updated.value.orgId, released)
    return updated
  })

/**
 * Boots waiting for their time, in order of creation (the boot delay is the same for every box, so the times only
 * grow): `serve` is one fiber that sleeps until the first is due and boots every box due then in one update, instead
 * of a sleeping fiber per box; `enqueue` adds a box due `bootDelayMillis` from now.
 */
const makeBootQueue = <E>(
  boxes: Context.Tag.Service<Boxes>,
  currentVersion: Effect.Effect<number, E>,
  bootDelayMillis: number
) => {
  const pendingIds: Array<string> = []
  const pendingDue: Array<number> = []
  let head = 0
  let wake: Deferred.Deferred<void> | undefined
  // Boots every box due at `now` in one update (one read of their rows and one commit in a durable store).
  const bootDue = (now: number) =>
    Effect.gen(function*() {
      const due: Array<string> = []
      while (head < pendingIds.length && pendingDue[head] <= now) due.push(pendingIds[head++])
      if (due.length === 0) return
      yield* boxes.updateAll(due, booted(yield* currentVersion))
      if (head > 1024 && head * 2 > pendingIds.length) {
        pendingIds.splice(0, head)
        pendingDue.splice(0, head)
        head = 0
      }
    })
  const serve = Effect.gen(function*() {
    while (true) {
      if (head === pendingIds.length) {
        pendingIds.length = 0
        pendingDue.length = 0
        head = 0
        const deferred = yield* Deferred.make<void>()
        // Boots queued while the deferred was made are served first; later ones complete it.
        if (head < pendingIds.length) continue
        wake = deferred
        yield* Deferred.await(deferred)
        continue
      }
      const now = yield* Clock.currentTimeMillis
      if (pendingDue[head] > now) {
        yield* Effect.sleep(Duration.millis(pendingDue[head] - now))
        continue
      }
      yield* bootDue(now)
    }
  })
  const enqueue = (boxId: string) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      pendingIds.push(boxId)
      pendingDue.push(now + bootDelayMillis)
      if (wake !== undefined) {
        Deferred.unsafeDone(wake, Exit.void)
        wake = undefined
      }
    })
  // What an advance of the clock runs (ServiceClock.ts): the first boot's time, and the boots due by now.
  const nextDue = (untilMillis: number) =>
    Effect.sync(() =>
      head < pendingIds.length && pendingDue[head] <= untilMillis ? Option.some(pendingDue[head]) : Option.none()
    )
  return { serve, enqueue, nextDue, bootDue: Effect.flatMap(Clock.currentTimeMillis, bootDue) }
}

/**
 * Boots nobody will finish (the service restarted, or the instance that queued them is gone): boxes `creating` for
 * longer than the boot delay and a second (or created before `createdBeforeMillis`, Unix ms, when given), booted now
 * on the current runtime.
 */
const finishUnfinishedBoots = <E>(
  boxes: Context.Tag.Service<Boxes>,
  currentVersion: Effect.Effect<number, E>,
  bootDelayMillis: number,
  createdBeforeMillis?: number
) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const stuck = yield* boxes.creating(createdBeforeMillis ?? now - bootDelayMillis - 1000)
    if (stuck.length === 0) return
    const current = yield* currentVersion
    for (const box of stuck) yield* boxes.update(box.id, booted(current))
  })

/** The runtime, with the periodic lifetime check running in the layer's scope. */
export const layer = Layer.scoped(
  BoxRuntime,
  Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const boxes = yield* Boxes
    const tcpAddresses = yield* TcpAddresses
    const versions = yield* RuntimeVersion
    const currentVersion = Effect.map(versions.get, Option.getOrElse(() => config.initialGuestSchemaVersion))
    const terminate = (boxId: string) => terminateBox(boxes, tcpAddresses, boxId)
    const bootDelayMillis = Duration.toMillis(config.bootDelay)

    const bootQueue = makeBootQueue(boxes, currentVersion, bootDelayMillis)
    yield* bootQueue.serve.pipe(
      Effect.catchAllCause(StoreOutage.logBackgroundFailure("box boots")),
      Effect.forkScoped
    )

    const expire = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = yield* boxes.expired(now)
      for (const box of due) yield* terminate(box.id)
      return due.length
    })
    // An advance of the virtual clock boots and ends boxes at their instants, in order (ServiceClock.ts).
    yield* ServiceClock.registerDue({ name: "box boots", nextDueMillis: bootQueue.nextDue, runDue: bootQueue.bootDue })
    yield* ServiceClock.registerDue({
      name: "box lifetimes",
      nextDueMillis: (untilMillis) =>
        Effect.map(boxes.expired(untilMillis), (due) => ServiceClock.earliest(due.map(BoxLifecycle.lifetimeDeadline))),
      runDue: expire
    })
    yield* expire.pipe(
      Effect.repeat(Schedule.spaced(config.expiryCheckInterval)),
      Effect.catchAllCause(StoreOutage.logBackgroundFailure("box lifetime check")),
      Effect.forkScoped
    )

    // Looked for at start and every `recoveryInterval`, only where a store outlives the process (or is shared by
    // instances): only such a store can hold boots nobody finishes. In memory, only a snapshot restored at start
    // (StateSnapshots.ts) can hold boxes still `creating`, none of them queued here: those created before the service
    // started are booted once, at start.
    if ((yield* DurableWork).resumable) {
      yield* finishUnfinishedBoots(boxes, currentVersion, bootDelayMillis).pipe(
        Effect.catchAllCause(StoreOutage.logBackgroundFailure("looking for unfinished boots")),
        Effect.repeat(Schedule.spaced(config.recoveryInterval)),
        Effect.forkScoped
      )
    } else {
      const startedAt = yield* Clock.currentTimeMillis
      yield* finishUnfinishedBoots(boxes, currentVersion, bootDelayMillis, startedAt).pipe(
        Effect.catchAllCause(StoreOutage.logBackgroundFailure("booting the boxes of a restored snapshot")),
        Effect.forkScoped
      )
    }

    return {
      currentVersion,
      setCurrentVersion: versions.set,
      terminate,
      boot: bootQueue.enqueue,
      wake: (box) =>
        Effect.gen(function*() {
          const current = yield* currentVersion
          const updated = yield* boxes.update(box.id, (record) =>
            record.pendingUpgrade ? coldStart(record, current) : { ...record, status: "running" })
          return Option.getOrElse(updated, () => box)
        }),
      restart: (boxId) =>
        Effect.gen(function*() {
          const current = yield* currentVersion
          const updated = yield* boxes.update(boxId, (record) => coldStart(record, current))
          yield* Effect.sleep(config.bootDelay)
          return updated
        }),
      expire
    }
  })
)
