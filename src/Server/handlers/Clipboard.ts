/**
 * Handlers of the clipboard group: PUT /boxes/{box_id}/clipboard places the raw body on the box clipboard.
 * Content-Type must be `text/plain` or `image/*` (parameters such as charset ignored); a guest image without a
 * clipboard answers 501 `not_implemented_error` `unimplemented`; a box that is not running answers 409.
 *
 * Source: spec "PUT {base_url}/boxes/{box_id}/clipboard"; when a box accepts a write and the size limit are not
 * shown (docs/ASSUMPTIONS.md: running boxes only; at most 8 MiB).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../../ApiError.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import { BoxServiceApi, OwnerOverrideHeader } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { operate } from "../boxes/BoxAccess.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { Boxes } from "../state/Repositories.js"


/** The media type of a Content-Type header without parameters, lowercased; None for types the clipboard refuses. */
export const clipboardMediaType = (contentType: string | undefined): string | undefined => {
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase()
  return mediaType === "text/plain" || /^image\/[a-z0-9.+-]+$/.test(mediaType) ? mediaType : undefined
}

/** The clipboard handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "clipboard", (handlers) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    const config = yield* LocalServiceConfig
    return handlers.handleRaw("write", ({ headers, path, request }) =>
      Effect.gen(function*() {
        const mediaType = clipboardMediaType(request.headers["content-type"])
        if (mediaType === undefined) {
          return yield* Effect.fail(ApiError.make.invalidRequest(
            "Content-Type must be text/plain or an image/* type.",
            "Content-Type"
          ))
        }
        const principal = yield* Principal
        return yield* operate(principal, path.box_id, "write the clipboard of", headers[OwnerOverrideHeader], "accepts", (box) =>
          Effect.gen(function*() {
            if (!box.hasClipboard) {
              return yield* Effect.fail(ApiError.make.notImplemented("The guest image of this box has no clipboard."))
            }
            if (box.status !== "running") {
              return yield* Effect.fail(ApiError.make.conflict(
                `Box ${box.id} is ${box.status}; the clipboard takes writes only while the box is running.`,
                "failed_precondition"
              ))
            }
            const bytes = new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
            // At most Box.maxClipboardBytes: the request pipeline refused a larger body (the operation's body limit).
            // Written only while the box is still running (it may have been paused since it was read), and checked
            // against the organization's stored bytes in the same step as the write (Quotas.ts): a write no larger
            // than what it replaces frees bytes and passes even over the quota.
            const written = { ok: false }
            const outcome = yield* boxes.updateWithinStoredBytes(box.id, (record) => {
              if (record.status !== "running") return record
              written.ok = true
              return { ...record, clipboard: { mediaType, bytes } }
            }, config.quotas.storedBytes)
            if (outcome._tag === "Refused") {
              return yield* Effect.fail(Quotas.storedBytesExceeded(config.quotas, outcome.storedBytes, outcome.adding))
            }
            if (outcome._tag === "Missing" || !written.ok) {
              return yield* Effect.fail(ApiError.make.conflict(
                `Box ${box.id} stopped running; the clipboard takes writes only while the box is running.`,
                "failed_precondition"
              ))
            }
            return {}
          }))
      }))
  }))
