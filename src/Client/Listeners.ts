/**
 * Listeners (published ports): unpublish a port. Works on running, paused and sleeping boxes without waking them;
 * only the box's creator may do it.
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}".
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"
import { GuestPort } from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import { commonErrors, only, Transport, validate } from "./Transport.js"

/** The Listeners service. */
export class Listeners extends Effect.Service<Listeners>()("boxkit/Listeners", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /**
       * Unpublishes `guestPort` (1 to 65535). Answers `{ box_id, guest_port }`. `ConflictError` when the box has no
       * persistence; `NotFoundError` when the port is not published.
       */
      unpublish: Effect.fn("Listeners.unpublish")(function*(boxId: BoxId, guestPort: number) {
        const port = yield* validate(GuestPort, guestPort)
        return yield* transport.call(
          transport.box.listeners.unpublish({ path: { box_id: boxId, guest_port: port }, headers: {} }),
          { safeToRepeat: true }
        ).pipe(only(...commonErrors, ApiError.ConflictError))
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
