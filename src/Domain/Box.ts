/**
 * Boxes: fast-booting virtual machines. Status, the create request with its limits and size-dependent defaults,
 * the box record, the upgrade result and the listener unpublish result.
 *
 * Source: spec "Resources and their fields / Box, Listener, Upgrade result", "States and transitions",
 * "Create a box", "Limits".
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { characterLength, cutsNetwork, PolicyDocument } from "./EgressPolicy.js"
import { AppId, BoxId, EgressPolicyId } from "./Ids.js"
import { DateTimeString, JsonObject } from "./Json.js"
import * as Json from "./Json.js"
import * as Text from "./Text.js"

/**
 * The box statuses the spec lists. The set is open: {@link BoxStatus} decodes any other string too.
 *
 * @since 0.1.0
 * @category Constants
 */
export const knownStatuses = [
  "creating",
  "running",
  "paused",
  "sleeping",
  "terminating",
  "terminated",
  "failed",
  "create_failed",
  "interrupted_restorable",
  "interrupted_unsafe_to_retry"
] as const

/** A status the spec lists. @since 0.1.0 @category Models */
export type KnownBoxStatus = (typeof knownStatuses)[number]

/**
 * A box `status`: one of {@link knownStatuses}, or any other string (open set: "clients must tolerate new values").
 *
 * @since 0.1.0
 * @category Schemas
 */
export const BoxStatus = Schema.Union(Schema.Literal(...knownStatuses), Schema.String).annotations({
  title: "BoxStatus",
  description: "Open set: creating, running, paused, sleeping, terminating, terminated, failed, create_failed, " +
    "interrupted_restorable, interrupted_unsafe_to_retry, or a newer value."
})
/** A box status (open set). @since 0.1.0 @category Models */
export type BoxStatus = typeof BoxStatus.Type

/** Sizes: `s` (1 vCPU), `m` (4 vCPUs), `l` (8 vCPUs). Default `m`. @since 0.1.0 @category Schemas */
export const BoxSize = Schema.Literal("s", "m", "l")
/** A box size. @since 0.1.0 @category Models */
export type BoxSize = typeof BoxSize.Type

/**
 * Memory and state-disk ranges (GiB, inclusive) and defaults per size. Source: spec Create a box, Limits.
 *
 * @since 0.1.0
 * @category Constants
 */
export const sizeLimits = {
  s: { vcpus: 1, memory: { min: 2, max: 64, default: 16 }, stateDisk: { min: 8, max: 128, default: 32 } },
  m: { vcpus: 4, memory: { min: 8, max: 128, default: 32 }, stateDisk: { min: 32, max: 512, default: 128 } },
  l: { vcpus: 8, memory: { min: 16, max: 256, default: 64 }, stateDisk: { min: 64, max: 1024, default: 256 } }
} as const

/** The largest `max_lifetime_seconds`: 4294967295 (2^32 - 1). @since 0.1.0 @category Constants */
export const maxLifetimeSeconds = 4294967295

/**
 * A box name: 1 to 128 characters (Unicode code points), containing non-whitespace, a line of text (no control
 * characters, no line breaks such as U+2028, no unpaired surrogate: Text.ts). Stored exactly as sent, surrounding
 * spaces included. Not unique. Source: spec "Create a box" (name); docs/ASSUMPTIONS.md "Text fields".
 *
 * @since 0.1.0
 * @category Schemas
 */
export const BoxName = Schema.String.pipe(
  Schema.filter((name) => characterLength(name) >= 1 || "name must be 1 to 128 characters"),
  Schema.filter((name) => characterLength(name) <= 128 || "name must be at most 128 characters"),
  Schema.filter((name) => /\S/.test(name) || "name must contain a non-whitespace character"),
  Schema.filter((name) => Text.textLineProblem("name", name) ?? true)
).annotations({
  title: "BoxName",
  // The same rules for JSON Schema (whose lengths count code points too).
  jsonSchema: {
    type: "string",
    minLength: 1,
    maxLength: 128,
    pattern: "^(?=[\\s\\S]*\\S)[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$",
    description: "1 to 128 characters, with a non-whitespace character, no control characters or line breaks " +
      "(U+2028, U+2029 included), well-formed Unicode"
  }
})

