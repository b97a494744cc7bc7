/**
 * Authentication of a `/v1` request (step 3 of the request pipeline): only `Authorization: Bearer <key>` is read (a
 * `Basic …` header or an empty key is a 401 like a missing one), the key is looked up in the identity store, and the
 * caller (`PrincipalShape`) is the key's organization and user, with the admin flag of a user of that organization.
 *
 * Source: spec "Authentication" 1, 4; docs/ASSUMPTIONS.md "Authentication and scopes".
 *
 * @since 0.1.0
 */
import { type Context, Effect, Option, Redacted } from "effect"
import * as ApiError from "../../ApiError.js"
import type { PrincipalShape } from "../../Contract/Principal.js"
import { type ApiKeyRecord, Identity, type UserRecord } from "../state/Repositories.js"

const bearerPattern = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** The key of `Authorization: Bearer <key>`; undefined for anything else (missing, another scheme, empty key). */
export const bearerValue = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = bearerPattern.exec(header)
  return match === null ? undefined : match[1]
}

/** Reads `Authorization: Bearer <key>`; anything else (missing, another scheme, empty key) is None. */
export const bearerKey = (header: string | undefined): Option.Option<Redacted.Redacted<string>> => {
  const value = bearerValue(header)
  return value === undefined ? Option.none() : Option.some(Redacted.make(value))
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

/** The caller of a request, or undefined for a key that is not known. */
const lookUp = (
  identity: Context.Tag.Service<Identity>,
  key: Redacted.Redacted<string>
): Effect.Effect<PrincipalShape | undefined> =>
  Effect.flatMap(identity.findKey(key), (record) => {
    if (Option.isNone(record)) return Effect.succeed(undefined)
    const userId = record.value.userId
    if (userId === null) return Effect.succeed(principalOf(record.value, undefined))
    return Effect.map(identity.user(userId), (user) => principalOf(record.value, Option.getOrUndefined(user)))
  })

/** The caller of a request, or the 401 of the spec (code `invalid_api_key`). */
export const authenticate = (
  header: string | undefined
): Effect.Effect<PrincipalShape, ApiError.AuthenticationError, Identity> =>
  Effect.flatMap(Identity, (identity) => {
    const key = bearerKey(header)
    if (Option.isNone(key)) return Effect.fail(missingKey())
    return Effect.flatMap(
      lookUp(identity, key.value),
      (principal) => principal === undefined ? Effect.fail(invalidKey()) : Effect.succeed(principal)
    )
  })
