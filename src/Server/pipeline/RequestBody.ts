/**
 * The body of a `/v1` request, read once (step 6 of the request pipeline) and handed on in the request itself: a
 * request that takes its body in place (`NodeBody.BodyInPlace`, the fast path's request object) takes it there; any
 * other `HttpServerRequest` is wrapped so that `arrayBuffer`, `text` and `json` answer from the bytes read. A body
 * over the limit is a 400, never a dropped connection.
 *
 * Source: spec "Endpoints / Common rules" (body too large is an error envelope); docs/ASSUMPTIONS.md "Serving".
 *
 * @since 0.1.0
 */
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Stream } from "effect"
import { isUtf8 } from "node:buffer"
import * as ApiError from "../../ApiError.js"
import * as Json from "../../Domain/Json.js"
import * as NodeBody from "./NodeBody.js"

/**
 * A request whose body has been read, for requests that do not take it in place (a
 * `NodeBody.BodyInPlace`): the same request, with `arrayBuffer`, `text` and `json` answered from `bytes`.
 */
export const withBody = (
  request: HttpServerRequest.HttpServerRequest,
  bytes: Uint8Array
): HttpServerRequest.HttpServerRequest => {
  let text: string | undefined
  const readText = () => (text ??= NodeBody.bodyText(bytes))
  return Object.create(request, {
    arrayBuffer: { get: () => Effect.succeed(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) },
    stream: { get: () => Stream.succeed(bytes) },
    text: { get: () => Effect.sync(readText) },
    json: { get: () => Effect.suspend(() => NodeBody.parseJsonBody(bytes)) }
  })
}

export const emptyBody = new Uint8Array(0)

export const hasBody = NodeBody.hasBody

/**
 * Reads the whole body of a request that does not take it in place (a `NodeBody.BodyInPlace`), at most `maxBytes`
 * (see `NodeBody.readNodeBody` for the rules). The chunks are kept as they arrive and copied once at the end,
 * whether or not a `Content-Length` was declared: the stock request's `arrayBuffer` concatenates the body so far
 * with every chunk, which for a 30 MiB body copies gigabytes on the event loop and stalls every other request.
 */
export const readGenericBody = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number
): Effect.Effect<NodeBody.BodyRead> => {
  const read = Effect.suspend(() => {
    const state = { size: 0, chunks: [] as Array<Uint8Array> }
    return Effect.map(
      Stream.runForEach(request.stream, (chunk) =>
        Effect.sync(() => {
          state.size += chunk.byteLength
          if (state.size <= maxBytes) state.chunks.push(chunk)
          else state.chunks = []
        })),
      (): NodeBody.BodyRead => {
        if (state.size > maxBytes) return { _tag: "TooLarge" }
        const bytes = new Uint8Array(state.size)
        let offset = 0
        for (const chunk of state.chunks) {
          bytes.set(chunk, offset)
          offset += chunk.byteLength
        }
        return { _tag: "Read", bytes }
      }
    )
  })
  return Effect.catchAll(read, (error): Effect.Effect<NodeBody.BodyRead> =>
    Effect.succeed({ _tag: "Failed", message: error.message }))
}

/** True when the first `length` bytes are UTF-8, or a UTF-8 text cut inside its last character. */
const utf8Prefix = (bytes: Uint8Array, length: number): boolean => {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, length), { stream: true })
    return true
  } catch {
    return false
  }
}

/**
 * Where a JSON body is not UTF-8: undefined when it is (the common case, one native check), else the top-level member
 * the first bad byte is in (`field`, null when it is not in a member's value). A body that is not UTF-8 is a 400
 * naming it, never decoded with U+FFFD in place of its bytes (spec: a name is stored exactly as sent;
 * docs/ASSUMPTIONS.md "Text fields").
 *
 * @since 0.1.0
 * @category body
 */
export const invalidUtf8 = (bytes: Uint8Array): { readonly field: string | null } | undefined => {
  if (isUtf8(bytes)) return undefined
  // The longest prefix that is UTF-8 (a prefix of one is one too): the first bad byte follows it.
  let valid = 0
  let invalid = bytes.byteLength
  while (invalid - valid > 1) {
    const middle = Math.floor((valid + invalid) / 2)
    if (utf8Prefix(bytes, middle)) valid = middle
    else invalid = middle
  }
  return Json.memberAt(bytes, valid)
}

/**
 * Why a JSON body is refused before it is parsed, or undefined: arrays and objects nested deeper than
 * `Json.maxDepth`, or a top-level member over its cap (`caps`, the route's `memberCaps`: bytes, or a string's
 * length). One scan of the bytes (`Json.checkBody`), no parse: a 30 MiB `metadata` value costs its reading and a scan
 * of its first cap bytes, not a parse and a decode. The 400 names the top-level member (`param`), as the schema's own
 * refusal would. docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category body
 */
export const refusedBeforeParse = (bytes: Uint8Array, caps: Json.MemberCaps | undefined): ApiError.InvalidRequestError | undefined => {
  // Nothing shorter can nest deeper than the limit or go over a cap (the smallest is Json.memberCapFloor).
  if (bytes.byteLength <= Json.maxDepth * 2) return undefined
  const problem = Json.checkBody(bytes, caps)
  if (problem === undefined) return undefined
  if (problem._tag === "TooDeep") {
    return ApiError.make.invalidRequest(
      `The JSON body nests arrays and objects deeper than ${Json.maxDepth} levels` +
        (problem.field !== null ? ` in ${problem.field}.` : "."),
      problem.field
    )
  }
  return ApiError.make.invalidRequest(
    problem._tag === "OverCap"
      ? `Invalid ${problem.field}: must be at most ${problem.cap} bytes of JSON text (whitespace between tokens not counted).`
      : `Invalid ${problem.field}: a string of at most ${problem.cap} characters.`,
    problem.field
  )
}
