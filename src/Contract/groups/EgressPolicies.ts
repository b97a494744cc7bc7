/**
 * The egress policies group of the contract (`EgressPoliciesGroup`) and the policy name's rules.
 *
 * Source: spec "PATCH {base_url}/egress-policies/{policy_id}", "Limits"; create and read: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import * as EgressPolicy from "../../Domain/EgressPolicy.js"
import * as Ids from "../../Domain/Ids.js"
import { Errors } from "../Errors.js"
import { Authorization, operation, wellFormedName } from "../Operation.js"

/** A line of text that is not whitespace or control: a name's visible first and last character. */
const visibleCharacter = "[^\\s\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]"
const lineCharacter = "[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]"
const trimmedSpace = "[^\\S\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]"

/**
 * A policy name as JSON Schema says it: surrounding whitespace, then 1 to 128 characters that start and end with a
 * character that is not whitespace, with no control characters or line breaks (spec PATCH egress policy, Limits).
 */
const policyNameRule = {
  pattern: `^${trimmedSpace}*${visibleCharacter}(?:${lineCharacter}{0,126}${visibleCharacter})?${trimmedSpace}*$`
}

/** What a policy name is refused for beyond {@link policyNameRule}. */
const policyNameRefusals = [
  { param: "name", rule: "a name whose only non-space characters are invisible (format characters such as U+200B)" },
  wellFormedName
]

/**
 * Egress policies: create and read (shapes not shown, docs/ASSUMPTIONS.md) and PATCH rename (spec).
 *
 * @since 0.1.0
 * @category Contract
 */
export class EgressPoliciesGroup extends HttpApiGroup.make("egressPolicies")
  .annotate(OpenApi.Description, "Egress policies: named, saved network rules a box can reference.")
  .add(
    operation(
      HttpApiEndpoint.post("create", "/egress-policies")
        .setPayload(EgressPolicy.CreatePolicyRequest)
        .addSuccess(EgressPolicy.EgressPolicy, { status: 201 })
        .addError(Errors.QuotaExceeded),
      {
        summary: "Save an egress policy",
        description: "Saves a named egress policy document (at most 64 KiB encoded); it may be normalized on save.",
        maxBodyBytes: 128 * 1024,
        bodyProperties: { name: policyNameRule },
        alsoRefused: [
          ...policyNameRefusals,
          { param: "document", rule: "a document of more than 64 KiB as compact UTF-8 JSON" }
        ]
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.get("retrieve")`/egress-policies/${HttpApiSchema.param("policy_id", Ids.EgressPolicyId)}`
        .addSuccess(EgressPolicy.EgressPolicy),
      {
        summary: "Read an egress policy",
        description: "Returns a saved egress policy with its (possibly normalized) document."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.patch("rename")`/egress-policies/${HttpApiSchema.param("policy_id", Ids.EgressPolicyId)}`
        .setPayload(EgressPolicy.RenamePolicyRequest)
        .addSuccess(EgressPolicy.EgressPolicy),
      {
        summary: "Rename an egress policy",
        description: "Renames a policy; the document is unchanged and `updated_at` reflects the rename.",
        bodyProperties: { name: policyNameRule },
        alsoRefused: policyNameRefusals
      }
    )
  )
  .middleware(Authorization) {}
