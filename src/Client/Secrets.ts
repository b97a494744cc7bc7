/**
 * Secrets: read a secret's metadata (never its value) and create or replace one.
 *
 * Source: spec "GET {base_url}/secrets/{name}"; create: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Effect, Redacted } from "effect"
import { CreateSecretRequest, SecretName } from "../Domain/Secret.js"
import { type OperationOptions, Transport, validate } from "./Transport.js"

/**
 * The Secrets service (`yield* Secrets`): `retrieve` a secret's metadata (never its value) and `create` or replace one
 * (the value sent `Redacted`). Each method fails with the errors its endpoint lists (`OperationErrors["secrets"]`).
 * Provided by `Boxkit.layer`; source: spec "GET {base_url}/secrets/{name}", create: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 * @category Services
 */
export class Secrets extends Effect.Service<Secrets>()("boxkit/Secrets", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /** The Secret object (org_id, name, created_at, updated_at) of `name`; `NotFoundError` when missing. */
      retrieve: Effect.fn("Secrets.retrieve")(function*(name: string, options: OperationOptions = {}) {
        const checked = yield* validate(SecretName, name.trim())
        return yield* transport.operation(
          "secrets",
          "retrieve",
          { path: { name: checked } },
          { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry }
        )
      }),
      /**
       * Creates the secret `name` or replaces its value; the value is `Redacted` and never returned. Safe to repeat
       * (a repeat stores the same value again; only `updated_at` moves), so it is retried after a lost answer
       * unless `safeToRepeat: false`.
       */
      create: Effect.fn("Secrets.create")(function*(
        name: string,
        value: Redacted.Redacted<string>,
        options: OperationOptions = {}
      ) {
        const payload = yield* validate(CreateSecretRequest, { name, value })
        return yield* transport.operation("secrets", "create", { payload }, { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry })
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
