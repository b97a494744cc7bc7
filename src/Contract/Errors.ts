/**
 * The error schemas of the contract, one per error the spec's endpoints answer: the envelope on the wire at the
 * spec's status (`ApiError.atStatus`), the typed class in code.
 *
 * Source: spec "Errors" (the table of types, statuses and codes).
 *
 * @since 0.1.0
 */
import * as ApiError from "../ApiError.js"

/**
 * Error schemas of the contract: the envelope on the wire at the spec's status, the typed class in code.
 *
 * @since 0.1.0
 * @category Errors
 */
export const Errors = {
  InvalidRequest: ApiError.atStatus(ApiError.InvalidRequestError, 400),
  Authentication: ApiError.atStatus(ApiError.AuthenticationError, 401),
  Billing: ApiError.atStatus(ApiError.BillingError, 402),
  Permission: ApiError.atStatus(ApiError.PermissionError, 403),
  NotFound: ApiError.atStatus(ApiError.NotFoundError, 404),
  Conflict: ApiError.atStatus(ApiError.ConflictError, 409),
  IdempotentRequestInFlight: ApiError.atStatus(ApiError.ServerError, 409),
  RateLimit: ApiError.atStatus(ApiError.RateLimitError, 429),
  QuotaExceeded: ApiError.atStatus(ApiError.QuotaExceededError, 429),
  Server: ApiError.atStatus(ApiError.ServerError, 500),
  NotImplemented: ApiError.atStatus(ApiError.NotImplementedError, 501),
  Unavailable: ApiError.atStatus(ApiError.ServerError, 503)
}
