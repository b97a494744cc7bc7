/**
 * Quotas per organization (issue 17), answered with the spec's `quota_exceeded_error` (429, code naming the quota;
 * no `Retry-After`: it clears when the organization frees what it holds, not with time):
 *
 * - `boxes`: boxes not terminated (default 1,000); checked by create box.
 * - `background_responses`: background responses accepted and not finished (default 1,000; counted by each instance
 *   for the responses it runs); checked by a background create response.
 * - `stored_bytes`: bytes the organization's records hold, its boxes' clipboards and its response records as JSON
 *   text (default 128 MiB); checked by clipboard writes and create response, with the size of what the request adds.
 *
 * Set by `boxkit serve --quota-boxes N --quota-background-responses N --quota-stored-mb N`; `GET /_local/state`
 * shows each organization's usage beside them. Source: docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"

/** The quotas of every organization. */
export interface QuotaSettings {
  /** Boxes not terminated at once. */
  readonly boxes: number
  /** Background responses accepted and not finished at once. */
  readonly backgroundResponses: number
  /** Bytes held by clipboards and response records. */
  readonly storedBytes: number
}

/** Generous for development: 1,000 boxes, 1,000 background responses, 128 MiB. */
export const defaultQuotas: QuotaSettings = { boxes: 1000, backgroundResponses: 1000, storedBytes: 128 * 1024 * 1024 }

/** What an organization holds, against {@link QuotaSettings}. */
export interface Usage {
  readonly boxes: number
  readonly background_responses: number
  readonly stored_bytes: number
}

/**
 * The `quota_exceeded_error` code `boxes` for an organization that holds `activeBoxes` boxes not terminated. The
 * count is checked by the store as it inserts the box (`Boxes.insertWithinQuota`), after the request's own checks.
 */
export const boxesExceeded = (quotas: QuotaSettings, activeBoxes: number): ApiError.QuotaExceededError =>
  ApiError.make.quotaExceeded(
    `The organization has ${activeBoxes} boxes that are not terminated, its quota of ${quotas.boxes}: terminate one first.`,
    "boxes"
  )

/** Fails with `quota_exceeded_error` code `background_responses` when `inFlight` is already at the quota. */
export const checkBackgroundResponses = (
  quotas: QuotaSettings,
  inFlight: number
): Effect.Effect<void, ApiError.QuotaExceededError> =>
  inFlight < quotas.backgroundResponses
    ? Effect.void
    : Effect.fail(ApiError.make.quotaExceeded(
      `The organization has ${inFlight} background responses in flight, its quota of ${quotas.backgroundResponses}: ` +
        "wait for some to finish.",
      "background_responses"
    ))

/** Fails with `quota_exceeded_error` code `stored_bytes` when `stored` plus `adding` bytes would pass the quota. */
export const checkStoredBytes = (
  quotas: QuotaSettings,
  stored: number,
  adding: number
): Effect.Effect<void, ApiError.QuotaExceededError> =>
  stored + adding <= quotas.storedBytes
    ? Effect.void
    : Effect.fail(ApiError.make.quotaExceeded(
      `The organization stores ${stored} bytes (clipboards and model responses); ${adding} more would pass its quota ` +
        `of ${quotas.storedBytes}.`,
      "stored_bytes"
    ))

/**
 * The `stored_bytes` check of a write that replaces `replacing` bytes with `adding` bytes (a clipboard write), where
 * `others` is what the organization stores besides the bytes replaced: a write that does not grow what is stored
 * (an empty or smaller clipboard) always passes, even over the quota, since it frees bytes; a larger one fails with
 * `quota_exceeded_error` code `stored_bytes` when `others` plus `adding` would pass the quota. Source:
 * docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 * @category quotas
 */
export const checkStoredBytesReplacing = (
  quotas: QuotaSettings,
  others: number,
  replacing: number,
  adding: number
): Effect.Effect<void, ApiError.QuotaExceededError> =>
  adding <= replacing ? Effect.void : checkStoredBytes(quotas, others, adding)
