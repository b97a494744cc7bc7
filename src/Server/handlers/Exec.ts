/**
 * Handlers of the exec group: POST /boxes/{box_id}/exec/{exec_id}/resize. The `-` path form takes the complete exec
 * id from `exec_request_id`. An unknown exec, or one without a terminal, is a no-op; the answer is `{}`.
 *
 * Source: spec "POST {base_url}/boxes/{box_id}/exec/{exec_id}/resize".
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi, OwnerOverrideHeader } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { operate } from "../boxes/BoxAccess.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { Boxes } from "../state/Repositories.js"

/** The exec handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "exec", (handlers) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    return handlers.handle("resize", ({ headers, path, payload, urlParams }) =>
      Effect.gen(function*() {
        let execId = path.exec_id
        if (execId === "-") {
          if (urlParams.exec_request_id === undefined) {
            return yield* Effect.fail(ApiError.make.invalidRequest(
              "exec_request_id is required when the path's exec_id is -.",
              "exec_request_id"
            ))
          }
          execId = urlParams.exec_request_id
        }
        const principal = yield* Principal
        return yield* operate(
          principal,
          path.box_id,
          "resize an exec of",
          headers[OwnerOverrideHeader],
          "accepts",
          (box) =>
            Effect.gen(function*() {
              // Only execs with a terminal have a size to set; any other id (unknown, or without a terminal) is a
              // no-op. The check and the write are one atomic update. Own members only: an exec id such as
              // `constructor` or `__proto__` is an ordinary id, not a member of every object.
              yield* boxes.update(box.id, (record) =>
                Object.hasOwn(record.terminalSizes, execId)
                  ? { ...record, terminalSizes: { ...record.terminalSizes, [execId]: { cols: payload.cols, rows: payload.rows } } }
                  : record)
              return {}
            })
        )
      }))
  }))
