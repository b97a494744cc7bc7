/**
 * Authentication of a `/v1` request (step 3 of the request pipeline): only `Authorization: Bearer <key>` is read (a
 * `Basic …` header or an empty key is a 401 like a missing one), the key is looked up in the identity store, and the
 * caller (`PrincipalShape`) is the key's organization and user, with the admin flag of a user of that organization.
 * The request pipeline (RequestPipeline.ts) decides on the outcome.
 *
 * Source: spec "Authentication" 1, 4; docs/ASSUMPTIONS.md "Authentication and scopes".
 *
 * @since 0.1.0
 */
import { type Context, Effect, Option, type Redacted } from "effect"
import * as ApiError from "../../ApiError.js"
import type { PrincipalShape } from "../../Contract/Principal.js"
import type { ApiKeyRecord, Identity, OrganizationRecord, UserRecord } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"

const bearerPattern = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** The key of `Authorization: Bearer <key>`; undefined for anything else (missing, another scheme, empty key). */
export const bearerValue = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = bearerPattern.exec(header)
  return match === null ? undefined : match[1]
}

export const missingKey = () => ApiError.make.authentication("Missing API key: send Authorization: Bearer <API_KEY>.")
export const invalidKey = () => ApiError.make.authentication("Invalid API key.")

/** The caller behind an API key record and its user (if any). */
export const principalOf = (record: ApiKeyRecord, user: UserRecord | undefined): PrincipalShape => ({
  keyId: record.keyId,
  orgId: record.orgId,
  userId: record.userId,
  organizationOfUser: record.orgId ?? user?.orgId ?? null,
  admin: user !== undefined && user.admin && (record.orgId === null || user.orgId === record.orgId)
})

/**
 * Who is behind an API key: the caller, and the organization it acts for (undefined when it acts for none, or the
 * organization is not known), whose credits and age the pipeline checks (steps 4 and 5).
 */
export interface Caller {
  readonly principal: PrincipalShape
  readonly organization: OrganizationRecord | undefined
}

/** The caller behind `key`, or undefined for a key the identity store does not know; `StoreError` when it fails. */
export const lookUpCaller = (
  identity: Context.Tag.Service<Identity>,
  key: Redacted.Redacted<string>
): Effect.Effect<Caller | undefined, StoreError> =>
  Effect.flatMap(identity.findKey(key), (record) => {
    if (Option.isNone(record)) return Effect.succeed(undefined)
    const userId = record.value.userId
    const user = userId === null ? Effect.succeed(Option.none<UserRecord>()) : identity.user(userId)
    return Effect.flatMap(user, (user) => {
      const principal = principalOf(record.value, Option.getOrUndefined(user))
      const orgId = principal.organizationOfUser
      if (orgId === null) return Effect.succeed<Caller>({ principal, organization: undefined })
      return Effect.map(
        identity.organization(orgId),
        (organization): Caller => ({ principal, organization: Option.getOrUndefined(organization) })
      )
    })
  })
