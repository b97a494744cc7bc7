/**
 * Idempotency keys on the client: one key per logical call, generated when the caller gives none, reused on every
 * attempt; a caller's own key is checked before any I/O.
 *
 * Source: spec Limits ("Idempotency-Key: up to 255 bytes ... scoped to the sending API key") and the Responses
 * header rules ("On retry reuse the same value and the same body; use a new value for new work").
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"

/** The largest key, in UTF-8 bytes. */
export const maxBytes = 255

/** The answer of an idempotent call: the value, the key that was sent, and whether the service replayed it. */
export interface Idempotent<A> {
  readonly value: A
  readonly idempotencyKey: string
  /** True when the answer carried `Idempotent-Replayed: true` (the request was not executed again). */
  readonly replayed: boolean
}

/**
 * The key of one logical call: the caller's `key` (non-blank, at most 255 UTF-8 bytes, else `InvalidRequestError`
 * with param `Idempotency-Key`), or a fresh `crypto.randomUUID()`.
 */
export const resolve = (key: string | undefined): Effect.Effect<string, ApiError.InvalidRequestError> => {
  if (key === undefined) return Effect.sync(() => crypto.randomUUID())
  if (key.trim() === "") {
    return Effect.fail(ApiError.make.invalidRequest("Idempotency-Key must not be blank.", "Idempotency-Key"))
  }
  if (new TextEncoder().encode(key).byteLength > maxBytes) {
    return Effect.fail(ApiError.make.invalidRequest(
      `Idempotency-Key must be at most ${maxBytes} bytes in UTF-8.`,
      "Idempotency-Key"
    ))
  }
  return Effect.succeed(key)
}

/** True when a response carried `Idempotent-Replayed: true`. */
export const isReplayed = (headers: Readonly<Record<string, string | undefined>>): boolean =>
  headers["idempotent-replayed"]?.toLowerCase() === "true"
