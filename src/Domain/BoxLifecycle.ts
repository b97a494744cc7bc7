/**
 * The box lifecycle, in one place: which statuses a box ends in, and what each operation does to a box in each
 * status. The local service's handlers and box runtime apply it; the client's `Boxes.awaitStatus` reads its end
 * statuses.
 *
 * - A new box is `creating`; its boot makes it `running` (or `failed` when its image cannot start).
 * - `pause` and `sleep` move a `running` box to `paused` / `sleeping`; asking again is no change.
 * - `resume` wakes a `paused` or `sleeping` box (`running` again, after a pending upgrade cold-starts it); a
 *   `running` box is no change.
 * - `upgrade` restarts a `running` box on the current runtime; on a `paused` or `sleeping` box it is recorded and
 *   applied when the box wakes.
 * - `terminate` ends a box in any status (`terminated`).
 * - Every other combination is refused (409 `conflict_error` on the service).
 *
 * Source: spec "Boxes" (statuses, lifecycle operations, upgrade); docs/ASSUMPTIONS.md "Boxes" (the choices for
 * combinations the spec does not show).
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
