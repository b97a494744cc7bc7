/**
 * Exec: set the terminal size of an exec. Ids that do not fit one URL path segment are sent as `-` with the complete
 * id in `exec_request_id`.
 *
 * Source: spec "POST {base_url}/boxes/{box_id}/exec/{exec_id}/resize".
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"
import { ResizeRequest } from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import type { BoxCallOptions } from "./Boxes.js"
import { Transport, validate } from "./Transport.js"

/**
 * True when an exec id can be sent as one URL path segment (not `-`, no `/`, `?`, `#`, `%`, at most 200 bytes).
 *
 * @since 0.1.0
 * @category Guards
 */
export const fitsPathSegment = (execId: string): boolean =>
  execId !== "-" && execId !== "." && execId !== ".." && !/[/?#%]/.test(execId) &&
  new TextEncoder().encode(execId).byteLength <= 200

/**
 * The Exec service (`yield* Exec`): `resize` an exec's terminal (columns and rows). Fails with the errors its
 * endpoint lists (`OperationErrors["exec"]`, the `CallError`s). Provided by `Boxkit.layer`; source: spec
 * "POST {base_url}/boxes/{box_id}/exec/{exec_id}/resize".
 *
 * @since 0.1.0
 * @category Services
 */
export class Exec extends Effect.Service<Exec>()("boxkit/Exec", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /**
       * Sets the latest terminal size (`cols`, `rows`: integers 1 to 65535) of exec `execId`. An unknown exec or one
       * without a terminal is a no-op on the service. Answers `{}`.
       */
      resize: Effect.fn("Exec.resize")(function*(
        boxId: BoxId,
        execId: string,
        size: { readonly cols: number; readonly rows: number },
        options: BoxCallOptions = {}
      ) {
        const payload = yield* validate(ResizeRequest, size)
        if (execId.length === 0) {
          return yield* Effect.fail(ApiError.make.invalidRequest("exec_id must not be empty.", "exec_id"))
        }
        const inPath = fitsPathSegment(execId)
        return yield* transport.operation("exec", "resize", {
          path: { box_id: boxId, exec_id: inPath ? execId : "-" },
          urlParams: inPath ? {} : { exec_request_id: execId },
          payload
        }, { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry, ownerOverrideReason: options.ownerOverrideReason })
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
