/**
 * Reading the values of SQL rows the same way from SQLite (libsql) and PostgreSQL (pg): numbers (PostgreSQL answers
 * BIGINT as text), byte strings (libsql answers an ArrayBuffer, pg a Buffer), nullable columns, and the rows a
 * statement changed.
 *
 * @since 0.1.0
 */

/** A numeric column as a number. */
export const numberOf = (value: unknown): number => typeof value === "number" ? value : Number(value)

/** A nullable numeric column. */
export const numberOrNull = (value: unknown): number | null => value === null || value === undefined ? null : numberOf(value)

/** A nullable text column. */
export const textOrNull = (value: unknown): string | null => value === null || value === undefined ? null : String(value)

/** A byte-string column as a Uint8Array over the same memory. */
export const bytesOf = (value: unknown): Uint8Array => {
  if (value instanceof Uint8Array) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  throw new TypeError(`not a byte string: ${typeof value}`)
}

/** An integer column holding a flag (0 or 1). */
export const flagOf = (value: unknown): boolean => numberOf(value) === 1

/**
 * The rows a write changed, from a statement's `raw` result: `rowsAffected` of the SQLite clients (ours and
 * `@libsql/client`'s), `rowCount` of pg's.
 */
export const rowsAffectedOf = (raw: unknown): number => {
  const result = raw as { readonly rowsAffected?: unknown; readonly rowCount?: unknown }
  const count = result.rowsAffected ?? result.rowCount
  if (count === undefined || count === null) throw new TypeError("the statement's result tells no count of changed rows")
  return numberOf(count)
}
