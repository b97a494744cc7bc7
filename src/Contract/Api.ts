/**
 * The HTTP contract of the Box Service: one `HttpApi` from which the local service, the client and the OpenAPI
 * document are all derived.
 *
 * Source: spec "Endpoints" (every operation shown) plus the operations it names without a shape that users cannot do
 * without; their paths are conventional REST choices listed in docs/ASSUMPTIONS.md. Both `{base_url}` and `{api_url}`
 * end in `/v1`; the local service serves both under one `/v1`.
 *
 * @since 0.1.0
 */
import { HttpApi, OpenApi } from "@effect/platform"
import * as Json from "../Domain/Json.js"
import { AppsGroup } from "./groups/Apps.js"
import { BoxesGroup } from "./groups/Boxes.js"
import { ClipboardGroup } from "./groups/Clipboard.js"
import { EgressPoliciesGroup } from "./groups/EgressPolicies.js"
import { ExecGroup } from "./groups/Exec.js"
import { ListenersGroup } from "./groups/Listeners.js"
import { ResponsesGroup } from "./groups/Responses.js"
import { SecretsGroup } from "./groups/Secrets.js"
import { withoutDecodeError, withStatedSchemas } from "./OpenApiDocs.js"

/**
 * The groups whose operations are addressed from `{api_url}` (spec: "POST {api_url}/apps/find", "POST
 * {api_url}/responses"); every other group is addressed from `{base_url}`.
 *
 * @since 0.1.0
 * @category Constants
 */
export const apiUrlGroups: ReadonlySet<string> = new Set(["apps", "responses"])

export { Errors } from "./Errors.js"
export {
  IdempotencyKeyHeader,
  IdempotentReplayedHeader,
  OwnerOverrideHeader,
  OwnerOverrideReason
} from "./Headers.js"

/** The API version identifier (spec: Versioning). @since 0.1.0 @category Constants */
export const apiVersion = "2026-10-04"

export { AppsGroup } from "./groups/Apps.js"
export { BoxesGroup } from "./groups/Boxes.js"
export { ClipboardGroup } from "./groups/Clipboard.js"
export { EgressPoliciesGroup } from "./groups/EgressPolicies.js"
export { ExecGroup } from "./groups/Exec.js"
export { ListenersGroup } from "./groups/Listeners.js"
export { ResponsesGroup } from "./groups/Responses.js"
export { SecretsGroup } from "./groups/Secrets.js"
export {
  Authorization,
  type CommonError,
  defaultMaxBodyBytes,
  Idempotent,
  MaxBodyBytes,
  MemberByteCaps
} from "./Operation.js"

/**
 * The whole contract, under the `/v1` version segment. Every group is behind bearer authentication (`Authorization`,
 * declared on each group so that each operation of the OpenAPI document names its security requirement).
 *
 * @since 0.1.0
 * @category Contract
 */
export class BoxServiceApi extends HttpApi.make("BoxService")
  .add(AppsGroup)
  .add(SecretsGroup)
  .add(EgressPoliciesGroup)
  .add(BoxesGroup)
  .add(ExecGroup)
  .add(ListenersGroup)
  .add(ClipboardGroup)
  .add(ResponsesGroup)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Box Service HTTP API")
  .annotate(OpenApi.Version, apiVersion)
  .annotate(
    OpenApi.Description,
    "Boxes (sandboxed machines), their ports, clipboard and terminals; secrets, egress policies and apps; model " +
      "responses. Every operation takes `Authorization: Bearer <API_KEY>`; errors answer the envelope " +
      "`{ error: { type, message, param, code } }`. A JSON body may nest arrays and objects at most " +
      `${Json.maxDepth} levels deep (deeper is a 400 naming the top-level field). Quotas per organization ` +
      "(boxes not terminated, background responses in flight, stored bytes) answer 429 `quota_exceeded_error` " +
      "with the quota in `code`. A JSON body may come without `Content-Type` (it is read as JSON), and members a " +
      "body's schema does not name are ignored. Each operation's description names, after \"Also refused\", the " +
      "rules it checks that its schemas cannot state, with the `param` of their 400."
  )
  .annotate(OpenApi.License, { name: "MIT", url: "https://opensource.org/license/mit" })
  .annotate(OpenApi.Transform, (document) => withStatedSchemas(withoutDecodeError(document)))
  .annotate(OpenApi.Servers, [
    { url: "http://127.0.0.1:8787", description: "the local box service (`boxkit serve`, default address)" }
  ]) {}

/** The OpenAPI document of the contract. @since 0.1.0 @category Contract */
export const openApiDocument = () => OpenApi.fromApi(BoxServiceApi)
