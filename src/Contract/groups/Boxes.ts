/**
 * The boxes group of the contract (`BoxesGroup`) and the create body's rules that span fields.
 *
 * Source: spec "POST {base_url}/boxes", "Box lifecycle"; the lifecycle operations: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import * as Box from "../../Domain/Box.js"
import * as Ids from "../../Domain/Ids.js"
import { Errors } from "../Errors.js"
import { BoxHeaders, IdempotentBoxHeaders } from "../Headers.js"
import { type OperationDocs, secretMentionReference } from "../OpenApiDocs.js"
import { Authorization, BoxIdParam, Idempotent, idempotencyKeyBytes, operation, wellFormedName } from "../Operation.js"

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
