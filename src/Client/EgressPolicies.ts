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
import * as Tracing from "./Tracing.js"

/** The EgressPolicies service. */
export class EgressPolicies extends Effect.Service<EgressPolicies>()("boxkit/EgressPolicies", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /**
       * Saves a policy: `name` (1 to 128 characters after trimming) and its document (at most 64 KiB encoded).
       * Not retried on 500 or transport failures (it is not idempotent).
       */
      create: Tracing.fn("EgressPolicies.create")(function*(
        name: string,
        document: PolicyDocument,
        options: OperationOptions = {}
      ) {
        const payload = yield* validate(CreatePolicyRequest, { name: name.trim(), document })
        return yield* transport.operation(
          "egressPolicies",
          "create",
          { payload },
          { safeToRepeat: false, retry: options.retry }
        )
      }),
      /** Reads a policy (possibly normalized: same behaviour, maybe another shape). */
      retrieve: Tracing.fn("EgressPolicies.retrieve")(function*(policyId: EgressPolicyId, options: OperationOptions = {}) {
        return yield* transport.operation(
          "egressPolicies",
          "retrieve",
          { path: { policy_id: policyId } },
          { safeToRepeat: true, retry: options.retry }
        )
      }),
      /** Renames a policy; the document is unchanged and `updated_at` reflects the rename. */
      rename: Tracing.fn("EgressPolicies.rename")(function*(
        policyId: EgressPolicyId,
        name: string,
        options: OperationOptions = {}
      ) {
        const payload = yield* validate(RenamePolicyRequest, { name: name.trim() })
        return yield* transport.operation(
          "egressPolicies",
          "rename",
          { path: { policy_id: policyId }, payload },
          { safeToRepeat: true, retry: options.retry }
        )
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
