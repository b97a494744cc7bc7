/**
 * Egress policies: what a box may connect to and what happens to the HTTPS requests it sends.
 *
 * Source: spec "Resources and their fields / Egress policy", "PATCH {base_url}/egress-policies/{policy_id}", Limits.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { EgressPolicyId } from "./Ids.js"
import { DateTimeString, JsonObject } from "./Json.js"
import * as Text from "./Text.js"

/** The largest encoded policy document, in bytes: 64 KiB (spec Limits). @since 0.1.0 @category Constants */
export const maxDocumentBytes = 64 * 1024

/**
 * The size of a JSON value in its compact JSON encoding (`JSON.stringify`), in UTF-8 bytes.
 *
 * @since 0.1.0
 * @category Utils
 */
export const encodedBytes = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value)).byteLength

const documentTooLarge = `document must be at most ${maxDocumentBytes} bytes (64 KiB) encoded as JSON`

const PolicyDocumentFields = Schema.Struct({
  no_network: Schema.optional(Schema.Boolean),
  allowlist: Schema.optional(Schema.Array(Schema.String)),
  blocked: Schema.optional(Schema.Array(Schema.String)),
  rules: Schema.optional(JsonObject),
  missing_alpn: Schema.optional(JsonObject)
}).pipe(
  Schema.filter((document) => encodedBytes(document) <= maxDocumentBytes || documentTooLarge)
)

/**
 * The policy document; every field optional. The contents of `rules` and `missing_alpn` are not shown by the spec:
 * boxkit keeps them as JSON objects (docs/ASSUMPTIONS.md). At most 64 KiB (65,536 bytes) encoded: the document as
 * received, in compact JSON (UTF-8), unknown members included, is measured before decoding, and the decoded
 * document again (so a client-side check of a document value refuses the same sizes).
 * The empty document `{}` allows every destination and applies no rules.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PolicyDocument = Schema.compose(
  JsonObject.pipe(
    Schema.filter((raw) => encodedBytes(raw) <= maxDocumentBytes || documentTooLarge)
  ),
  PolicyDocumentFields,
  { strict: false }
).annotations({ title: "PolicyDocument" })
/** The policy document. @since 0.1.0 @category Models */
export type PolicyDocument = typeof PolicyDocument.Type

/**
 * True when a document uses secrets: its `rules` mention a `secret` key anywhere (docs/ASSUMPTIONS.md). Inline
 * documents at box creation cannot (spec: Create a box, egress_policy).
 *
 * @since 0.1.0
 * @category Utils
 */
export const usesSecrets = (document: PolicyDocument): boolean => {
  const visit = (value: unknown): boolean => {
    if (Array.isArray(value)) return value.some(visit)
    if (value !== null && typeof value === "object") {
      return Object.entries(value).some(([key, inner]) => key === "secret" || key === "secrets" || visit(inner))
    }
    return false
  }
  return document.rules !== undefined && visit(document.rules)
}

/**
 * True when a document gives the box no network (`no_network: true`), which refuses published ports: at box creation
 * with `ingress_ports` (spec: Egress policy, "Cannot be combined with ingress_ports at box creation"; Create a box,
 * egress_policy), and on a later publish (docs/ASSUMPTIONS.md). The service's answers to both are named in
 * src/Server/boxes/ListenerPolicy.ts.
 *
 * @since 0.1.0
 * @category Guards
 */
export const cutsNetwork = (document: PolicyDocument): boolean => document.no_network === true

/**
 * The normalized form the service stores: destinations trimmed, lowercased, de-duplicated; `no_network` filled in
 * (false). Same behaviour, possibly a different shape (spec: Egress policy rule 2).
 *
 * @since 0.1.0
 * @category Utils
 */
