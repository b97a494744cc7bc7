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
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Context, Schema } from "effect"
import * as ApiError from "../ApiError.js"
import * as App from "../Domain/App.js"
import * as Box from "../Domain/Box.js"
import * as EgressPolicy from "../Domain/EgressPolicy.js"
import * as Ids from "../Domain/Ids.js"
import * as Json from "../Domain/Json.js"
import * as ModelResponse from "../Domain/ModelResponse.js"
import * as Secret from "../Domain/Secret.js"
import { Errors } from "./Errors.js"
import { BoxHeaders, IdempotentBoxHeaders, ResponseHeaders } from "./Headers.js"
import * as IdempotencyKey from "./IdempotencyKey.js"
import {
  alsoRefusedText,
  answerHeaders,
  byteSize,
  type OperationDocs,
  secretMentionReference,
  withoutDecodeError,
  withStatedSchemas
} from "./OpenApiDocs.js"
import { Principal } from "./Principal.js"

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

/**
 * Marks an endpoint that honours `Idempotency-Key` (create box, upgrade, create response). The local service's
 * idempotency layer applies to exactly the endpoints carrying this annotation.
 *
 * @since 0.1.0
 * @category Contract
 */
export class Idempotent extends Context.Tag("boxkit/Idempotent")<Idempotent, true>() {}

/**
 * Bearer authentication (spec: Authentication 1, 4). Fails with `AuthenticationError` (401, `invalid_api_key`) and
 * provides the {@link Principal} to handlers.
 *
 * @since 0.1.0
 * @category Contract
 */
export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Authorization", {
  failure: Errors.Authentication,
  provides: Principal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** The errors every box, secret and egress-policy operation can answer: 400, 401, 402, 403, 404, 429, 500, 503. */
const commonErrors = <E extends HttpApiEndpoint.HttpApiEndpoint.Any>(endpoint: E) =>
  // `HttpApiEndpoint.Any` has no `addError`: the endpoint is used through `AnyWithProps`, and the result type below
  // says what the eight calls add.
  (endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps)
    .addError(Errors.InvalidRequest)
    .addError(Errors.Authentication)
    .addError(Errors.Billing)
    .addError(Errors.Permission)
    .addError(Errors.NotFound)
    .addError(Errors.RateLimit)
    .addError(Errors.Server)
    .addError(Errors.Unavailable) as unknown as HttpApiEndpoint.HttpApiEndpoint.AddError<E, CommonError, never>

/**
 * The largest request body an endpoint takes when its operation names no other limit, in bytes: 16 KiB (requests
 * without a body, and small JSON bodies). docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultMaxBodyBytes = 16 * 1024

/**
 * The largest request body an endpoint takes, in bytes (a larger one is answered 400 naming the limit, before it is
 * read). Set on each endpoint of the contract; read by the local service's request pipeline (Routes.ts).
 *
 * @since 0.1.0
 * @category Contract
 */
export class MaxBodyBytes extends Context.Tag("boxkit/MaxBodyBytes")<MaxBodyBytes, number>() {}

/**
 * The byte caps of an endpoint's bounded top-level body members (`Json.MemberCaps`, declared next to the request's
 * schema): the local service's request pipeline refuses a member over its cap with a 400 naming it, before the body is
 * parsed (Routes.ts reads it; an endpoint without it has no caps). docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category Contract
 */
export class MemberByteCaps extends Context.Tag("boxkit/MemberByteCaps")<MemberByteCaps, Json.MemberCaps>() {}

/**
 * One operation of the contract: the endpoint with the common errors, its summary and description in the OpenAPI
 * document, and its body limit (stated in the description too).
 */
