/**
 * A snapshot of the local service's whole state as one JSON document (`"version": 1`): organizations, users, API keys
 * (by hash: the keys themselves are never stored), apps, secrets (their values only when asked for), egress policies,
 * boxes with their listeners, model responses, the remembered idempotent answers, the runtime version and the tcp
 * address pools. `GET /_local/snapshot` answers it, `POST /_local/snapshot` adds it to a running service, and
 * `boxkit serve --seed FILE` starts a new service on it (the same ids answer, and a replay of an idempotent create made
 * before the snapshot is answered from it).
 *
 * Times are RFC 3339 strings unless the member says otherwise; bytes (clipboards, remembered answer bodies) are
 * base64. Unknown members are errors, reported with their path (`boxes[0].status: missing`).
 *
 * Source: docs/ASSUMPTIONS.md "Snapshots (local service)".
 *
 * @since 0.1.0
 */
import { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import { ImageSpec, Listener } from "../../Domain/Box.js"
import { PolicyDocument } from "../../Domain/EgressPolicy.js"
import { ModelResponse } from "../../Domain/ModelResponse.js"
import * as ParseIssues from "../../ParseIssues.js"
import * as Seed from "./Seed.js"

/** The snapshot format this module reads and writes. @since 0.1.0 @category Constants */
export const version = 1

/** An RFC 3339 date-time (`2026-01-01T00:00:00.000Z`). */
const DateTime = Schema.String.pipe(
  Schema.filter((text) => !Number.isNaN(Date.parse(text)) || "expected an RFC 3339 date-time")
)

/**
 * An organization (Seed.ts `SeedOrganization`, every member required): `credits: false` answers 402; `created_at`
 * decides whether it is new.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotOrganization = Schema.Struct({
  ...Seed.SeedOrganization.fields,
  credits: Schema.Boolean,
  created_at: DateTime
}).annotations({ identifier: "organization" })

/** A user of an organization (Seed.ts `SeedUser`, `admin` required). @since 0.1.0 @category Schemas */
export const SnapshotUser = Schema.Struct({ ...Seed.SeedUser.fields, admin: Schema.Boolean })
  .annotations({ identifier: "user" })

/**
 * An API key by its SHA-256 (`key_hash`, 64 hex digits; the key itself never leaves the service) and its id
 * (`key_id`, the first 16 hex digits of the hash: the owner of responses and idempotency keys). `org_id` null: not
 * organization-scoped; `user_id` set: user-scoped.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotApiKey = Schema.Struct({
  key_hash: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)),
  key_id: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{16}$/)),
  org_id: Schema.NullOr(Schema.String),
  user_id: Schema.NullOr(Schema.String)
}).annotations({ identifier: "api key" })

/** An app (Seed.ts `SeedApp`) and its `created_at` in Unix seconds. @since 0.1.0 @category Schemas */
export const SnapshotApp = Schema.Struct({ ...Seed.SeedApp.fields, created_at: Schema.Int })
  .annotations({ identifier: "app" })

/**
 * A secret (Seed.ts `SeedSecret`); `value` only in a snapshot taken with secret values
 * (`GET /_local/snapshot?secret_values=include`). A secret without a value is not restored (the service keeps the
 * value it holds, if any): docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotSecret = Schema.Struct({
  ...Seed.SeedSecret.fields,
  value: Schema.optional(Schema.String),
  created_at: DateTime,
  updated_at: DateTime
}).annotations({ identifier: "secret" })

/** A saved egress policy (Seed.ts `SeedEgressPolicy`) with its normalized document. @since 0.1.0 @category Schemas */
export const SnapshotEgressPolicy = Schema.Struct({
  ...Seed.SeedEgressPolicy.fields,
  document: PolicyDocument,
  created_at: DateTime,
  updated_at: DateTime
}).annotations({ identifier: "egress policy" })

/** A listener of a box: the published port, its address and custom domains. @since 0.1.0 @category Schemas */
export const SnapshotListener = Schema.Struct({
  ...Listener.fields,
  custom_domains: Schema.Array(Schema.String)
}).annotations({ identifier: "listener" })

/**
 * A box of the simulated runtime as the service keeps it: `created_at` RFC 3339; `clipboard` bytes base64;
 * `terminal_sizes` by terminal id; `guest_schema_version` null before its first boot.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotBox = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  org_id: Schema.String,
  creator_key_id: Schema.String,
  creator_user_id: Schema.NullOr(Schema.String),
  name: Schema.String,
  app_id: Schema.String,
  image: ImageSpec,
  size: Schema.Literal("s", "m", "l"),
  vcpus: Schema.Number,
  memory_limit_gib: Schema.Number,
  state_disk_limit_gib: Schema.Number,
  max_lifetime_seconds: Schema.NullOr(Schema.Number),
  visibility: Schema.Literal("org", "private"),
  egress_policy: Schema.NullOr(Schema.Union(Schema.String, PolicyDocument)),
  listeners: Schema.Array(SnapshotListener),
  status: Schema.String,
  error_message: Schema.NullOr(Schema.String),
  guest_schema_version: Schema.NullOr(Schema.Int),
  pending_upgrade: Schema.Boolean,
  created_at: DateTime,
  persistent: Schema.Boolean,
  has_clipboard: Schema.Boolean,
  clipboard: Schema.NullOr(Schema.Struct({ media_type: Schema.String, bytes: Schema.Uint8ArrayFromBase64 })),
  terminal_sizes: Schema.Record({ key: Schema.String, value: Schema.Struct({ cols: Schema.Int, rows: Schema.Int }) }),
  boot_count: Schema.Int
}).annotations({ identifier: "box" })

/**
 * A model response: the object as the API returns it, the API key that made it (`key_id`), its webhook (the
 * `webhook_token` only with secret values) and the retention clock (`first_delivered_at`, null until delivered).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotResponse = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  org_id: Schema.String,
  key_id: Schema.String,
  object: ModelResponse,
  webhook_url: Schema.NullOr(Schema.String),
  webhook_token: Schema.optional(Schema.NullOr(Schema.String)),
  first_delivered_at: Schema.NullOr(DateTime)
}).annotations({ identifier: "response" })

/**
 * A remembered idempotent answer: the `Idempotency-Key` (`key`) of API key `key_id` (its organization `org_id`), the
 * request's fingerprint (SHA-256 of method, path and body, base64), when it expires, and the answer (status, the
 * headers that matter, the body base64).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotIdempotencyKey = Schema.Struct({
  key_id: Schema.String,
  org_id: Schema.NullOr(Schema.String),
  key: Schema.String,
  fingerprint: Schema.String,
  expires_at: DateTime,
  status: Schema.Int,
  headers: Schema.Record({ key: Schema.String, value: Schema.String }),
  body: Schema.Uint8ArrayFromBase64
}).annotations({ identifier: "idempotency key" })

/** A tcp address an organization keeps for reuse after an unpublish. @since 0.1.0 @category Schemas */
export const SnapshotTcpAddress = Schema.Struct({ org_id: Schema.String, address: Schema.String })
  .annotations({ identifier: "tcp address" })

/**
 * The service's clock when the snapshot was taken: `mode` (`real` or `virtual`), `now` (RFC 3339) and `offset_seconds`
 * (how far the virtual clock is ahead of the real one). Optional: filled by the service's clock
 * (docs/ASSUMPTIONS.md "Snapshots (local service)").
 *
 * @since 0.1.0
 * @category Schemas
 */
export const SnapshotClock = Schema.Struct({
  mode: Schema.Literal("real", "virtual"),
  now: DateTime,
  offset_seconds: Schema.Number
}).annotations({ identifier: "clock" })

/**
 * The whole snapshot, `"version": 1`. `taken_at` is when it was read (RFC 3339); `secret_values` says whether the
 * secrets carry their values (and the responses their webhook tokens); `guest_schema_version` is the runtime version
 * new boots use when it was raised (null: the service's own).
 *
 * @since 0.1.0
 * @category Schemas
 */
export const Snapshot = Schema.Struct({
  version: Schema.Literal(version),
  taken_at: DateTime,
  secret_values: Schema.Boolean,
  guest_schema_version: Schema.NullOr(Schema.Int),
  organizations: Schema.Array(SnapshotOrganization),
  users: Schema.Array(SnapshotUser),
  api_keys: Schema.Array(SnapshotApiKey),
  apps: Schema.Array(SnapshotApp),
  secrets: Schema.Array(SnapshotSecret),
  egress_policies: Schema.Array(SnapshotEgressPolicy),
  boxes: Schema.Array(SnapshotBox),
  responses: Schema.Array(SnapshotResponse),
  idempotency_keys: Schema.Array(SnapshotIdempotencyKey),
  tcp_addresses: Schema.Array(SnapshotTcpAddress),
  clock: Schema.optional(SnapshotClock)
}).annotations({ identifier: "snapshot" })
/** A decoded snapshot. @since 0.1.0 @category Models */
export type Snapshot = typeof Snapshot.Type
/** A snapshot as JSON. @since 0.1.0 @category Models */
export type SnapshotJson = typeof Snapshot.Encoded

/**
 * True when a JSON value is meant as a snapshot (an object with a `version` member), not a seed.
 *
 * @since 0.1.0
 * @category Guards
 */
export const isSnapshotJson = (json: unknown): boolean =>
  typeof json === "object" && json !== null && !Array.isArray(json) && "version" in json

/**
 * Decodes a snapshot; unknown members are errors. Fails with `SeedError` naming the file (`path`) and each member that
 * is not valid (`invalid seed file FILE: boxes[0].status: missing`).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decode = (input: unknown, path = "<snapshot>"): Effect.Effect<Snapshot, Seed.SeedError> =>
  Schema.decodeUnknown(Snapshot, { onExcessProperty: "error", errors: "all" })(input).pipe(
    Effect.mapError((error) => {
      const issues = ParseIssues.lines(error, "")
      return new Seed.SeedError({ path, message: `invalid seed file ${path}: ${issues.join("; ")}`, issues })
    })
  )

/** Encodes a snapshot as JSON (bytes base64). @since 0.1.0 @category Constructors */
export const encode = (snapshot: Snapshot): SnapshotJson => Schema.encodeSync(Snapshot)(snapshot)

/**
 * Reads a JSON file that is either a seed (Seed.ts) or a snapshot (an object with `version`): what `boxkit serve
 * --seed FILE` starts on. Fails with `SeedError` when the file cannot be read, is not JSON or does not match its
 * format.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const loadSeedOrSnapshot = (
  path: string
): Effect.Effect<Seed.Seed | Snapshot, Seed.SeedError, FileSystem.FileSystem> =>
  Effect.flatMap(
    Seed.readJson(path),
    (json): Effect.Effect<Seed.Seed | Snapshot, Seed.SeedError> =>
      isSnapshotJson(json) ? decode(json, path) : Seed.decode(json, path)
  )
