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
import * as ContractRoutes from "../http/fast/ContractRoutes.js"
import { Boxes, Responses } from "../state/Repositories.js"


/** The media type of a Content-Type header without parameters, lowercased; None for types the clipboard refuses. */
export const clipboardMediaType = (contentType: string | undefined): string | undefined => {
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase()
  return mediaType === "text/plain" || /^image\/[a-z0-9.+-]+$/.test(mediaType) ? mediaType : undefined
}

/** The clipboard handlers. */
export const layer = ContractRoutes.group(BoxServiceApi, "clipboard", (handlers) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    const responses = yield* Responses
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
            // The organization's stored bytes, without what this clipboard holds now (the write replaces it); a
            // write no larger than what it replaces frees bytes and passes even over the quota.
            const holding = box.clipboard?.bytes.byteLength ?? 0
            if (bytes.byteLength > holding) {
              const usage = yield* boxes.usage(box.orgId)
              const others = usage.clipboardBytes - holding + (yield* responses.storedBytes(box.orgId))
              yield* Quotas.checkStoredBytesReplacing(config.quotas, others, holding, bytes.byteLength)
            }
            // At most Box.maxClipboardBytes: the request pipeline refused a larger body (the operation's body limit).
            // Written only while the box is still running (it may have been paused since it was read).
            const written = { ok: false }
            yield* boxes.update(box.id, (record) => {
              if (record.status !== "running") return record
              written.ok = true
              return { ...record, clipboard: { mediaType, bytes } }
            })
            if (!written.ok) {
              return yield* Effect.fail(ApiError.make.conflict(
                `Box ${box.id} stopped running; the clipboard takes writes only while the box is running.`,
                "failed_precondition"
              ))
            }
            return {}
          }))
      }))
  }))