export const normalize = (document: PolicyDocument): PolicyDocument => {
  const hosts = (list: ReadonlyArray<string> | undefined) =>
    list === undefined ? undefined : Array.from(new Set(list.map((entry) => entry.trim().toLowerCase())))
  return {
    no_network: document.no_network ?? false,
    ...(document.allowlist !== undefined ? { allowlist: hosts(document.allowlist) } : {}),
    ...(document.blocked !== undefined ? { blocked: hosts(document.blocked) } : {}),
    ...(document.rules !== undefined ? { rules: document.rules } : {}),
    ...(document.missing_alpn !== undefined ? { missing_alpn: document.missing_alpn } : {})
  }
}

/**
 * True when `text` contains a control character (C0, DEL or C1), such as a tab or `\n` (see Text.ts for names).
 *
 * @since 0.1.0
 * @category Guards
 */
export const hasControlCharacter = (text: string): boolean => /[\u0000-\u001f\u007f-\u009f]/.test(text)

/** The length of `text` in characters (Unicode code points, so an emoji counts once). @since 0.1.0 @category Utils */
export const characterLength = (text: string): number => {
  let count = 0
  for (const _ of text) count++
  return count
}

/**
 * True when `text` has visible text: a character that is not whitespace, not a format character (zero-width space,
 * joiners, direction marks) and not a control character.
 *
 * @since 0.1.0
 * @category Guards
 */
export const hasVisibleText = (text: string): boolean => /[^\s\p{Cf}\p{Cc}\p{Z}]/u.test(text)

/**
 * A policy name: 1 to 128 characters (code points) after surrounding whitespace is trimmed, with visible text, a line
 * of text (no tabs, line breaks such as U+2028, other control characters or unpaired surrogates: Text.ts). Decoding
 * trims. Source: spec PATCH egress policy, Limits; docs/ASSUMPTIONS.md "Text fields".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PolicyName = Schema.String.pipe(
  Schema.filter((raw) => Text.textLineProblem("name", raw) ?? true),
  Schema.compose(Schema.Trim),
  Schema.filter((name) =>
    characterLength(name) >= 1 || "name must contain visible text (1 to 128 characters after trimming)"
  ),
  Schema.filter((name) => characterLength(name) <= 128 || "name must be at most 128 characters after trimming"),
  Schema.filter((name) => hasVisibleText(name) || "name must contain visible text, not only invisible characters")
).annotations({
  title: "PolicyName",
  // For JSON Schema: a visible character and no control characters (the length is counted after trimming, which
  // JSON Schema cannot express: the description says it).
  jsonSchema: {
    type: "string",
    pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*[^\\s\\u0000-\\u001f\\u007f-\\u009f]" +
      "[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$",
    description: "1 to 128 characters after surrounding whitespace is trimmed, with visible text, no control " +
      "characters or line breaks (U+2028, U+2029 included), well-formed Unicode"
  }
})

/**
 * The Egress policy object. Source: spec Egress policy. `updated_at` is when the name last changed.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class EgressPolicy extends Schema.Class<EgressPolicy>("EgressPolicy")({
  id: EgressPolicyId,
  org_id: Schema.String,
  name: Schema.String,
  document: JsonObject,
  created_at: DateTimeString,
  updated_at: DateTimeString
}) {}

/** Body of PATCH /egress-policies/{policy_id}: the new `name` (required). @since 0.1.0 @category Schemas */
export const RenamePolicyRequest = Schema.Struct({ name: PolicyName })
/** Body of PATCH /egress-policies/{policy_id}. @since 0.1.0 @category Models */
export type RenamePolicyRequest = typeof RenamePolicyRequest.Type

/**
 * Body of the create-policy operation (shape not shown by the spec; docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CreatePolicyRequest = Schema.Struct({ name: PolicyName, document: PolicyDocument }).annotations({
  examples: [{ name: "github-only", document: { allowlist: ["api.github.com"] } }]
})
/** Body of the create-policy operation. @since 0.1.0 @category Models */
export type CreatePolicyRequest = typeof CreatePolicyRequest.Type
