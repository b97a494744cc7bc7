/**
 * The tone of a status, one table for every place that shows a status in colour: the inspection page of the local
 * service (`/_local/`, InspectionPage.ts: CSS classes `good`, `bad`, `moving`) and the command line's output
 * (src/Cli/client/Output.ts: green, red, yellow).
 *
 * - `good`: usable, or finished well: a `running` box, a `completed` model response.
 * - `bad`: over, or ended badly: a box in one of BoxLifecycle's end statuses (`failed`, `create_failed`,
 *   `terminating`, `terminated`, `interrupted_unsafe_to_retry`); a model response `failed`, `cancelled` or
 *   `incomplete` (finished with less than was asked).
 * - `moving`: every other status, on its way somewhere (`creating`, `paused`, `sleeping`, `interrupted_restorable`,
 *   `queued`, `in_progress`), and statuses the spec does not list yet (both sets are open).
 *
 * Source: spec "States and transitions" (box statuses), "Model response object" (response statuses); the tones are
 * boxkit's presentation (docs/ASSUMPTIONS.md "Command line (client commands)").
 *
 * @since 0.1.0
 */
import * as BoxLifecycle from "./BoxLifecycle.js"

/**
 * How a status is shown: `good`, `bad` or `moving` (see the module's table).
 *
 * @since 0.1.0
 * @category Models
 */
export type Tone = "good" | "bad" | "moving"

/**
 * The statuses shown as `good`: `running` (box), `completed` (model response).
 *
 * @since 0.1.0
 * @category Constants
 */
export const goodStatuses: ReadonlyArray<string> = ["running", "completed"]

/**
 * The statuses shown as `bad`: BoxLifecycle's end statuses, and the model response statuses `failed`, `cancelled`,
 * `incomplete`.
 *
 * @since 0.1.0
 * @category Constants
 */
export const badStatuses: ReadonlyArray<string> = Array.from(
  new Set([...BoxLifecycle.endStatuses, "failed", "cancelled", "incomplete"])
)

/**
 * The tone of `status` (a box's or a model response's): `good`, `bad`, else `moving`.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toneOf = (status: string): Tone =>
  goodStatuses.includes(status) ? "good" : badStatuses.includes(status) ? "bad" : "moving"
