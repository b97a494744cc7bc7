/**
 * The apps group of the contract (`AppsGroup`).
 *
 * Source: spec "POST {api_url}/apps/find".
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import * as App from "../../Domain/App.js"
import { Errors } from "../Errors.js"
import { Authorization, operation } from "../Operation.js"

/** Apps: POST /apps/find (spec: "POST {api_url}/apps/find"). @since 0.1.0 @category Contract */
export class AppsGroup extends HttpApiGroup.make("apps")
  .annotate(OpenApi.Description, "Apps: the named applications boxes are created from; addressed from `{api_url}`.")
  .add(
    operation(
      HttpApiEndpoint.post("find", "/apps/find")
        .setPayload(App.FindAppRequest)
        .addSuccess(App.App)
        .addError(Errors.QuotaExceeded),
      {
        summary: "Find an app by name",
        description:
          "Finds the organization's app named `name`; with `mint_if_missing: true` the app is created when " +
          "missing (one app per name, whatever the race)."
      }
    )
  )
  .middleware(Authorization) {}
