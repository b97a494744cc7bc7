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
import { BoxServiceApi } from "../Contract/Api.js"
import { EmptyObject } from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import type { BoxCallOptions } from "./Boxes.js"
import * as ContractClient from "./ContractClient.js"
import { commonErrors, only, ownerOverrideHeaders, Transport } from "./Transport.js"
import * as Tracing from "./Tracing.js"

/** True for the media types the clipboard takes: `text/plain` or `image/*` (parameters such as charset ignored). */
export const isClipboardMediaType = (mediaType: string): boolean => {
  const base = mediaType.split(";")[0].trim().toLowerCase()
  return base === "text/plain" || /^image\/[a-z0-9.+-]+$/.test(base)
}

/** The Clipboard service. */
export class Clipboard extends Effect.Service<Clipboard>()("boxkit/Clipboard", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    // The request is sent raw (the body's media type is the caller's), but its path comes from the contract.
    const clipboardPath = ContractClient.pathOf(BoxServiceApi, "clipboard", "write")

    const write = Tracing.fn("Clipboard.write")(function*(
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
      const request = HttpClientRequest.put(`${transport.boxOrigin}${clipboardPath({ box_id: encodeURIComponent(boxId) })}`).pipe(
        HttpClientRequest.bodyUint8Array(bytes, mediaType),
        HttpClientRequest.setHeaders(ownerOverrideHeaders(options.ownerOverrideReason))
      )
      return yield* transport.call(
        transport.http.execute(request).pipe(
          Effect.flatMap(HttpClientResponse.schemaBodyJson(EmptyObject)),
          Effect.scoped
        ),
        { safeToRepeat: true, retry: options.retry }
      ).pipe(only(...commonErrors, ApiError.ConflictError, ApiError.NotImplementedError))
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

