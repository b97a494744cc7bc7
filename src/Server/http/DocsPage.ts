/**
 * `GET /docs`: the API reference, Swagger UI over the contract's OpenAPI document, as `@effect/platform`'s
 * `HttpApiSwagger` renders it: one HTML page with Swagger UI's script and styles inlined (no request leaves the
 * page for its assets) and the document embedded. Served beside `/v1` on both serving paths, without a key, like
 * `/openapi.json`. Rendered on the first request, then kept: the module with Swagger UI (about 2 MB) is loaded only
 * then.
 *
 * Source: docs/ASSUMPTIONS.md "Local service".
 *
 * @since 0.1.0
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { BoxServiceApi } from "../../Contract/Api.js"

/** The path of the reference. */
export const path = "/docs"

/** The page's bytes, rendered once by `HttpApiSwagger` (through a web handler of its router layer). */
const render = async (): Promise<Uint8Array> => {
  const [HttpApiSwagger, HttpLayerRouter] = await Promise.all([
    import("@effect/platform/HttpApiSwagger"),
    import("@effect/platform/HttpLayerRouter")
  ])
  const { dispose, handler } = HttpLayerRouter.toWebHandler(
    HttpApiSwagger.layerHttpLayerRouter({ api: BoxServiceApi, path }),
    { disableLogger: true }
  )
  try {
    const response = await handler(new Request(`http://localhost${path}`))
    return new Uint8Array(await response.arrayBuffer())
  } finally {
    await dispose()
  }
}

let rendered: Promise<Uint8Array> | undefined

/** The page's bytes (rendered on first use). */
export const html: Effect.Effect<Uint8Array> = Effect.promise(() => (rendered ??= render()))

/** The answer of `GET /docs`: the page as `text/html`. */
export const response: Effect.Effect<HttpServerResponse.HttpServerResponse> = Effect.map(
  html,
  (body) => HttpServerResponse.uint8Array(body, { contentType: "text/html; charset=utf-8" })
)
