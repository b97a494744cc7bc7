/**
 * Identifiers of the Box Service: a prefix followed by a UUID in 8-4-4-4-12 hex groups.
 *
 * Source: spec "Resources and their fields" (Box `sb_`, App `app_`, Egress policy `ep_`/`hp_`).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { v7 as uuidV7 } from "uuid"

const uuid = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

const prefixed = (prefixes: string, title: string, description: string) =>
  Schema.String.pipe(
    Schema.pattern(new RegExp(`^(?:${prefixes})${uuid}$`), {
      message: () => `${title} must be ${description} followed by a UUID (hex groups 8-4-4-4-12)`
    })
  ).annotations({ title, description: `${description} followed by a UUID (hex groups 8-4-4-4-12)` })

/** A box id: `sb_` + UUID (spec: Box.box_id). @since 0.1.0 @category Schemas */
export const BoxId = prefixed("sb_", "box_id", "`sb_`").pipe(Schema.brand("BoxId"))
/** A box id. @since 0.1.0 @category Models */
export type BoxId = typeof BoxId.Type

/** An app id: `app_` + UUID (spec: App.id). @since 0.1.0 @category Schemas */
export const AppId = prefixed("app_", "app_id", "`app_`").pipe(Schema.brand("AppId"))
/** An app id. @since 0.1.0 @category Models */
export type AppId = typeof AppId.Type

/** An egress policy id: `ep_` or `hp_` + UUID (spec: Egress policy.id). @since 0.1.0 @category Schemas */
export const EgressPolicyId = prefixed("ep_|hp_", "policy_id", "`ep_` or `hp_`").pipe(Schema.brand("EgressPolicyId"))
/** An egress policy id. @since 0.1.0 @category Models */
export type EgressPolicyId = typeof EgressPolicyId.Type

/**
 * A model response id: `resp_` + 32 hex characters (the hosted Responses API's form; docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ResponseId = Schema.String.pipe(
  Schema.minLength(1, { message: () => "response_id must not be empty" }),
  Schema.brand("ResponseId")
)
/** A model response id. @since 0.1.0 @category Models */
export type ResponseId = typeof ResponseId.Type

/** True when `text` has the UUID shape used in every id (8-4-4-4-12 hex groups). @since 0.1.0 @category Guards */
export const isUuid = (text: string): boolean => new RegExp(`^${uuid}$`).test(text)

/**
 * Mints a fresh id: `prefix` + a version 7 UUID (RFC 9562, lowercase hex): 48 bits of Unix milliseconds, then
 * random bits, so that ids minted later sort later and a stored table's primary key grows at its end instead of
 * at random places. Source: spec "Resources and their fields" (a prefix and a UUID); docs/ASSUMPTIONS.md "Ids".
 *
 * @since 0.1.0
 * @category Constructors
 */
export const mint = <A extends string>(prefix: string): A => `${prefix}${uuidV7()}` as A
