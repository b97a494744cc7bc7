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

/** A box id: `sb_` + UUID (spec: Box.box_id). */
export const BoxId = prefixed("sb_", "box_id", "`sb_`").pipe(Schema.brand("BoxId"))
/** A box id. */
export type BoxId = typeof BoxId.Type

/** An app id: `app_` + UUID (spec: App.id). */
export const AppId = prefixed("app_", "app_id", "`app_`").pipe(Schema.brand("AppId"))
/** An app id. */
export type AppId = typeof AppId.Type

/** An egress policy id: `ep_` or `hp_` + UUID (spec: Egress policy.id). */
export const EgressPolicyId = prefixed("ep_|hp_", "policy_id", "`ep_` or `hp_`").pipe(Schema.brand("EgressPolicyId"))
/** An egress policy id. */
export type EgressPolicyId = typeof EgressPolicyId.Type

/** A model response id: `resp_` + 32 hex characters (the hosted Responses API's form; docs/ASSUMPTIONS.md). */
export const ResponseId = Schema.String.pipe(
  Schema.minLength(1, { message: () => "response_id must not be empty" }),
  Schema.brand("ResponseId")
)
/** A model response id. */
export type ResponseId = typeof ResponseId.Type

/** True when `text` has the UUID shape used in every id (8-4-4-4-12 hex groups). */
export const isUuid = (text: string): boolean => new RegExp(`^${uuid}$`).test(text)

/**
 * Mints a fresh id: `prefix` + a version 7 UUID (RFC 9562, lowercase hex): 48 bits of Unix milliseconds, then
 * random bits, so that ids minted later sort later and a stored table's primary key grows at its end instead of
 * at random places. Source: spec "Resources and their fields" (a prefix and a UUID); docs/ASSUMPTIONS.md "Ids".
 */
export const mint = <A extends string>(prefix: string): A => `${prefix}${uuidV7()}` as A
