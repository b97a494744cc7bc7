/**
 * Apps: find an app by name, minting it when asked.
 *
 * Source: spec "POST {api_url}/apps/find".
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { FindAppRequest } from "../Domain/App.js"
import { type OperationOptions, Transport, validate } from "./Transport.js"

/**
 * The Apps service (`yield* Apps`): `find` an app by name, minting it when asked. Each method fails with the errors
 * its endpoint lists (`OperationErrors["apps"]`: the `CallError`s and, for a mint past the organization's apps quota,
 * 429 `QuotaExceededError`). Provided by `Boxkit.layer`; source: spec "POST {api_url}/apps/find".
 *
 * @since 0.1.0
 * @category Services
 */
export class Apps extends Effect.Service<Apps>()("boxkit/Apps", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /**
       * Finds the app named `name` (1 to 128 characters); with `mintIfMissing` it is created when missing, so the
       * call is safe on every start. Fails with `NotFoundError` when missing and not minted.
       */
      find: Effect.fn("Apps.find")(function*(
        name: string,
        options: OperationOptions & { readonly mintIfMissing?: boolean | undefined } = {}
      ) {
        const payload = yield* validate(FindAppRequest, { name, mint_if_missing: options.mintIfMissing ?? false })
        return yield* transport.operation("apps", "find", { payload }, { safeToRepeat: options.safeToRepeat ?? true, retry: options.retry })
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
