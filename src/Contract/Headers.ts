/**
 * The request headers of the contract: their names (lowercase, as HTTP/1.1 servers see them) and the schemas of the
 * headers each kind of operation takes.
 *
 * Source: spec "Authentication" 7 (owner override), "Limits" (Idempotency-Key; its rules: IdempotencyKey.ts),
 * "Errors" rule 3 (replayed answers); docs/ASSUMPTIONS.md (the completion-window header).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import * as ModelResponse from "../Domain/ModelResponse.js"
import * as IdempotencyKey from "./IdempotencyKey.js"

/** The `Idempotency-Key` header (spec: Limits). @since 0.1.0 @category Constants */
export const IdempotencyKeyHeader = "idempotency-key"
/** The owner-override header (spec: Authentication 7). @since 0.1.0 @category Constants */
export const OwnerOverrideHeader = "x-box-owner-override-reason"
/** The header on replayed idempotent answers (spec: Errors rule 3). @since 0.1.0 @category Constants */
export const IdempotentReplayedHeader = "idempotent-replayed"

/**
 * The owner-override reason: printable ASCII only (spec: Authentication 7). An empty value passes here and counts as
 * no reason (the admin is then refused with 403).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const OwnerOverrideReason = Schema.String.pipe(
  Schema.pattern(/^[\x20-\x7e]*$/, {
    message: () => "X-Box-Owner-Override-Reason must be printable ASCII only"
  })
)

/** The headers of a box operation: the owner-override reason. */
export const BoxHeaders = Schema.Struct({
  [OwnerOverrideHeader]: Schema.optional(OwnerOverrideReason)
})

/**
 * An `Idempotency-Key` value: up to 255 bytes of UTF-8 (the rules in IdempotencyKey.ts, applied by the service's
 * request pipeline, which answers 400 naming the header, and by the client); JSON Schema can only bound its
 * characters, so the document says 255 of them.
 */
export const IdempotencyKeyValue = Schema.String.annotations({
  jsonSchema: {
    type: "string",
    maxLength: IdempotencyKey.maxBytes,
    description: "up to 255 bytes (UTF-8: non-ASCII characters count for more than one); a blank key is ignored"
  }
})

/** The headers of an idempotent box operation (create, upgrade). */
export const IdempotentBoxHeaders = Schema.Struct({
  [OwnerOverrideHeader]: Schema.optional(OwnerOverrideReason),
  [IdempotencyKeyHeader]: Schema.optional(IdempotencyKeyValue)
})

/** The headers of `POST /responses`: `Idempotency-Key` and the completion window. */
export const ResponseHeaders = Schema.Struct({
  [IdempotencyKeyHeader]: Schema.optional(IdempotencyKeyValue),
  [ModelResponse.completionWindowHeader]: Schema.optional(ModelResponse.CompletionWindow)
})