const operation = <E extends HttpApiEndpoint.HttpApiEndpoint.Any>(endpoint: E, docs: OperationDocs) => {
  const maxBodyBytes = docs.maxBodyBytes ?? defaultMaxBodyBytes
  // `HttpApiEndpoint.Any` has no `annotate`; the result has the type of `commonErrors(endpoint)`.
  const annotations = (endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps).annotations
  const idempotent = Context.getOption(annotations, Idempotent)._tag === "Some"
  return (commonErrors(endpoint) as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps)
    .annotate(OpenApi.Summary, docs.summary)
    .annotate(
      OpenApi.Description,
      `${docs.description}${alsoRefusedText(docs.alsoRefused)} Request body: at most ${byteSize(maxBodyBytes)}.`
    )
    .annotate(OpenApi.Transform, answerHeaders(idempotent, docs))
    .annotate(MaxBodyBytes, maxBodyBytes) as unknown as ReturnType<typeof commonErrors<E>>
}

/**
 * The API errors every endpoint lists: 400, 401, 402, 403, 404, 429 (`RateLimitError`) and 500/503 (`ServerError`).
 *
 * Source: spec "Errors".
 *
 * @since 0.1.0
 * @category Errors
 */
export type CommonError =
  | ApiError.InvalidRequestError
  | ApiError.AuthenticationError
  | ApiError.BillingError
  | ApiError.PermissionError
  | ApiError.NotFoundError
  | ApiError.RateLimitError
  | ApiError.ServerError

const BoxIdParam = HttpApiSchema.param("box_id", Ids.BoxId)

/** A name's text that JSON Schema cannot refuse: an unpaired surrogate half (docs/ASSUMPTIONS.md "Text fields"). */
const wellFormedName = { param: "name", rule: "a name with an unpaired surrogate half (not well-formed Unicode)" }

/** `Idempotency-Key` is limited in UTF-8 bytes, JSON Schema counts characters (docs/ASSUMPTIONS.md). */
const idempotencyKeyBytes = {
  param: IdempotencyKey.param,
  rule: `an \`Idempotency-Key\` of more than ${IdempotencyKey.maxBytes} bytes of UTF-8`
}

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
 * The memory and state-disk ranges of each box size (`Box.sizeLimits`, GiB), as `if`/`then` rules of the create body:
 * a request without `size` is size `m`.
 */
const sizeRangeRules = (["s", "m", "l"] as const).map((size) => ({
  if: size === "m"
    ? { properties: { size: { const: size } } }
    : { properties: { size: { const: size } }, required: ["size"] },
  then: {
    properties: {
      memory_limit_gib: { minimum: Box.sizeLimits[size].memory.min, maximum: Box.sizeLimits[size].memory.max },
      state_disk_limit_gib: { minimum: Box.sizeLimits[size].stateDisk.min, maximum: Box.sizeLimits[size].stateDisk.max }
    }
  }
}))

/** An inline policy with `no_network: true` and a non-empty `ingress_ports` do not go together (spec: create box). */
const noNetworkWithIngressRule = {
  not: {
    required: ["egress_policy", "ingress_ports"],
    properties: {
      egress_policy: { type: "object", required: ["no_network"], properties: { no_network: { const: true } } },
      ingress_ports: { minItems: 1 }
    }
  }
}

/** An inline egress policy's `rules` use no secrets (spec: create box, egress_policy; `EgressPolicy.usesSecrets`). */
const inlinePolicyWithoutSecretsRule = {
  not: {
    required: ["egress_policy"],
    properties: {
      egress_policy: { type: "object", required: ["rules"], properties: { rules: { $ref: secretMentionReference } } }
    }
  }
}

/**
 * `metadata.completion_window` is a completion window, and not `asap` on a background request (spec: completion
 * windows; docs/ASSUMPTIONS.md).
 */
const completionWindowRules = [
  { properties: { metadata: { properties: { completion_window: { enum: ModelResponse.CompletionWindow.literals } } } } },
  {
    not: {
      required: ["background", "metadata"],
      properties: {
        background: { const: true },
        metadata: {
          type: "object",
          required: ["completion_window"],
          properties: { completion_window: { const: "asap" } }
        }
      }
    }
  }
]

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

