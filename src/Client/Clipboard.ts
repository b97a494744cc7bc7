/**
 * Clipboard: place raw bytes on a box clipboard, with their media type (`text/plain` or `image/*`).
 *
 * Source: spec "PUT {base_url}/boxes/{box_id}/clipboard". The body is raw, so this operation is sent with the
 * transport's `HttpClient` on the contract's path rather than through the JSON client.
 *
 * @since 0.1.0
 */
import { HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"
import { EmptyObject } from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import type { BoxCallOptions } from "./Boxes.js"
import { Transport } from "./Transport.js"

/**
 * True for the media types the clipboard takes: `text/plain` or `image/*` (parameters such as charset ignored).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isClipboardMediaType = (mediaType: string): boolean => {
  const base = mediaType.split(";")[0].trim().toLowerCase()
  return base === "text/plain" || /^image\/[a-z0-9.+-]+$/.test(base)
}

/**
 * The Clipboard service (`yield* Clipboard`): `write` raw bytes with their media type (`text/plain` or `image/*`) to
 * a box's clipboard (the service takes at most `Box.maxClipboardBytes`, 8 MiB), `writeText` a string. Fails with
 * `ClipboardWriteError` (`OperationErrors["clipboard"]`). Provided by `Boxkit.layer`; source: spec
 * "PUT {base_url}/boxes/{box_id}/clipboard".
 *
 * @since 0.1.0
 * @category Services
 */
export class Clipboard extends Effect.Service<Clipboard>()("boxkit/Clipboard", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport

    const write = Effect.fn("Clipboard.write")(function*(
      boxId: BoxId,
      bytes: Uint8Array,
      mediaType: string,
      options: BoxCallOptions = {}
    ) {
      if (!isClipboardMediaType(mediaType)) {
        return yield* Effect.fail(
          ApiError.make.invalidRequest("The media type must be text/plain or an image/* type.", "Content-Type")
        )
      }
      // Sent raw (the body's media type is the caller's); the URL comes from the contract.
      const request = HttpClientRequest.put(transport.urlOf("clipboard", "write", { box_id: boxId })).pipe(
        HttpClientRequest.bodyUint8Array(bytes, mediaType)
      )
      return yield* transport.operationRaw(
        "clipboard",
        "write",
        request,
        HttpClientResponse.schemaBodyJson(EmptyObject),
        { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry, ownerOverrideReason: options.ownerOverrideReason }
      )
    })

    return {
      /**
       * Places `bytes` on the clipboard as `mediaType`. `NotImplementedError` (code `unimplemented`) when the guest
       * image has no clipboard; `ConflictError` when the box cannot take a write now. Answers `{}`.
       */
      write,
      /** Places UTF-8 text on the clipboard as `text/plain; charset=utf-8`. */
      writeText: (boxId: BoxId, text: string, options: BoxCallOptions = {}) =>
        write(boxId, new TextEncoder().encode(text), "text/plain; charset=utf-8", options)
    }
  }),
  dependencies: [Transport.Default]
}) {}

