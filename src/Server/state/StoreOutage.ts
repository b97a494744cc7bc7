/**
 * The one place where a state store's failure (`StoreError`, StoreError.ts) becomes an answer: a store that cannot
 * answer for now (the database refuses or drops connections, is too slow, is shutting down, or is busy) is answered
 * 503 `server_error` with `Retry-After` ({@link retryAfter}), as the spec tells clients to retry, instead of 500; every
 * other store failure is a 500 `server_error`. No 2xx is sent for writes that were not stored, and the service recovers
 * by itself when the database does (the pool makes new connections).
 *
 * Source: spec "Errors" rule 2 (503: retry with backoff, honouring `Retry-After`); docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { Cause, Duration, Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import { StoreError } from "./StoreError.js"

/** What clients are told to wait before retrying a request refused because the store is unavailable. */
export const retryAfter: Duration.Duration = Duration.seconds(2)

/**
 * The store error `cause` failed with, if it failed with one; or the one it died with (a unit of work whose commit
 * failed, SqlWork.ts `layerTransactions`).
 */
export const storeErrorOf = (cause: Cause.Cause<unknown>): Option.Option<StoreError> =>
  Option.orElse(
    Option.filter(Cause.failureOption(cause), (error): error is StoreError => error instanceof StoreError),
    () => Option.filter(Cause.dieOption(cause), (defect): defect is StoreError => defect instanceof StoreError)
  )

/** True when `error` is a {@link StoreError} whose database cannot answer now (a 503, not a 500). */
export const isOutage = (error: unknown): boolean => error instanceof StoreError && error.reason === "unavailable"

/** True when `cause` failed with a store error whose database cannot answer now. */
export const isOutageCause = (cause: Cause.Cause<unknown>): boolean =>
  Option.exists(storeErrorOf(cause), isOutage)

/**
 * Logs the failure of a background task (`what`, e.g. "box lifetime check"): one warning line without a stack when
 * the store is unavailable (the task runs again at its next turn, and an outage would otherwise log a stack every
 * turn), else an error with the whole cause.
 */
export const logBackgroundFailure = (what: string) => (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  isOutageCause(cause)
    ? Effect.logWarning(`${what} failed: ${Option.getOrThrow(storeErrorOf(cause)).message}`)
    : Effect.logError(`${what} failed`, cause)

/**
 * Logs a store failure that a background step (`what`, e.g. "recording a webhook attempt") goes on after: a warning
 * line without a stack when the store is unavailable, else an error with the failure.
 */
export const logStoreFailure = (what: string) => (error: StoreError): Effect.Effect<void> =>
  error.reason === "unavailable"
    ? Effect.logWarning(`${what} failed: ${error.message}`)
    : Effect.logError(`${what} failed`, error)

/** The answer to a request refused because the store is unavailable: 503 `server_error` with `Retry-After`. */
export const unavailable = (): ApiError.ServerError =>
  ApiError.make.unavailable(
    "The service's database is unavailable. Retry after the Retry-After delay.",
    retryAfter
  )

/**
 * The answer to a request that failed with `error`, logged once: 503 with `Retry-After` ({@link unavailable}, a warning
 * line without a stack, since an outage fails every request until the database is back) when the store is
 * unavailable, else 500 `server_error` (an error line with the cause).
 */
export const answer = (error: StoreError): Effect.Effect<ApiError.ServerError> =>
  error.reason === "unavailable"
    ? Effect.as(Effect.logWarning(`request refused: ${error.message}`), unavailable())
    : Effect.as(Effect.logError("request failed: the state store failed", error), ApiError.make.server())

/**
 * {@link answer} as a failure, for a handler whose errors must be the contract's (a group not built with
 * HandlerGroups.group): `Effect.catchTag("StoreError", StoreOutage.refuse)`.
 */
export const refuse = (error: StoreError): Effect.Effect<never, ApiError.ServerError> =>
  Effect.flatMap(answer(error), Effect.fail)
