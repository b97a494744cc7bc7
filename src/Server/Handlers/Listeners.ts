/**
 * Handlers of the listeners group: DELETE /boxes/{box_id}/listeners/{guest_port}. Works on running, paused and
 * sleeping boxes without waking them; removes custom domains with the port; returns a tcp address to the
 * organization's pool; only the creator may unpublish; boxes without persistence answer 409.
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}" rules 1-3, States table.
 *
 * @since 0.1.0
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi, OwnerOverrideHeader } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { BoxId } from "../../Domain/Ids.js"
import { operableBox } from "../BoxAccess.js"
import { Boxes, TcpAddresses } from "../Repositories.js"

/** The listeners handlers. */
export const layer = HttpApiBuilder.group(BoxServiceApi, "listeners", (handlers) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    const tcpAddresses = yield* TcpAddresses
    return handlers.handle("unpublish", ({ headers, path }) =>
      Effect.gen(function*() {
        const box = yield* operableBox(
          yield* Principal,
          path.box_id,
          "unpublish ports",
          headers[OwnerOverrideHeader],
          "creatorOnly"
        )
        if (!box.persistent) {
          return yield* Effect.fail(ApiError.make.conflict(
            `Box ${box.id} has no persistence: listeners require persistence.`,
            "failed_precondition"
          ))
        }
        const listener = box.listeners.find((entry) => entry.guest_port === path.guest_port)
        if (listener === undefined) {
          return yield* Effect.fail(ApiError.make.notFound(
            `Port ${path.guest_port} is not published on box ${box.id}.`,
            "guest_port"
          ))
        }
        // The status is left as it is: unpublishing never wakes a paused or sleeping box.
        yield* boxes.update(box.id, (record) => ({
          ...record,
          listeners: record.listeners.filter((entry) => entry.guest_port !== path.guest_port)
        }))
        if (listener.protocol === "tcp") yield* tcpAddresses.release(box.orgId, listener.address)
        return { box_id: BoxId.make(box.id), guest_port: path.guest_port }
      }))
  }))