/**
 * The `image` of a create request: exactly one of `base`, `oci`, `dockerfile`. Sub-fields are not shown by the spec:
 * boxkit uses `base` (a base image name), `oci` (an image reference), `dockerfile` (its text), plus on a base image
 * the optional `build_steps`, `env`, `python_version`, `systemd` which need an image build (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ImageSpec = Schema.Struct({
  base: Schema.optional(Schema.String.pipe(Schema.minLength(1, { message: () => "image.base must not be empty" }))),
  oci: Schema.optional(Schema.String),
  dockerfile: Schema.optional(Schema.String),
  build_steps: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(Json.ObjectOf(Schema.String)),
  python_version: Schema.optional(Schema.String),
  systemd: Schema.optional(Schema.Boolean)
}).pipe(
  Schema.filter((image) => {
    const kinds = [image.base, image.oci, image.dockerfile].filter((kind) => kind !== undefined).length
    return kinds === 1 || {
      path: [],
      message: "image must have exactly one of base, oci, dockerfile"
    }
  }, {
    // The same rule for JSON Schema, added to the object's own schema.
    jsonSchema: { allOf: [{ oneOf: [{ required: ["base"] }, { required: ["oci"] }, { required: ["dockerfile"] }] }] }
  })
)
/** The `image` of a create request. @since 0.1.0 @category Models */
export type ImageSpec = typeof ImageSpec.Type

/**
 * True when booting this image needs an image build first (which needs an SDK): anything but a bare base image.
 *
 * @since 0.1.0
 * @category Utils
 */
export const needsImageBuild = (image: ImageSpec): boolean =>
  image.oci !== undefined || image.dockerfile !== undefined || image.build_steps !== undefined ||
  image.env !== undefined || image.python_version !== undefined || image.systemd !== undefined

/** A port number inside the box: integer 1 to 65535. @since 0.1.0 @category Schemas */
export const GuestPort = Schema.Int.pipe(
  Schema.between(1, 65535, { message: () => "guest_port must be an integer from 1 to 65535" })
).annotations({ title: "GuestPort" })

/**
 * A `guest_port` path parameter: decimal digits only (no sign, exponent, hex or spaces) for an integer 1 to 65535.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const GuestPortFromPath = Schema.String.pipe(
  Schema.pattern(/^[0-9]{1,5}$/, { message: () => "guest_port must be an integer from 1 to 65535" }),
  Schema.compose(Schema.NumberFromString),
  Schema.compose(GuestPort)
).annotations({
  title: "GuestPortFromPath",
  // In the OpenAPI document the path parameter is what it means: an integer from 1 to 65535.
  jsonSchema: { type: "integer", minimum: 1, maximum: 65535 }
})

/**
 * An `ingress_ports` item (sub-fields not shown by the spec; docs/ASSUMPTIONS.md): the `guest_port` to publish and its
 * `protocol`, `http` (default) or `tcp`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const IngressPort = Schema.Struct({
  guest_port: GuestPort,
  protocol: Schema.optional(Schema.Literal("http", "tcp"))
})
/** An `ingress_ports` item. @since 0.1.0 @category Models */
export type IngressPort = typeof IngressPort.Type

