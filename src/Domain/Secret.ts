/**
 * Secrets: organization values that egress policy rules can add to requests. A stored value is never returned.
 *
 * Source: spec "Resources and their fields / Secret", "GET {base_url}/secrets/{name}", "Limits" (Secret name).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { DateTimeString, type MemberCaps, stringCap } from "./Json.js"
import * as Text from "./Text.js"

/**
 * A secret name: a letter or digit, then up to 127 letters, digits, underscores or dashes (at most 128 characters).
 * Source: spec Secret.name and Limits.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SecretName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/, {
    message: () =>
      "secret name must start with a letter or digit, then only letters, digits, underscores or dashes, at most 128 characters"
  })
).annotations({ title: "SecretName" })

/**
 * The `name` path parameter of GET /secrets/{name}: optional surrounding whitespace (ignored), then a
 * {@link SecretName}. Source: spec "GET {base_url}/secrets/{name}".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SecretNameParam = Schema.compose(Schema.Trim, SecretName).annotations({
  jsonSchema: {
    type: "string",
    pattern: "^\\s*[A-Za-z0-9][A-Za-z0-9_-]{0,127}\\s*$",
    description: "a secret name (letter or digit, then up to 127 letters, digits, underscores or dashes), surrounding whitespace ignored"
  }
})

/**
 * The Secret object: exactly `org_id`, `name`, `created_at`, `updated_at` (date-time strings). No other properties
 * appear; the value is never returned. Source: spec Secret.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Secret extends Schema.Class<Secret>("Secret")({
  org_id: Schema.String,
  name: Schema.String,
  created_at: DateTimeString,
  updated_at: DateTimeString
}) {}

/** The largest secret value, in characters (docs/ASSUMPTIONS.md). @since 0.1.0 @category Constants */
export const maxSecretValueLength = 65536

/**
 * A secret value: free text (Text.ts: no NUL, no unpaired surrogate; tabs and line breaks kept, as in a PEM key) of at
 * most {@link maxSecretValueLength} characters, held `Redacted`. Its error messages never quote the value (a rejected
 * value must not appear in any answer or log line). Source: docs/ASSUMPTIONS.md "Text fields".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SecretValue = Schema.Redacted(
  Schema.String.annotations({ message: () => "value must be a string" }).pipe(
    Schema.maxLength(maxSecretValueLength, {
      message: () => `value must be at most ${maxSecretValueLength} characters`
    }),
    Schema.filter((value) => Text.freeTextProblem("value", value) ?? true, {
      jsonSchema: { pattern: Text.freeTextPattern }
    })
  )
)

/**
 * Body of the create-secret operation (`POST {base_url}/secrets`, shape not shown by the spec; docs/ASSUMPTIONS.md):
 * a {@link SecretName} and its value, which is write-only. Creating an existing name replaces its value.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CreateSecretRequest = Schema.Struct({
  name: SecretName,
  value: SecretValue
})
/** Body of the create-secret operation. @since 0.1.0 @category Models */
export type CreateSecretRequest = typeof CreateSecretRequest.Type

/**
 * The byte cap of a create-secret request's `name`, checked by the local service before the body is parsed
 * (`Json.checkBody`; over it is a 400 naming `name`): the longest text a {@link SecretName} (128 characters) can
 * have, every character escaped. `value` has none: escaped, its 65,536 characters could fill the body limit (256 KiB).
 * docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const createRequestCaps: MemberCaps = { name: stringCap(128) }