/**
 * A lifecycle move of a box (`POST /boxes/{box_id}/{name}`): answers the box, 409 `conflict_error` when the box's
 * status does not allow the move (`BoxLifecycle`).
 */
const lifecycleMove = <const Name extends "pause" | "resume" | "sleep">(name: Name, docs: OperationDocs) =>
  operation(
    HttpApiEndpoint.post(name, `/boxes/:box_id/${name}`)
      .setPath(Schema.Struct({ box_id: Ids.BoxId }))
      .setHeaders(BoxHeaders)
      .addSuccess(Box.Box)
      .addError(Errors.Conflict),
    docs
  )

/**
 * Boxes: create, read, upgrade, and the lifecycle operations named without a shape (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Contract
 */
export class BoxesGroup extends HttpApiGroup.make("boxes")
  .annotate(OpenApi.Description, "Boxes: create, read, upgrade and move through their lifecycle.")
  .add(
    operation(
      HttpApiEndpoint.post("create", "/boxes")
        .setPayload(Box.CreateBoxRequest)
        .setHeaders(IdempotentBoxHeaders)
        .addSuccess(Box.CreateBoxResponse, { status: 201 })
        .addError(Errors.Conflict)
        .addError(Errors.IdempotentRequestInFlight)
        .addError(Errors.QuotaExceeded)
        .annotate(Idempotent, true),
      {
        summary: "Create a box",
        description:
          "Creates a box from an image of the app; answers its id and first status at once (poll the box for " +
          "`running`). Honours `Idempotency-Key`.",
        maxBodyBytes: 128 * 1024,
        bodyRules: [...sizeRangeRules, noNetworkWithIngressRule, inlinePolicyWithoutSecretsRule],
        alsoRefused: [
          wellFormedName,
          { param: "ingress_ports", rule: "`ingress_ports` with a saved egress policy that sets `no_network: true`" },
          { param: "ingress_ports", rule: "`ingress_ports` on an image without persistence" },
          { param: "ingress_ports[*].guest_port", rule: "a `guest_port` listed twice" },
          idempotencyKeyBytes
        ]
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.get("retrieve")`/boxes/${BoxIdParam}`
        .setHeaders(BoxHeaders)
        .addSuccess(Box.Box),
      {
        summary: "Read a box",
        description: "Returns the box record; its `status` is an open set."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.post("upgrade")`/boxes/${BoxIdParam}/upgrade`
        .setHeaders(IdempotentBoxHeaders)
        .addSuccess(Box.UpgradeResult)
        .addError(Errors.Conflict)
        .addError(Errors.IdempotentRequestInFlight)
        .addError(Errors.QuotaExceeded)
        .annotate(Idempotent, true),
      {
        summary: "Upgrade a box",
        description:
          "Moves the box onto the current runtime now when it is running, or records the upgrade for its next " +
          "wake (`applied: false`). Honours `Idempotency-Key`.",
        alsoRefused: [idempotencyKeyBytes]
      }
    )
  )
  .add(lifecycleMove("pause", { summary: "Pause a box", description: "Pauses a running box." }))
  .add(lifecycleMove("resume", {
    summary: "Resume a box",
    description: "Resumes a paused or sleeping box; an upgrade recorded for its next wake applies now."
  }))
  .add(lifecycleMove("sleep", { summary: "Put a box to sleep", description: "Puts a running box to sleep." }))
  .add(
    operation(
      HttpApiEndpoint.post("terminate")`/boxes/${BoxIdParam}/terminate`
        .setHeaders(BoxHeaders)
        .addSuccess(Box.Box),
      {
        summary: "Terminate a box",
        description: "Terminates a box; its end status is `terminated`."
      }
    )
  )
  .middleware(Authorization) {}

/**
 * Exec: POST /boxes/{box_id}/exec/{exec_id}/resize (spec), with the `-` + `exec_request_id` form.
 *
 * @since 0.1.0
 * @category Contract
 */
export class ExecGroup extends HttpApiGroup.make("exec")
  .annotate(OpenApi.Description, "Exec: the terminals of commands running in a box.")
  .add(
    operation(
      HttpApiEndpoint.post("resize")`/boxes/${BoxIdParam}/exec/${
        HttpApiSchema.param("exec_id", Schema.String.pipe(Schema.minLength(1)))
      }/resize`
        .setUrlParams(Schema.Struct({
          exec_request_id: Schema.optional(
            Schema.String.pipe(Schema.minLength(1, { message: () => "exec_request_id must not be empty" }))
          )
        }))
        .setHeaders(BoxHeaders)
        .setPayload(Box.ResizeRequest)
        .addSuccess(Box.EmptyObject)
        .addError(Errors.IdempotentRequestInFlight),
      {
        summary: "Resize an exec's terminal",
        description:
          "Sets the latest terminal size of an exec; an unknown exec or one without a terminal is a no-op. When " +
          "the exec id does not fit one path segment, send `-` and the id in `exec_request_id`.",
        alsoRefused: [{ param: "exec_request_id", rule: "the path's `exec_id` `-` without `exec_request_id`" }]
      }
    )
  )
  .middleware(Authorization) {}

const GuestPortParam = HttpApiSchema.param("guest_port", Box.GuestPortFromPath)

/**
 * Listeners (published ports): DELETE /boxes/{box_id}/listeners/{guest_port} (spec), and the operations the spec names
 * without a shape that proving its listener rules needs (docs/ASSUMPTIONS.md): publish
 * `POST /boxes/{box_id}/listeners` `{guest_port, protocol}` (201, the listener with its address) and add a custom
 * domain `POST /boxes/{box_id}/listeners/{guest_port}/domains` `{hostname}` (the listener). All creator only: no
 * owner override (spec: "Only the creator of a box may publish or unpublish ports", "adding and removing custom
 * domains" stay with the creator). A box without persistence answers 409.
 *
 * @since 0.1.0
 * @category Contract
 */
export class ListenersGroup extends HttpApiGroup.make("listeners")
  .annotate(OpenApi.Description, "Listeners: the ports a box publishes, with their addresses and custom domains.")
  .add(
    operation(
      HttpApiEndpoint.post("publish")`/boxes/${BoxIdParam}/listeners`
        .setHeaders(BoxHeaders)
        .setPayload(Box.PublishListenerRequest)
        .addSuccess(Box.Listener, { status: 201 })
        .addError(Errors.Conflict),
      {
        summary: "Publish a port",
        description:
          "Publishes a port of the box (`http` or `tcp`) and answers the listener with its address. Only the " +
          "box's creator may."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.post("addDomain")`/boxes/${BoxIdParam}/listeners/${GuestPortParam}/domains`
        .setHeaders(BoxHeaders)
        .setPayload(Box.AddDomainRequest)
        .addSuccess(Box.Listener)
        .addError(Errors.Conflict),
      {
        summary: "Add a custom domain",
        description: "Registers a hostname as a custom domain of a published http port. Only the box's creator may."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.del("unpublish")`/boxes/${BoxIdParam}/listeners/${GuestPortParam}`
        .setHeaders(BoxHeaders)
        .addSuccess(Box.UnpublishResult)
        .addError(Errors.Conflict),
      {
        summary: "Unpublish a port",
        description:
          "Unpublishes a port; works on running, paused and sleeping boxes without waking them. Only the box's " +
          "creator may."
      }
    )
  )
  .middleware(Authorization) {}

/**
 * Clipboard: PUT /boxes/{box_id}/clipboard (spec). The body is raw bytes; its Content-Type (`text/plain` or
 * `image/*`) is the media type. The local service reads the bytes itself.
 *
 * @since 0.1.0
 * @category Contract
 */
export class ClipboardGroup extends HttpApiGroup.make("clipboard")
  .annotate(OpenApi.Description, "Clipboard: text or an image placed on a box's clipboard.")
  .add(
    operation(
      HttpApiEndpoint.put("write")`/boxes/${BoxIdParam}/clipboard`
        .setHeaders(BoxHeaders)
        // The body's media type is the value's: text/plain or any image/* type (spec: Content-Type rule).
        .setPayload(Schema.Union(
          HttpApiSchema.Text({ contentType: "text/plain" }),
          HttpApiSchema.Uint8Array({ contentType: "image/*" })
        ))
        .addSuccess(Box.EmptyObject)
        .addError(Errors.Conflict)
        .addError(Errors.NotImplemented)
        .addError(Errors.QuotaExceeded),
      {
        summary: "Write the clipboard",
        description:
          "Places the raw request body on the box's clipboard; its Content-Type (`text/plain` or an `image/*` " +
          "type) is the media type. `501 not_implemented_error` when the guest image has no clipboard.",
        maxBodyBytes: Box.maxClipboardBytes
      }
    )
  )
  .middleware(Authorization) {}

/**
 * Model responses: POST /responses (spec) and GET /responses/{response_id} (named without a shape; it returns the
 * same object as a completion webhook). POST answers 200 with the finished object (foreground), 202 with the accepted
 * object (background), or, when `stream` is true on a foreground request, 200 `text/event-stream` of Responses events
 * (written by the handler; the contract cannot express a stream). Headers: `Idempotency-Key` and the completion-window
 * header `x-completion-window` (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Contract
 */
export class ResponsesGroup extends HttpApiGroup.make("responses")
  .annotate(OpenApi.Description, "Model responses: foreground, background (with completion webhooks) or streamed; addressed from `{api_url}`.")
  .add(
    operation(
      HttpApiEndpoint.post("create", "/responses")
        .setPayload(ModelResponse.CreateResponseRequest)
        .setHeaders(ResponseHeaders)
        .addSuccess(ModelResponse.ModelResponse)
        .addSuccess(ModelResponse.ModelResponse, { status: 202 })
        .addError(Errors.Conflict)
        .addError(Errors.IdempotentRequestInFlight)
        .addError(Errors.QuotaExceeded)
        .annotate(Idempotent, true)
        .annotate(MemberByteCaps, ModelResponse.createRequestCaps),
      {
        summary: "Create a model response",
        description:
          "Creates a model response. 200: the finished Model response object (foreground); 202: the accepted " +
          "object (background: true), completed later; with stream: true on a foreground request, 200 is a " +
          "text/event-stream of Responses events (response.created ... response.completed / response.incomplete " +
          "/ response.failed), each with sequence_number. Honours `Idempotency-Key`.",
        maxBodyBytes: 32 * 1024 * 1024,
        eventStream:
          "Responses events (`text/event-stream`, with `stream: true` on a foreground request): `event:` and " +
          "`data:` lines, each data a JSON event with `type` and `sequence_number`, from `response.created` to " +
          "`response.completed`, `response.incomplete` or `response.failed`.",
        bodyRules: completionWindowRules,
        alsoRefused: [
          {
            param: ModelResponse.completionWindowHeader,
            rule: "`background: true` with the header's window `asap` and no `metadata.completion_window`"
          },
          {
            param: "input[*]",
            rule: "an `input` item that is not a message of content parts the model takes (item references, other " +
              "item types or roles, empty content, audio, files by id or URL, images for a text-only model)"
          },
          idempotencyKeyBytes
        ]
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.get("retrieve")`/responses/${HttpApiSchema.param("response_id", Ids.ResponseId)}`
        .addSuccess(ModelResponse.ModelResponse),
      {
        summary: "Read a model response",
        description:
          "Returns a model response (the same object a completion webhook carries) while its result is " +
          "retained."
      }
    )
  )
  .middleware(Authorization) {}

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