/**
 * A `volume_mounts` item (sub-fields not shown; docs/ASSUMPTIONS.md): the volume id and its mount path.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const VolumeMount = Schema.Struct({
  volume_id: Schema.String.pipe(Schema.minLength(1)),
  mount_path: Schema.String.pipe(Schema.startsWith("/"))
})

/**
 * The `auto_sleep` preference (sub-fields not shown; docs/ASSUMPTIONS.md): `enabled` (default true) and
 * `wait_seconds` (idle seconds before sleeping, 1 to 86400; default 300).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AutoSleep = Schema.Struct({
  enabled: Schema.optional(Schema.Boolean),
  wait_seconds: Schema.optional(Schema.Int.pipe(Schema.between(1, 86400)))
})

/**
 * `org` (default): anyone in the organization can operate the box; `private`: only its creator.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Visibility = Schema.Literal("org", "private")

/**
 * Body of create box. Every rule of the spec's field table is checked here: name, app_id, exactly one image kind,
 * `max_lifetime_seconds` 1 to 4294967295 or null, size s/m/l, memory and state disk within the size's range (GiB),
 * visibility, egress policy as an id or an inline document, and `no_network: true` not combined with `ingress_ports`.
 * Defaults (size `m`, memory and disk per size) are applied by {@link resolveResources}.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CreateBoxRequest = Schema.Struct({
  name: BoxName,
  // Checked as the spec's field table says (at least 1 non-whitespace character), typed as the id of an App
  // (`Ids.AppId`: take it from `Apps.find`, or check a string with `Ids.AppId.make`).
  app_id: Schema.String.pipe(
    Schema.filter((id) => /\S/.test(id) || "app_id must be at least 1 non-whitespace character", {
      jsonSchema: { pattern: "\\S" }
    }),
    Schema.brand("AppId")
  ),
  image: ImageSpec,
  max_lifetime_seconds: Schema.optional(
    Schema.NullOr(Schema.Int.pipe(
      Schema.between(1, maxLifetimeSeconds, {
        message: () => `max_lifetime_seconds must be an integer from 1 to ${maxLifetimeSeconds}, or null`
      })
    ))
  ),
  size: Schema.optional(BoxSize),
  memory_limit_gib: Schema.optional(Schema.Int),
  state_disk_limit_gib: Schema.optional(Schema.Int),
  ingress_ports: Schema.optional(Schema.Array(IngressPort)),
  volume_mounts: Schema.optional(Schema.Array(VolumeMount)),
  visibility: Schema.optional(Visibility),
  auto_sleep: Schema.optional(AutoSleep),
  egress_policy: Schema.optional(Schema.Union(EgressPolicyId, PolicyDocument))
}).pipe(
  Schema.filter((request) => {
    const limits = sizeLimits[request.size ?? "m"]
    const issues: Array<{ path: Array<string>; message: string }> = []
    const size = request.size ?? "m"
    const checks = [
      ["memory_limit_gib", request.memory_limit_gib, limits.memory],
      ["state_disk_limit_gib", request.state_disk_limit_gib, limits.stateDisk]
    ] as const
    for (const [field, value, range] of checks) {
      if (value !== undefined && (value < range.min || value > range.max)) {
        issues.push({ path: [field], message: `${field} must be from ${range.min} to ${range.max} GiB for size ${size}` })
      }
    }
    if (
      // ListenerPolicy's rule "no network at creation" for an inline document (a saved one: ListenerPolicy.ts).
      typeof request.egress_policy === "object" && cutsNetwork(request.egress_policy) &&
      request.ingress_ports !== undefined && request.ingress_ports.length > 0
    ) {
      issues.push({
        path: ["ingress_ports"],
        message: "ingress_ports cannot be combined with egress_policy.no_network: true"
      })
    }
    return issues
  })
).annotations({ title: "CreateBoxRequest" })
/** Body of create box. @since 0.1.0 @category Models */
export type CreateBoxRequest = typeof CreateBoxRequest.Type

/**
 * Size, memory (GiB) and state disk (GiB) of a create request with the spec's defaults filled in.
 *
 * @since 0.1.0
 * @category Utils
 */
export const resolveResources = (request: CreateBoxRequest) => {
  const size = request.size ?? "m"
  return {
    size,
    vcpus: sizeLimits[size].vcpus,
    memory_limit_gib: request.memory_limit_gib ?? sizeLimits[size].memory.default,
    state_disk_limit_gib: request.state_disk_limit_gib ?? sizeLimits[size].stateDisk.default
  }
}

/**
 * The answer of create box: `box_id`, `status` (`running` is ready, `failed` did not start), `error_message`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const CreateBoxResponse = Schema.Struct({
  box_id: BoxId,
  status: BoxStatus,
  error_message: Schema.optional(Schema.String)
})
/** The answer of create box. @since 0.1.0 @category Models */
export type CreateBoxResponse = typeof CreateBoxResponse.Type

/**
 * A published port of a box: its `guest_port`, `protocol`, public `address` (an https URL for http ports, `host:port`
 * for tcp ports) and, for http ports, the `custom_domains` registered for it (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Listener = Schema.Struct({
  guest_port: GuestPort,
  protocol: Schema.Literal("http", "tcp"),
  address: Schema.String,
  custom_domains: Schema.optional(Schema.Array(Schema.String))
})
/** A published port. @since 0.1.0 @category Models */
export type Listener = typeof Listener.Type

