/**
 * The box lifecycle, in one place: which statuses a box ends in, which boxes are active (count toward the
 * organization's boxes quota), a box's lifetime deadline, and what each operation does to a box in each status. The
 * local service's handlers, box runtime and stores apply it (the SQL triggers that count active boxes are checked
 * against {@link countsTowardBoxesQuota} by test/durability/BoxLifecycleStores.test.ts); the client's
 * `Boxes.awaitStatus` and the status colours (`StatusTone`) read its end statuses.
 *
 * - A new box is `creating`; its boot makes it `running` (or `failed` when its image cannot start).
 * - `pause` and `sleep` move a `running` box to `paused` / `sleeping`; asking again is no change.
 * - `resume` wakes a `paused` or `sleeping` box (`running` again, after a pending upgrade cold-starts it); a
 *   `running` box is no change.
 * - `upgrade` restarts a `running` box on the current runtime; on a `paused` or `sleeping` box it is recorded and
 *   applied when the box wakes.
 * - `terminate` ends a box in any status (`terminated`).
 * - Every other combination is refused (409 `conflict_error` on the service).
 * - Active: every box not `terminated` counts toward the boxes quota (a failed box still holds its place until it is
 *   terminated).
 * - Lifetime: a box with `max_lifetime_seconds` is due for termination that many seconds after its creation, whatever
 *   its status (waiting, sleeping and paused time included); a terminated box has no deadline.
 *
 * Source: spec "States and transitions" (statuses, upgrade, max_lifetime_seconds), "Create a box"
 * (max_lifetime_seconds); docs/ASSUMPTIONS.md "Boxes (local service)" (the choices for combinations the spec does not
 * show) and "Quotas (local service)" (boxes not terminated).
 *
 * @since 0.1.0
 */
import type { BoxStatus, KnownBoxStatus } from "./Box.js"

/**
 * Statuses after which a box never becomes `running` again on its own: `failed`, `create_failed`, `terminating`,
 * `terminated`, `interrupted_unsafe_to_retry`.
 *
 * @since 0.1.0
 */
export const endStatuses: ReadonlySet<BoxStatus> = new Set<KnownBoxStatus>([
  "failed",
  "create_failed",
  "terminating",
  "terminated",
  "interrupted_unsafe_to_retry"
])

/**
 * True for a status in {@link endStatuses}.
 *
 * @since 0.1.0
 */
export const isEnded = (status: BoxStatus): boolean => endStatuses.has(status)

/**
 * The status a terminated box has (spec "States and transitions": terminate, and the lifetime's end).
 *
 * @since 0.1.0
 */
export const terminatedStatus: KnownBoxStatus = "terminated"

/**
 * True when a box in `status` is active: it counts toward its organization's boxes quota (every status but
 * {@link terminatedStatus}). Source: docs/ASSUMPTIONS.md "Quotas (local service)".
 *
 * @since 0.1.0
 */
export const countsTowardBoxesQuota = (status: BoxStatus): boolean => status !== terminatedStatus

/**
 * The lifetime deadline of a box, in Unix milliseconds: `createdAtMillis` (Unix ms) plus `maxLifetimeSeconds`
 * (seconds), or null when the box has no lifetime (`max_lifetime_seconds` omitted or null) or is already terminated.
 * The box is terminated by the service at or after it. Source: spec "Create a box" (max_lifetime_seconds), "States and
 * transitions".
 *
 * @since 0.1.0
 */
export const lifetimeDeadline = (box: {
  readonly status: BoxStatus
  readonly createdAtMillis: number
  readonly maxLifetimeSeconds: number | null
}): number | null =>
  box.maxLifetimeSeconds !== null && box.status !== terminatedStatus
    ? box.createdAtMillis + box.maxLifetimeSeconds * 1000
    : null

/**
 * The status of a box's boot: `running`, or `failed` when its image cannot start.
 *
 * @since 0.1.0
 */
export const afterBoot = (failsToStart: boolean): KnownBoxStatus => (failsToStart ? "failed" : "running")

/**
 * An operation that changes a box's status.
 *
 * @since 0.1.0
 */
export type Operation = "pause" | "sleep" | "resume" | "upgrade"

/**
 * What an operation does to a box in a given status:
 * - `Unchanged`: the box is where the operation would take it; answer it as it is;
 * - `Move`: set its status to `to` (pause, sleep);
 * - `Wake`: wake it (resume a paused or sleeping box);
 * - `Restart`: restart it on the current runtime now (upgrade of a running box);
 * - `Pending`: record the upgrade, applied at the next wake (paused or sleeping box);
 * - `Refused`: not in this status; `reason` completes `Box <id> is <status>; <reason>.`
 *
 * @since 0.1.0
 */
export type Transition =
  | { readonly _tag: "Unchanged" }
  | { readonly _tag: "Move"; readonly to: KnownBoxStatus }
  | { readonly _tag: "Wake" }
  | { readonly _tag: "Restart" }
  | { readonly _tag: "Pending" }
  | { readonly _tag: "Refused"; readonly reason: string }

const unchanged: Transition = { _tag: "Unchanged" }
const resting = (status: BoxStatus) => status === "paused" || status === "sleeping"

/**
 * The transition of `operation` for a box in `status` (see {@link Transition}).
 *
 * @since 0.1.0
 */
export const transition = (status: BoxStatus, operation: Operation): Transition => {
  switch (operation) {
    case "pause":
    case "sleep": {
      const to: KnownBoxStatus = operation === "pause" ? "paused" : "sleeping"
      if (status === to) return unchanged
      return status === "running"
        ? { _tag: "Move", to }
        : { _tag: "Refused", reason: `only a running box can ${operation}` }
    }
    case "resume":
      if (status === "running") return unchanged
      return resting(status) ? { _tag: "Wake" } : { _tag: "Refused", reason: "only a paused or sleeping box resumes" }
    case "upgrade":
      if (status === "running") return { _tag: "Restart" }
      return resting(status) ? { _tag: "Pending" } : { _tag: "Refused", reason: "it cannot be upgraded" }
  }
}
