/**
 * Quotas per organization, answered with the spec's `quota_exceeded_error` (429, code naming the quota;
 * no `Retry-After`: it clears when the organization frees what it holds, not with time):
 *
 * - `boxes`: boxes not terminated (default 1,000); checked by create box.
 * - `background_responses`: background responses accepted and not finished (default 1,000; counted by each instance
 *   for the responses it runs); checked by a background create response.
 * - `stored_bytes`: bytes the organization's records hold, its boxes' clipboards, its response records as JSON
 *   text and the bodies of the idempotent answers remembered for its API keys (default 128 MiB); checked by clipboard
 *   writes, create response and the recording of an idempotent answer in the same step as the write (the store locks
 *   the organization's usage), with the size of what the request adds; an answer that does not fit is not recorded.
 * - `idempotency_keys`: per API key, the idempotency keys and bytes of answer bodies remembered at once; checked by
 *   the store as it takes a new key (every store), and by the recording of an answer (one that does not fit is not
 *   recorded).
 * - `secrets`, `egress_policies`, `apps`: how many the organization holds (default 1,000 each); checked by the store
 *   as it inserts a new one (replacing a secret or finding an app that exists is never refused).
 *
 * Set by `boxkit serve --quota-boxes N --quota-background-responses N --quota-stored-mb N --quota-secrets N
 * --quota-egress-policies N --quota-apps N`; `GET /_local/state` shows each organization's usage beside them. Source: docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../ApiError.js"

/** The quotas of every organization. @since 0.1.0 @category Models */
export interface QuotaSettings {
  /** Boxes not terminated at once. */
  readonly boxes: number
  /** Background responses accepted and not finished at once. */
  readonly backgroundResponses: number
  /** Bytes held by clipboards, response records and remembered idempotent answer bodies. */
  readonly storedBytes: number
  /** Secrets held (default {@link defaultCountQuota} when not given). */
  readonly secrets?: number
  /** Saved egress policies held (default {@link defaultCountQuota} when not given). */
  readonly egressPolicies?: number
  /** Apps held (default {@link defaultCountQuota} when not given). */
  readonly apps?: number
  /**
   * Idempotency keys remembered at once for one API key, settled or running (default
   * {@link defaultIdempotencyKeys} when not given); every store (Idempotency.ts, SqlIdempotency.ts), checked as a
   * new key is taken.
   */
  readonly idempotencyKeys?: number
  /**
   * Bytes of remembered answer bodies held at once for one API key (default {@link defaultIdempotencyBytes} when
   * not given); every store: a new key is refused once they are held, and an answer that would pass them is not
   * recorded. The same bytes count in the organization's {@link storedBytes}.
   */
  readonly idempotencyBytes?: number
  /**
   * The largest answer body remembered for one idempotency key, in bytes (default 1 MiB,
   * `Idempotency.maxRememberedAnswerBytes`, when not given): a larger answer is not recorded, on every store (the
   * request pipeline releases its key).
   */
  readonly idempotencyAnswerBytes?: number
}

/**
 * The idempotency keys one API key may have remembered at once when the settings name no quota: 50,000 (about 10 MB
 * of small answers). Source: docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultIdempotencyKeys = 50_000

/**
 * The bytes of remembered answer bodies one API key may hold at once when the settings name no quota: 32 MiB.
 * Source: docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultIdempotencyBytes = 32 * 1024 * 1024

/**
 * The 429 `quota_exceeded_error` code `idempotency_keys` of a request with a new `Idempotency-Key` while its API key
 * has {@link QuotaSettings.idempotencyKeys} keys or {@link QuotaSettings.idempotencyBytes} bytes of answer bodies
 * remembered (on any store): the request did not run; it clears as remembered keys expire.
 *
 * @since 0.1.0
 * @category Checks
 */
export const idempotencyKeysExceeded = (): ApiError.QuotaExceededError =>
  ApiError.make.quotaExceeded(
    "This API key has as many idempotency keys (or bytes of remembered answers) as it may hold; they are " +
      "forgotten as they expire. Send new work without a key or retry later.",
    "idempotency_keys"
  )

/**
 * The secrets, egress policies and apps an organization may hold when its settings name no quota for them: 1,000
 * each. Source: docs/ASSUMPTIONS.md "Quotas".
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultCountQuota = 1000

/**
 * Generous for development: 1,000 boxes, background responses, secrets, egress policies and apps; 128 MiB.
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultQuotas: QuotaSettings = {
  boxes: 1000,
  backgroundResponses: 1000,
  storedBytes: 128 * 1024 * 1024,
  secrets: defaultCountQuota,
  egressPolicies: defaultCountQuota,
  apps: defaultCountQuota
}

/**
 * The quotas counted by the store as it inserts (`code` of the `quota_exceeded_error`): secrets, saved egress policies
 * and apps an organization holds.
 *
 * @since 0.1.0
 * @category Models
 */
export type CountQuota = "secrets" | "egress_policies" | "apps"

/**
 * The number of `quota` things an organization may hold under `quotas` ({@link defaultCountQuota} when unset).
 *
 * @since 0.1.0
 * @category Checks
 */
export const countLimit = (quotas: QuotaSettings, quota: CountQuota): number =>
  (quota === "secrets" ? quotas.secrets : quota === "egress_policies" ? quotas.egressPolicies : quotas.apps) ??
    defaultCountQuota

const countNouns: Record<CountQuota, string> = { secrets: "secrets", egress_policies: "egress policies", apps: "apps" }

/**
 * The 429 `quota_exceeded_error` with `code` `quota` (`secrets`, `egress_policies` or `apps`) of a create refused by
 * the store because the organization already holds its quota of them.
 *
 * @since 0.1.0
 * @category Checks
 */
export const countExceeded = (quotas: QuotaSettings, quota: CountQuota): ApiError.QuotaExceededError =>
  ApiError.make.quotaExceeded(
    `The organization holds ${countLimit(quotas, quota)} ${countNouns[quota]}, its quota: no more can be created.`,
    quota
  )

/**
 * What an organization holds, against {@link QuotaSettings}.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Usage {
  readonly boxes: number
  readonly background_responses: number
  readonly stored_bytes: number
  readonly secrets: number
  readonly egress_policies: number
  readonly apps: number
}

/**
 * The `quota_exceeded_error` code `boxes` for an organization that holds `activeBoxes` boxes not terminated. The
 * count is checked by the store as it inserts the box (`Boxes.insertWithinQuota`), after the request's own checks.
 *
 * @since 0.1.0
 * @category Checks
 */
export const boxesExceeded = (quotas: QuotaSettings, activeBoxes: number): ApiError.QuotaExceededError =>
  ApiError.make.quotaExceeded(
    `The organization has ${activeBoxes} boxes that are not terminated, its quota of ${quotas.boxes}: terminate one first.`,
    "boxes"
  )

/**
 * Fails with `quota_exceeded_error` code `background_responses` when `inFlight` is already at the quota.
 *
 * @since 0.1.0
 * @category Checks
 */
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

/**
 * The 429 `quota_exceeded_error` code `stored_bytes` of a write refused because the organization stores `stored`
 * bytes (besides any it replaces) and `adding` more would pass its quota.
 *
 * @since 0.1.0
 * @category Checks
 */
export const storedBytesExceeded = (
  quotas: QuotaSettings,
  stored: number,
  adding: number
): ApiError.QuotaExceededError =>
  ApiError.make.quotaExceeded(
    `The organization stores ${stored} bytes (clipboards, model responses and remembered idempotent answers); ` +
      `${adding} more would pass its quota of ${quotas.storedBytes}.`,
    "stored_bytes"
  )
