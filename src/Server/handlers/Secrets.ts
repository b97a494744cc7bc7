/**
 * Handlers of the secrets group: GET /secrets/{name} (metadata only, never the value) and POST /secrets.
 *
 * Source: spec "GET {base_url}/secrets/{name}", "Secret"; create is named without a shape (docs/ASSUMPTIONS.md); a new
 * secret past the organization's `secrets` quota is a 429 `quota_exceeded_error` (docs/ASSUMPTIONS.md "Quotas").
 *
 * @since 0.1.0
 */
import { DateTime, Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { Secret } from "../../Domain/Secret.js"
import { requireOrganization } from "../boxes/BoxAccess.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { type SecretRecord, Secrets } from "../state/Repositories.js"

/** The Secret object of each stored record (records are replaced, never changed in place). */
const secretsOfRecords = new WeakMap<SecretRecord, Secret>()

/**
 * The Secret object of a stored secret: exactly its four fields, never the value. Built once per record and
 * registered with `HandlerGroups.encodeOnce` (each record is encoded once). The record was validated when it was
 * stored, so it is not validated again here (the contract's encoder checks the answer).
 */
export const toSecret = (record: SecretRecord): Secret => {
  let secret = secretsOfRecords.get(record)
  if (secret === undefined) {
    secret = HandlerGroups.encodeOnce(new Secret(
      { org_id: record.orgId, name: record.name, created_at: record.createdAt, updated_at: record.updatedAt },
      true
    ))
    secretsOfRecords.set(record, secret)
  }
  return secret
}

/** The secrets handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "secrets", (handlers) =>
  Effect.gen(function*() {
    const secrets = yield* Secrets
    const config = yield* LocalServiceConfig
    return handlers
      .handle("retrieve", ({ path }) =>
        Effect.gen(function*() {
          const orgId = yield* requireOrganization(yield* Principal)
          const found = yield* secrets.get(orgId, path.name)
          if (Option.isNone(found)) {
            return yield* Effect.fail(ApiError.make.notFound(`No secret named ${path.name} in this organization.`))
          }
          return toSecret(found.value)
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const orgId = yield* requireOrganization(yield* Principal)
          const now = DateTime.formatIso(yield* DateTime.now)
          // A new secret past the organization's quota is refused (Quotas.ts); a replaced value never is.
          const stored = yield* secrets.putWithinQuota(
            orgId,
            payload.name,
            payload.value,
            now,
            Quotas.countLimit(config.quotas, "secrets")
          )
          if (Option.isNone(stored)) return yield* Effect.fail(Quotas.countExceeded(config.quotas, "secrets"))
          return toSecret(stored.value)
        }))
  }))
