/**
 * Handlers of the egress-policies group: create, read, and PATCH rename (the document is unchanged; `updated_at`
 * reflects the rename).
 *
 * Source: spec "PATCH {base_url}/egress-policies/{policy_id}", "Egress policy" rules 1-3; create and read are named
 * without a shape (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { DateTime, Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { EgressPolicy, normalize } from "../../Domain/EgressPolicy.js"
import { EgressPolicyId, mint } from "../../Domain/Ids.js"
import { requireOrganization } from "../boxes/BoxAccess.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { EgressPolicies, type PolicyRecord } from "../state/Repositories.js"

/** The Egress policy object of a stored policy. */
export const toPolicy = (record: PolicyRecord): EgressPolicy =>
  new EgressPolicy({
    id: EgressPolicyId.make(record.id, true),
    org_id: record.orgId,
    name: record.name,
    document: record.document as Record<string, unknown>,
    created_at: record.createdAt,
    updated_at: record.updatedAt
  })

/** The egress-policies handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "egressPolicies", (handlers) =>
  Effect.gen(function*() {
    const policies = yield* EgressPolicies
    const config = yield* LocalServiceConfig
    const notFound = (id: string) => ApiError.make.notFound(`No egress policy ${id} in this organization.`, "policy_id")
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const orgId = yield* requireOrganization(yield* Principal)
          const now = DateTime.formatIso(yield* DateTime.now)
          const record: PolicyRecord = {
            id: mint("ep_"),
            orgId,
            name: payload.name,
            document: normalize(payload.document),
            createdAt: now,
            updatedAt: now
          }
          // Past the organization's `egress_policies` quota the policy is refused (Quotas.ts).
          if (!(yield* policies.insertWithinQuota(record, Quotas.countLimit(config.quotas, "egress_policies")))) {
            return yield* Effect.fail(Quotas.countExceeded(config.quotas, "egress_policies"))
          }
          return toPolicy(record)
        }))
      .handle("retrieve", ({ path }) =>
        Effect.gen(function*() {
          const orgId = yield* requireOrganization(yield* Principal)
          const found = yield* policies.get(orgId, path.policy_id)
          if (Option.isNone(found)) return yield* Effect.fail(notFound(path.policy_id))
          return toPolicy(found.value)
        }))
      .handle("rename", ({ path, payload }) =>
        Effect.gen(function*() {
          const orgId = yield* requireOrganization(yield* Principal)
          const now = DateTime.formatIso(yield* DateTime.now)
          const updated = yield* policies.update(orgId, path.policy_id, (record) => ({
            ...record,
            name: payload.name,
            updatedAt: now
          }))
          if (Option.isNone(updated)) return yield* Effect.fail(notFound(path.policy_id))
          return toPolicy(updated.value)
        }))
  }))
