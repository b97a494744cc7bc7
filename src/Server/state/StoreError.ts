/**
 * The one error of a state store that failed: the database refused, dropped or timed out a statement, or answered
 * with an error. Every repository of a durable store (state/sql/) fails with it where the database can fail; the
 * in-memory store never does. It is answered once, at the edge (StoreOutage.ts): 503 `server_error` with
 * `Retry-After` when `reason` is `unavailable`, else 500 `server_error`.
 *
 * `unavailable` is recognised from the failure's shape, not its class, so that this module loads no optional SQL
 * package: a PostgreSQL SQLSTATE of the classes 08 (connection exception), 53 (insufficient resources), 57 (operator
 * intervention: statement timeout, shutdown) or 40001/40P01/55P03 (serialization failure, deadlock, lock not
 * available) anywhere in the cause chain; a Node socket error (refused, reset, timed out); the `pg` driver's own
 * timeouts and terminations; or SQLite's SQLITE_BUSY.
 *
 * Source: spec "Errors" rule 2 (503: retry with backoff); docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"

/** SQLSTATE codes and classes of a database that cannot answer now. */
const transientStates = /^(08|53|57)|^(40001|40P01|55P03)$/

/** Node socket errors of a database that cannot be reached now. */
const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"])

/** The `pg` driver's and the SQL client's words for a connection that is gone or an answer that did not come. */
const transientMessages =
  /Connection terminated|Query read timeout|timeout exceeded when trying to connect|Connection timed out|not queryable|Failed to acquire connection|SQLITE_BUSY|database is locked/i

/** True when `error` (or its cause, at most 8 deep) says that the store cannot answer now. */
const isTransient = (error: unknown, depth = 0): boolean => {
  if (depth > 8 || typeof error !== "object" || error === null) return false
  const { code, message, cause } = error as { readonly code?: unknown; readonly message?: unknown; readonly cause?: unknown }
  if (typeof code === "string" && (transientStates.test(code) || socketCodes.has(code) || code === "SQLITE_BUSY")) return true
  if (typeof message === "string" && transientMessages.test(message)) return true
  return isTransient(cause, depth + 1)
}

/** The messages of `error` and of its causes (at most 4), joined with ": ". */
const messagesOf = (error: unknown): string => {
  const messages: Array<string> = []
  for (let current: unknown = error; typeof current === "object" && current !== null && messages.length < 4;) {
    const { message, cause: next } = current as { readonly message?: unknown; readonly cause?: unknown }
    if (typeof message === "string" && message !== "") messages.push(message)
    current = next
  }
  return messages.join(": ")
}

/**
 * A state store failed. `reason`: `unavailable` (the database cannot answer now: retry later) or `failed` (any other
 * failure); `operation`: what the store was doing (e.g. `Boxes.insert`); `cause`: the database's own error (an
 * `SqlError` of `@effect/sql`, with the driver's error as its cause).
 *
 * @since 0.1.0
 * @category Errors
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  reason: Schema.Literal("unavailable", "failed"),
  operation: Schema.String,
  cause: Schema.Defect
}) {
  /** The operation, the reason and the database's messages, for the log (never a stored value). */
  override get message(): string {
    const detail = messagesOf(this.cause)
    return `${this.operation}: the state store ${this.reason === "unavailable" ? "is unavailable" : "failed"}` +
      (detail === "" ? "" : ` (${detail})`)
  }

  /** The store error of `operation` failing with `error`, its reason told from the error's shape. */
  static fromError(operation: string, error: unknown): StoreError {
    return new StoreError({ reason: isTransient(error) ? "unavailable" : "failed", operation, cause: error })
  }

  /**
   * `effect` with every failure (an `SqlError`) turned into the {@link StoreError} of `operation`; defects and
   * interruptions stay as they are.
   */
  static refail(operation: string) {
    return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, StoreError, R> =>
      Effect.mapError(effect, (error) => StoreError.fromError(operation, error))
  }
}
