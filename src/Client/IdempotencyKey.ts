/**
 * Idempotency keys on the client: one key per logical call, generated when the caller gives none, reused on every
 * attempt of that call; a caller's own key is checked before any I/O.
 *
 * Source: spec Limits ("Idempotency-Key: up to 255 bytes (non-ASCII characters count for more than one) ... scoped
 * to the sending API key"), "Create a box" and the Responses header rules ("On retry reuse the same value and the
 * same body; use a new value for new work"). The rules the service applies too (255 UTF-8 bytes, blank, the header
 * encoding) are the contract's (src/Contract/IdempotencyKey.ts); the checks beyond the spec's (a blank key refused
 * rather than sent to be ignored, control characters, surrounding whitespace) are boxkit's choices
 * (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"
import { IdempotentReplayedHeader } from "../Contract/Headers.js"
import * as Rules from "../Contract/IdempotencyKey.js"

/** The largest key, in UTF-8 bytes (spec Limits; the contract's). @since 0.1.0 @category Constants */
export const maxBytes = Rules.maxBytes

/**
 * The answer of an idempotent call: the value, the key that was sent, and whether the service replayed it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Idempotent<A> {
  readonly value: A
  /** The key sent on every attempt of the call (the caller's own, or the generated one). */
  readonly idempotencyKey: string
  /** True when the answer carried `Idempotent-Replayed: true` (the request was not executed again). */
  readonly replayed: boolean
}

/**
 * The size of `key` in UTF-8 bytes: the contract's count of the header value that carries it.
 *
 * @since 0.1.0
 * @category Utils
 */
export const byteLength = (key: string): number => Rules.byteLength(Rules.toHeaderValue(key))

const invalid = (message: string) => Effect.fail(ApiError.make.invalidRequest(message, Rules.param))

/**
 * Checks a caller's key, before any I/O. Fails with `InvalidRequestError` (param `Idempotency-Key`) when the key is
 * blank (the service would silently run the request without idempotency), longer than {@link maxBytes} UTF-8 bytes,
 * contains a control character (it cannot travel in an HTTP header), or starts or ends with whitespace (HTTP drops
 * it, so the service would see another key).
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = (key: string): Effect.Effect<string, ApiError.InvalidRequestError> => {
  const verdict = Rules.check(Rules.toHeaderValue(key))
  if (verdict._tag === "Ignored") return invalid("Idempotency-Key must not be blank.")
  if (verdict._tag === "TooLong") {
    return invalid(`Idempotency-Key must be at most ${maxBytes} bytes in UTF-8; this one has ${verdict.bytes}.`)
  }
  if (/[\u0000-\u001f\u007f]/.test(key)) return invalid("Idempotency-Key must not contain control characters.")
  if (key.trim() !== key) return invalid("Idempotency-Key must not start or end with whitespace.")
  return Effect.succeed(key)
}

/**
 * The key of one logical call: the caller's `key` checked by {@link validate}, or a fresh `crypto.randomUUID()`.
 * Resolve it once, outside the retried attempt, so that every attempt carries the same key. Fails with
 * `InvalidRequestError` (param `Idempotency-Key`) when {@link validate} refuses the caller's key.
 *
 * @since 0.1.0
 * @category Utils
 */
export const resolve = (key: string | undefined): Effect.Effect<string, ApiError.InvalidRequestError> =>
  key === undefined ? Effect.sync(() => crypto.randomUUID()) : validate(key)

/**
 * The header value that carries `key`'s UTF-8 bytes on the wire (the contract's `IdempotencyKey.toHeaderValue`): a
 * non-ASCII key re-spelled as its UTF-8 bytes, one character per byte; ASCII keys unchanged.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toHeaderValue = Rules.toHeaderValue

/** True when a response carried `Idempotent-Replayed: true`. @since 0.1.0 @category Guards */
export const isReplayed = (headers: Readonly<Record<string, string | undefined>>): boolean =>
  headers[IdempotentReplayedHeader]?.trim().toLowerCase() === "true"