/**
 * Body of the publish operation `POST /boxes/{box_id}/listeners` (shape not shown by the spec; docs/ASSUMPTIONS.md):
 * the `guest_port` (1 to 65535) and its `protocol`, `http` (default) or `tcp`. Same shape as an `ingress_ports` item.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const PublishListenerRequest = IngressPort.annotations({ title: "PublishListenerRequest" })
/** Body of the publish operation. @since 0.1.0 @category Models */
export type PublishListenerRequest = typeof PublishListenerRequest.Type

/** The labels of a DNS name (see {@link Hostname}). */
const hostnamePattern = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/

/**
 * A custom domain: a DNS host name of at most 253 characters, two or more dot-separated labels of 1 to 63 letters,
 * digits or dashes (no dash first or last in a label). Decoding lowercases it (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Hostname = Schema.String.pipe(
  Schema.filter((hostname) =>
    (hostname.length <= 253 && hostnamePattern.test(hostname)) ||
    "hostname must be a DNS name: dot-separated labels of letters, digits and dashes, at most 253 characters"
  ),
  Schema.compose(Schema.Lowercase)
).annotations({
  title: "Hostname",
  jsonSchema: { type: "string", maxLength: 253, pattern: hostnamePattern.source }
})

/**
 * Body of `POST /boxes/{box_id}/listeners/{guest_port}/domains` (custom domains are named by the spec without a shape;
 * docs/ASSUMPTIONS.md): the `hostname` to serve the http port on.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const AddDomainRequest = Schema.Struct({ hostname: Hostname })
/** Body of the add-domain operation. @since 0.1.0 @category Models */
export type AddDomainRequest = typeof AddDomainRequest.Type

/**
 * The box record returned by GET /boxes/{box_id}. The spec shows `box_id`, `status`, `error_message`; the other
 * fields are boxkit's choice (docs/ASSUMPTIONS.md). `created_at` is a date-time string; sizes are in GiB.
 *
 * @since 0.1.0
 * @category Schemas
 */
export class Box extends Schema.Class<Box>("Box")({
  box_id: BoxId,
  status: BoxStatus,
  error_message: Schema.optional(Schema.String),
  name: Schema.String,
  app_id: AppId,
  size: BoxSize,
  vcpus: Schema.Int,
  memory_limit_gib: Schema.Int,
  state_disk_limit_gib: Schema.Int,
  max_lifetime_seconds: Schema.NullOr(Schema.Int),
  visibility: Visibility,
  egress_policy: Schema.NullOr(Schema.Union(Schema.String, JsonObject)),
  listeners: Schema.Array(Listener),
  guest_schema_version: Schema.NullOr(Schema.Int),
  created_at: DateTimeString
}) {}

/**
 * The upgrade result: `box_id`, `status`, `applied` (true when nothing is left to apply), and `guest_schema_version`
 * (absent when the upgrade is recorded for the next wake or the box has no recorded version). Source: spec.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const UpgradeResult = Schema.Struct({
  box_id: BoxId,
  status: BoxStatus,
  applied: Schema.Boolean,
  guest_schema_version: Schema.optional(Schema.Int)
})
/** The upgrade result. @since 0.1.0 @category Models */
export type UpgradeResult = typeof UpgradeResult.Type

/**
 * The answer of DELETE /boxes/{box_id}/listeners/{guest_port}: `{ box_id, guest_port }`.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const UnpublishResult = Schema.Struct({ box_id: BoxId, guest_port: GuestPort })
/** The answer of unpublish. @since 0.1.0 @category Models */
export type UnpublishResult = typeof UnpublishResult.Type

/**
 * Body of POST /boxes/{box_id}/exec/{exec_id}/resize: terminal `cols` and `rows` (integers, 1 to 65535; assumption).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const ResizeRequest = Schema.Struct({
  cols: Schema.Int.pipe(Schema.between(1, 65535, { message: () => "cols must be an integer from 1 to 65535" })),
  rows: Schema.Int.pipe(Schema.between(1, 65535, { message: () => "rows must be an integer from 1 to 65535" }))
})
/** Body of the resize operation. @since 0.1.0 @category Models */
export type ResizeRequest = typeof ResizeRequest.Type

/**
 * The largest clipboard write, in bytes: 8 MiB (the spec leaves it open; docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Constants
 */
export const maxClipboardBytes = 8 * 1024 * 1024

/** The empty object `{}` answered by clipboard and resize. @since 0.1.0 @category Schemas */
export const EmptyObject = Json.EmptyObject
