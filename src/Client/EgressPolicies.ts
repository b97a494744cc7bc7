/**
 * Egress policies: create, read and rename.
 *
 * Source: spec "PATCH {base_url}/egress-policies/{policy_id}", "Egress policy"; create and read:
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { CreatePolicyRequest, type PolicyDocument, RenamePolicyRequest } from "../Domain/EgressPolicy.js"
import type { EgressPolicyId } from "../Domain/Ids.js"
import { type OperationOptions, Transport, validate } from "./Transport.js"

/**
 * The EgressPolicies service (`yield* EgressPolicies`): `create`, `retrieve` and `rename` egress policies. Each
 * method fails with the errors its endpoint lists (`OperationErrors["egressPolicies"]`). Provided by `Boxkit.layer`;
 * source: spec "PATCH {base_url}/egress-policies/{policy_id}", "Egress policy"; create and read: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 * @category Services
 */
export class EgressPolicies extends Effect.Service<EgressPolicies>()("boxkit/EgressPolicies", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /**
       * Saves a policy: `name` (1 to 128 characters after trimming) and its document (at most 64 KiB encoded).
       * Answers the Egress policy object (its `id` is new for every policy saved).
       *
       * The operation takes no `Idempotency-Key`, so by default it is not repeated after a failure that may have
       * run it (a connection lost after sending, an attempt timeout, a 500): the call fails with that error, and
       * the policy may or may not have been saved. A repeat saves a second policy with the same name and a new id
       * (names are not unique, and there is no lookup by name to find the first); the first is then left unused.
       * Pass `safeToRepeat: true` when an unused extra policy does no harm (e.g. a policy made for one run and
       * never listed): the call is then retried like a read. 429 and 503 are retried either way (nothing ran).
       * Source: docs/ASSUMPTIONS.md ("Client": lost answers).
       */
      create: Effect.fn("EgressPolicies.create")(function*(
        name: string,
        document: PolicyDocument,
        options: OperationOptions = {}
      ) {
        const payload = yield* validate(CreatePolicyRequest, { name: name.trim(), document })
        return yield* transport.operation(
          "egressPolicies",
          "create",
          { payload },
          { safeToRepeat: options.safeToRepeat ?? false, retry: options.retry }
        )
      }),
      /** Reads a policy (possibly normalized: same behaviour, maybe another shape). */
      retrieve: Effect.fn("EgressPolicies.retrieve")(function*(policyId: EgressPolicyId, options: OperationOptions = {}) {
        return yield* transport.operation(
          "egressPolicies",
          "retrieve",
          { path: { policy_id: policyId } },
          { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry }
        )
      }),
      /** Renames a policy; the document is unchanged and `updated_at` reflects the rename. */
      rename: Effect.fn("EgressPolicies.rename")(function*(
        policyId: EgressPolicyId,
        name: string,
        options: OperationOptions = {}
      ) {
        const payload = yield* validate(RenamePolicyRequest, { name: name.trim() })
        return yield* transport.operation(
          "egressPolicies",
          "rename",
          { path: { policy_id: policyId }, payload },
          { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry }
        )
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
