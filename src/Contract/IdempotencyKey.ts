/**
 * The `Idempotency-Key` rules of the contract, in one place, applied by the client before it sends a key and by the
 * local service as it reads one:
 *
 * - the header carries the key's UTF-8 bytes ({@link toHeaderValue}; {@link keyOf} reads the key back);
 * - a key is at most {@link maxBytes} (255) bytes of UTF-8, non-ASCII characters counting for more than one, counted
 *   by one function on the header value as sent ({@link byteLength});
 * - a blank or whitespace-only key is ignored: the request runs without idempotency ({@link isBlank}); whitespace is
 *   judged on the key's characters (Unicode white space, as `String.prototype.trim`), not on the header's bytes;
 * - {@link check} puts the two together, blank first.
 *
 * What the service does with a key (replay, 409 on another request, scope, 24 hours) is in
 * src/Server/pipeline/Idempotency.ts; what the client does (one key per call, its own extra checks) in
 * src/Client/IdempotencyKey.ts.
 *
 * Source: spec "Limits" (Idempotency-Key: "up to 255 bytes (non-ASCII characters count for more than one)";
 * Idempotency rules: "a blank or whitespace-only key is ignored"), "POST {api_url}/responses" (Idempotency-Key: string
 * up to 255); the UTF-8 header encoding: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */

/**
 * The name a request's `param` uses for the header in an error envelope (the header's own spelling; the lowercase
 * name for reading headers is `Headers.IdempotencyKeyHeader`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const param = "Idempotency-Key"

/**
 * The largest key, in bytes of UTF-8 (spec Limits).
 *
 * @since 0.1.0
 * @category Constants
 */
export const maxBytes = 255

/**
 * The header value that carries `key`'s UTF-8 bytes. HTTP header values are bytes; Node's HTTP stacks take and give a
 * string of one character per byte (latin1), so a non-ASCII key is re-spelled as its UTF-8 bytes. ASCII keys are
 * unchanged.
 *
 * @since 0.1.0
 * @category Utils
 */
export const toHeaderValue = (key: string): string => {
  if (/^[\u0000-\u007f]*$/.test(key)) return key
  let value = ""
  for (const byte of new TextEncoder().encode(key)) value += String.fromCharCode(byte)
  return value
}

/** True when every character of `value` stands for one byte (latin1), as HTTP/1.1 servers hand header values over. */
const isByteString = (value: string): boolean => /^[\u0000-\u00ff]*$/.test(value)

/**
 * The key a header value carries: its bytes read as UTF-8 (a byte sequence that is not UTF-8 reads as U+FFFD). A value
 * with a character above U+00FF (only from adapters that decoded the header themselves) is the key as it is.
 *
 * @since 0.1.0
 * @category Utils
 */
export const keyOf = (headerValue: string): string =>
  /^[\u0000-\u007f]*$/.test(headerValue) || !isByteString(headerValue)
    ? headerValue
    : new TextDecoder().decode(Uint8Array.from(headerValue, (character) => character.charCodeAt(0)))

/**
 * The size in bytes of a header value as sent: one per character up to U+00FF (one byte each, as HTTP/1.1 servers
 * hand them over), the UTF-8 size of a character above (only from other adapters). For a key of the client,
 * `byteLength(toHeaderValue(key))` is its size in UTF-8.
 *
 * @since 0.1.0
 * @category Utils
 */
export const byteLength = (headerValue: string): number => {
  let bytes = 0
  for (const character of headerValue) {
    const code = character.codePointAt(0)!
    bytes += code <= 0xff ? 1 : code <= 0x7ff ? 2 : code <= 0xffff ? 3 : 4
  }
  return bytes
}

/**
 * True when the key a header value carries is blank or whitespace only (spec: ignored, the request runs without
 * idempotency).
 *
 * @since 0.1.0
 * @category Guards
 */
export const isBlank = (headerValue: string): boolean => keyOf(headerValue).trim() === ""

/**
 * What the rules say of a header value: `Ignored` (blank), `TooLong` with its `bytes` (more than {@link maxBytes}),
 * or `Key` (a key to honour).
 *
 * @since 0.1.0
 * @category Models
 */
export type Verdict =
  | { readonly _tag: "Ignored" }
  | { readonly _tag: "TooLong"; readonly bytes: number }
  | { readonly _tag: "Key" }

/**
 * The {@link Verdict} on a header value as sent (the client passes `toHeaderValue(key)`): blank first, then size.
 *
 * @since 0.1.0
 * @category Utils
 */
export const check = (headerValue: string): Verdict => {
  if (isBlank(headerValue)) return { _tag: "Ignored" }
  const bytes = byteLength(headerValue)
  return bytes > maxBytes ? { _tag: "TooLong", bytes } : { _tag: "Key" }
}
