/**
 * The clipboard group of the contract (`ClipboardGroup`).
 *
 * Source: spec "PUT {base_url}/boxes/{box_id}/clipboard".
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
 * Clipboard: PUT /boxes/{box_id}/clipboard (spec). The body is raw bytes; its Content-Type (`text/plain` or
 * `image/*`) is the media type. The local service reads the bytes itself.
 *
 * @since 0.1.0
 * @category Contract
 */
export class ClipboardGroup extends HttpApiGroup.make("clipboard")
  .annotate(OpenApi.Description, "Clipboard: text or an image placed on a box's clipboard.")
  .add(
    operation(
      HttpApiEndpoint.put("write")`/boxes/${BoxIdParam}/clipboard`
        .setHeaders(BoxHeaders)
        // The body's media type is the value's: text/plain or any image/* type (spec: Content-Type rule).
        .setPayload(Schema.Union(
          HttpApiSchema.Text({ contentType: "text/plain" }),
          HttpApiSchema.Uint8Array({ contentType: "image/*" })
        ))
        .addSuccess(Box.EmptyObject)
        .addError(Errors.Conflict)
        .addError(Errors.NotImplemented)
        .addError(Errors.QuotaExceeded),
      {
        summary: "Write the clipboard",
        description:
          "Places the raw request body on the box's clipboard; its Content-Type (`text/plain` or an `image/*` " +
          "type) is the media type. `501 not_implemented_error` when the guest image has no clipboard.",
        maxBodyBytes: Box.maxClipboardBytes
      }
    )
  )
  .middleware(Authorization) {}
