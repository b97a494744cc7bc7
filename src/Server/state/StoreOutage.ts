/**
 * A state store that cannot answer for now: the database refuses or drops connections, is too slow (a statement or a
 * read past its timeout), is shutting down, or is busy. A request that fails for such a reason is answered 503
 * `server_error` with `Retry-After` ({@link retryAfter}), as the spec tells clients to retry, instead of 500; no 2xx is
 * sent for writes that were not stored, and the service recovers by itself when the database does (the pool makes
 * new connections).
 * Every other database failure stays a 500.
 *
 * Errors are recognised by their shape, not their class, so that this module loads no optional SQL package: an
 * `SqlError` of `@effect/sql` (by `_tag`) whose cause chain holds a PostgreSQL SQLSTATE of the classes 08 (connection
 * exception), 53 (insufficient resources), 57 (operator intervention: statement timeout, shutdown) or 40001/40P01/55P03
 * (serialization failure, deadlock, lock not available); a Node socket error (refused, reset, timed out); the `pg`
 * driver's own timeouts and terminations; or SQLite's SQLITE_BUSY.
 *
 * Source: spec "Errors" rule 2 (503: retry with backoff, honouring `Retry-After`); docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { Cause, Chunk, Duration, Effect } from "effect"
import * as ApiError from "../../ApiError.js"

/** What clients are told to wait before retrying a request refused because the store is unavailable. */
export const retryAfter: Duration.Duration = Duration.seconds(2)

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

/** True when `error` is a failure of the SQL client (`@effect/sql`'s `SqlError`) because the store cannot answer now. */
export const isOutage = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (error as { readonly _tag?: unknown })._tag === "SqlError" &&
  isTransient(error)

/** True when a failure or a defect of `cause` is an {@link isOutage} error. */
export const isOutageCause = (cause: Cause.Cause<unknown>): boolean =>
  Chunk.some(Cause.defects(cause), isOutage) || Chunk.some(Cause.failures(cause), isOutage)

/** The messages of the first outage error of `cause` and of its causes, joined, for the log. */
export const describe = (cause: Cause.Cause<unknown>): string => {
  const error = [...Cause.defects(cause), ...Cause.failures(cause)].find(isOutage)
  const messages: Array<string> = []
  for (let current: unknown = error; typeof current === "object" && current !== null && messages.length < 4;) {
    const { message, cause: next } = current as { readonly message?: unknown; readonly cause?: unknown }
    if (typeof message === "string" && message !== "") messages.push(message)
    current = next
  }
  return messages.join(": ")
}

/**
 * Logs the failure of a background task (`what`, e.g. "box lifetime check"): one warning line without a stack when
 * the store is unavailable (the task runs again at its next turn, and an outage would otherwise log a stack every
 * turn), else an error with the whole cause.
 */
export const logBackgroundFailure = (what: string) => (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  isOutageCause(cause)
    ? Effect.logWarning(`${what} failed: the state store is unavailable (${describe(cause)})`)
    : Effect.logError(`${what} failed`, cause)

/** The answer to a request refused because the store is unavailable: 503 `server_error` with `Retry-After`. */
export const unavailable = (): ApiError.ServerError =>
  ApiError.make.unavailable(
    "The service's database is unavailable. Retry after the Retry-After delay.",
    retryAfter
  )
