/**
 * The secrets group of the contract (`SecretsGroup`).
 *
 * Source: spec "GET {base_url}/secrets/{name}"; the create operation: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import * as Secret from "../../Domain/Secret.js"
import { Errors } from "../Errors.js"
import { Authorization, MemberByteCaps, operation } from "../Operation.js"

/**
 * Secrets: GET /secrets/{name} (spec) and POST /secrets (create; shape not shown, docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Contract
 */
export class SecretsGroup extends HttpApiGroup.make("secrets")
  .annotate(OpenApi.Description, "Secrets of the organization: names and dates are readable, values never leave the service.")
  .add(
    operation(
      HttpApiEndpoint.get("retrieve")`/secrets/${HttpApiSchema.param("name", Secret.SecretNameParam)}`
        .addSuccess(Secret.Secret),
      {
        summary: "Read a secret",
        description:
          "Returns a secret's metadata (organization, name, dates), never its value. The name may carry " +
          "surrounding whitespace, which is ignored."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.post("create", "/secrets")
        .setPayload(Secret.CreateSecretRequest)
        .addSuccess(Secret.Secret, { status: 201 })
        .addError(Errors.QuotaExceeded)
        .annotate(MemberByteCaps, Secret.createRequestCaps),
      {
        summary: "Create or replace a secret",
        description:
          "Stores `value` under `name` in the caller's organization, replacing the value of an existing secret " +
          "(`created_at` kept). The value is never returned.",
        maxBodyBytes: 256 * 1024,
        alsoRefused: [{ param: "value", rule: "a value with an unpaired surrogate half (not well-formed Unicode)" }]
      }
    )
  )
  .middleware(Authorization) {}
