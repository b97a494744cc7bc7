/**
 * The exec group of the contract (`ExecGroup`).
 *
 * Source: spec "POST {base_url}/boxes/{box_id}/exec/{exec_id}/resize".
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Box from "../../Domain/Box.js"
import { Errors } from "../Errors.js"
import { BoxHeaders } from "../Headers.js"
import { Authorization, BoxIdParam, operation } from "../Operation.js"

/**
 * Exec: POST /boxes/{box_id}/exec/{exec_id}/resize (spec), with the `-` + `exec_request_id` form.
 *
 * @since 0.1.0
 * @category Contract
 */
export class ExecGroup extends HttpApiGroup.make("exec")
  .annotate(OpenApi.Description, "Exec: the terminals of commands running in a box.")
  .add(
    operation(
      HttpApiEndpoint.post("resize")`/boxes/${BoxIdParam}/exec/${
        HttpApiSchema.param("exec_id", Schema.String.pipe(Schema.minLength(1)))
      }/resize`
        .setUrlParams(Schema.Struct({
          exec_request_id: Schema.optional(
            Schema.String.pipe(Schema.minLength(1, { message: () => "exec_request_id must not be empty" }))
          )
        }))
        .setHeaders(BoxHeaders)
        .setPayload(Box.ResizeRequest)
        .addSuccess(Box.EmptyObject)
        .addError(Errors.IdempotentRequestInFlight),
      {
        summary: "Resize an exec's terminal",
        description:
          "Sets the latest terminal size of an exec; an unknown exec or one without a terminal is a no-op. When " +
          "the exec id does not fit one path segment, send `-` and the id in `exec_request_id`.",
        alsoRefused: [{ param: "exec_request_id", rule: "the path's `exec_id` `-` without `exec_request_id`" }]
      }
    )
  )
  .middleware(Authorization) {}
