/**
 * The local service's state, behind repository services. Handlers only see these interfaces; the in-memory
 * implementations (MemoryRepositories.ts) are the default, and a durable store (sql/) provides other layers for the
 * same tags. Every method is atomic with respect to the others. A method fails with `StoreError` (StoreError.ts) when
 * the database behind a durable store fails; the in-memory repositories never fail.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option, Redacted } from "effect"
import { createHash } from "node:crypto"
import type { ImageSpec, Listener } from "../../Domain/Box.js"
import type { PolicyDocument } from "../../Domain/EgressPolicy.js"
import type { ModelResponse } from "../../Domain/ModelResponse.js"
import type { StoreError } from "./StoreError.js"

/** An organization: `credits` false answers 402; `createdAtMillis` (Unix ms) decides the new-organization cap. */
export interface OrganizationRecord {
  readonly id: string
  readonly credits: boolean
  readonly createdAtMillis: number
}

/** A user of an organization. */
export interface UserRecord {
  readonly id: string
  readonly orgId: string
  readonly admin: boolean
}

/**
 * An API key: `keyId` is a SHA-256 prefix of the key (never the key itself); `orgId` null means not
 * organization-scoped; `userId` set means user-scoped.
 */
export interface ApiKeyRecord {
  readonly keyId: string
  readonly orgId: string | null
  readonly userId: string | null
}

/** Organizations, users and API keys. */
export class Identity extends Context.Tag("boxkit/server/Identity")<Identity, {
  /** The record of an API key, found by the key itself. */
  readonly findKey: (key: Redacted.Redacted<string>) => Effect.Effect<Option.Option<ApiKeyRecord>, StoreError>
  readonly organization: (id: string) => Effect.Effect<Option.Option<OrganizationRecord>, StoreError>
  readonly user: (id: string) => Effect.Effect<Option.Option<UserRecord>, StoreError>
  readonly organizations: Effect.Effect<ReadonlyArray<OrganizationRecord>, StoreError>
  readonly addOrganization: (record: OrganizationRecord) => Effect.Effect<void, StoreError>
  readonly addUser: (record: UserRecord) => Effect.Effect<void, StoreError>
  readonly addKey: (
    key: Redacted.Redacted<string>,
    record: Omit<ApiKeyRecord, "keyId">
  ) => Effect.Effect<ApiKeyRecord, StoreError>
}>() {}

/** The non-reversible id of an API key: the first 16 hex digits of its SHA-256. */
export const keyIdOf = (key: Redacted.Redacted<string>): string =>
  Array.from(new Uint8Array(sha256(Redacted.value(key)))).slice(0, 8).map((byte) => byte.toString(16).padStart(2, "0"))
    .join("")

const sha256 = (text: string): Buffer => createHash("sha256").update(text).digest()

/** An app: `createdAt` in Unix seconds. */
export interface AppRecord {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly createdAt: number
}

/** Apps, one per name per organization. */
export class Apps extends Context.Tag("boxkit/server/Apps")<Apps, {
  readonly findByName: (orgId: string, name: string) => Effect.Effect<Option.Option<AppRecord>, StoreError>
  readonly get: (orgId: string, id: string) => Effect.Effect<Option.Option<AppRecord>, StoreError>
  /** Returns the app with this name, creating it with `make` when missing: one app per name, whatever the race. */
  readonly findOrCreate: (orgId: string, name: string, make: () => AppRecord) => Effect.Effect<AppRecord, StoreError>
  /**
   * As `findOrCreate`, but a new app is made only while the organization holds fewer than `maxApps` apps; the count
   * and the insert are one step (one statement in SQL, with the organization's usage row locked in PostgreSQL).
   * None when refused (nothing written); an app that exists is always found. Source: docs/ASSUMPTIONS.md "Quotas".
   */
  readonly findOrCreateWithinQuota: (
    orgId: string,
    name: string,
    make: () => AppRecord,
    maxApps: number
  ) => Effect.Effect<Option.Option<AppRecord>, StoreError>
  /** How many apps organization `orgId` holds (Quotas.ts). */
  readonly count: (orgId: string) => Effect.Effect<number, StoreError>
  readonly list: Effect.Effect<ReadonlyArray<AppRecord>, StoreError>
}>() {}

/** A secret: the value is `Redacted` and never leaves the service. Dates are ISO 8601 strings. */
export interface SecretRecord {
  readonly orgId: string
  readonly name: string
  readonly value: Redacted.Redacted<string>
  readonly createdAt: string
  readonly updatedAt: string
}

/** Secrets by organization and name. */
export class Secrets extends Context.Tag("boxkit/server/Secrets")<Secrets, {
  readonly get: (orgId: string, name: string) => Effect.Effect<Option.Option<SecretRecord>, StoreError>
  /** Creates the secret or replaces its value (keeping `createdAt`). */
  readonly put: (
    orgId: string,
    name: string,
    value: Redacted.Redacted<string>,
    now: string
  ) => Effect.Effect<SecretRecord, StoreError>
  /**
   * As `put`, but a new secret is created only while the organization holds fewer than `maxSecrets` secrets (the
   * count and the insert one step); replacing the value of a secret that exists is never refused. None when refused
   * (nothing written). Source: docs/ASSUMPTIONS.md "Quotas".
   */
  readonly putWithinQuota: (
    orgId: string,
    name: string,
    value: Redacted.Redacted<string>,
    now: string,
    maxSecrets: number
  ) => Effect.Effect<Option.Option<SecretRecord>, StoreError>
  /** How many secrets organization `orgId` holds (Quotas.ts). */
  readonly count: (orgId: string) => Effect.Effect<number, StoreError>
}>() {}

/** A saved egress policy with its normalized document. */
export interface PolicyRecord {
  readonly id: string
  readonly orgId: string
  readonly name: string
  readonly document: PolicyDocument
  readonly createdAt: string
  readonly updatedAt: string
}

/** Egress policies by id. */
export class EgressPolicies extends Context.Tag("boxkit/server/EgressPolicies")<EgressPolicies, {
  readonly get: (orgId: string, id: string) => Effect.Effect<Option.Option<PolicyRecord>, StoreError>
  readonly insert: (record: PolicyRecord) => Effect.Effect<void, StoreError>
  /**
   * Inserts `record` (a new policy) unless its organization already holds `maxPolicies` policies; the count and the
   * insert are one step. True when inserted; false when refused (nothing written). Source: docs/ASSUMPTIONS.md
   * "Quotas".
   */
  readonly insertWithinQuota: (record: PolicyRecord, maxPolicies: number) => Effect.Effect<boolean, StoreError>
  /** How many saved egress policies organization `orgId` holds (Quotas.ts). */
  readonly count: (orgId: string) => Effect.Effect<number, StoreError>
  readonly update: (
    orgId: string,
    id: string,
    f: (record: PolicyRecord) => PolicyRecord
  ) => Effect.Effect<Option.Option<PolicyRecord>, StoreError>
  readonly list: Effect.Effect<ReadonlyArray<PolicyRecord>, StoreError>
}>() {}

/** A published port with its address; `customDomains` are the hostnames registered for an http port. */
export interface ListenerRecord extends Listener {
  readonly customDomains: ReadonlyArray<string>
}

/**
 * A box of the simulated runtime. Times are Unix milliseconds; `guestSchemaVersion` is the runtime version the box
 * runs (null before its first boot); `pendingUpgrade` is an upgrade recorded for the next wake.
 */
export interface BoxRecord {
  readonly id: string
  readonly orgId: string
  readonly creatorKeyId: string
  readonly creatorUserId: string | null
  readonly name: string
  readonly appId: string
  readonly image: ImageSpec
  readonly size: "s" | "m" | "l"
  readonly vcpus: number
  readonly memoryLimitGib: number
  readonly stateDiskLimitGib: number
  readonly maxLifetimeSeconds: number | null
  readonly visibility: "org" | "private"
  readonly egressPolicy: string | PolicyDocument | null
  readonly listeners: ReadonlyArray<ListenerRecord>
  readonly status: string
  readonly errorMessage: string | undefined
  readonly guestSchemaVersion: number | null
  readonly pendingUpgrade: boolean
  readonly createdAtMillis: number
  readonly persistent: boolean
  readonly hasClipboard: boolean
  readonly clipboard: { readonly mediaType: string; readonly bytes: Uint8Array } | null
  readonly terminalSizes: Readonly<Record<string, { readonly cols: number; readonly rows: number }>>
  readonly bootCount: number
}

/** The listeners of a box that has none, shared by every such record (records are immutable). */
export const noListeners: ReadonlyArray<ListenerRecord> = Object.freeze([])

/** The terminal sizes of a box without any, shared by every such record. */
export const noTerminalSizes: BoxRecord["terminalSizes"] = Object.freeze({})

/** Boxes by id. */
export class Boxes extends Context.Tag("boxkit/server/Boxes")<Boxes, {
  readonly get: (id: string) => Effect.Effect<Option.Option<BoxRecord>, StoreError>
  readonly insert: (record: BoxRecord) => Effect.Effect<void, StoreError>
  /**
   * Inserts `record` (a new box: not terminated, no clipboard) unless its organization already holds
   * `maxActiveBoxes` boxes that are not terminated; the count and the insert are one step (one statement in SQL).
   * True when inserted; false when refused, and then nothing is written. Source: docs/ASSUMPTIONS.md "Quotas".
   */
  readonly insertWithinQuota: (record: BoxRecord, maxActiveBoxes: number) => Effect.Effect<boolean, StoreError>
  /** Applies `f` atomically; None when the box does not exist. */
  readonly update: (
    id: string,
    f: (record: BoxRecord) => BoxRecord
  ) => Effect.Effect<Option.Option<BoxRecord>, StoreError>
  /**
   * Applies `f` atomically, as `update`, unless `f` grows the box's clipboard and the organization's stored bytes
   * (its clipboards and response records) would then pass `maxStoredBytes`: the read of what is stored and the write
   * are one step (one transaction; in PostgreSQL with the organization's usage row locked, so that writes of one
   * organization on any instance take turns). A write that does not grow the clipboard is never refused. Source:
   * docs/ASSUMPTIONS.md "Quotas".
   */
  readonly updateWithinStoredBytes: (
    id: string,
    f: (record: BoxRecord) => BoxRecord,
    maxStoredBytes: number
  ) => Effect.Effect<StoredBytesUpdate<BoxRecord>, StoreError>
  /**
   * Applies `f` to each of the boxes `ids` that exist, all of them atomically (one unit of work: the boots due
   * together, BoxRuntime.ts), once per box however often its id is listed; ids of boxes that do not exist are
   * skipped. `f` must have no effect of its own: a store may apply it to a record it holds, find the stored one
   * changed, and apply it again to that (SqlBoxes.ts); only the result for the stored record is written.
   */
  readonly updateAll: (ids: ReadonlyArray<string>, f: (record: BoxRecord) => BoxRecord) => Effect.Effect<void, StoreError>
  readonly list: Effect.Effect<ReadonlyArray<BoxRecord>, StoreError>
  /**
   * The boxes not terminated whose `max_lifetime_seconds` has elapsed at `nowMillis` (Unix ms). Only boxes with a
   * lifetime are looked at, so the periodic lifetime check costs nothing for boxes without one.
   */
  readonly expired: (nowMillis: number) => Effect.Effect<ReadonlyArray<BoxRecord>, StoreError>
  /**
   * The boxes still `creating` that were created before `createdBeforeMillis` (Unix ms): boots a restart, or an
   * instance that died, left unfinished (BoxRuntime.ts boots them).
   */
  readonly creating: (createdBeforeMillis: number) => Effect.Effect<ReadonlyArray<BoxRecord>, StoreError>
  /** True when a box of organization `orgId` has `hostname` among the custom domains of one of its listeners. */
  readonly hasCustomDomain: (orgId: string, hostname: string) => Effect.Effect<boolean, StoreError>
  /** What organization `orgId`'s boxes hold: boxes not terminated, and the bytes on their clipboards. */
  readonly usage: (orgId: string) => Effect.Effect<BoxUsage, StoreError>
}>() {}

/**
 * The outcome of a write checked against the stored-bytes quota: `Missing` (no such record), `Written` (with the
 * record as written), or `Refused` with `storedBytes`, what the organization stores besides the bytes the write would
 * replace, and `adding`, the bytes the write would add (nothing was written).
 */
export type StoredBytesUpdate<A> =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Written"; readonly record: A }
  | { readonly _tag: "Refused"; readonly storedBytes: number; readonly adding: number }

/** What an organization's boxes hold (Quotas.ts). */
export interface BoxUsage {
  readonly activeBoxes: number
  readonly clipboardBytes: number
}

/**
 * The runtime version (`guest_schema_version`) new boots use, when it was raised (`POST /_local/runtime`); None
 * until then (the service's `initialGuestSchemaVersion` applies).
 */
export class RuntimeVersion extends Context.Tag("boxkit/server/RuntimeVersion")<RuntimeVersion, {
  readonly get: Effect.Effect<Option.Option<number>, StoreError>
  readonly set: (version: number) => Effect.Effect<void, StoreError>
}>() {}

/** Tcp addresses kept by an organization after unpublish, for reuse by its other boxes (spec: listener rule 3). */
export class TcpAddresses extends Context.Tag("boxkit/server/TcpAddresses")<TcpAddresses, {
  /**
   * An address of the organization's pool, or a fresh one (`tcp.boxes.localhost:PORT`, ports from 20000, counted
   * per service: two services in one process never share a counter).
   */
  readonly take: (orgId: string) => Effect.Effect<string, StoreError>
  readonly release: (orgId: string, address: string) => Effect.Effect<void, StoreError>
  readonly pool: (orgId: string) => Effect.Effect<ReadonlyArray<string>, StoreError>
}>() {}

/**
 * A model response: the object as the API returns it, plus who owns it, its webhook settings and the retention
 * clock (`firstDeliveredAtMillis`: the first successful delivery, by a GET of the finished result or a webhook).
 */
export interface ResponseRecord {
  readonly id: string
  readonly orgId: string
  readonly keyId: string
  readonly object: ModelResponse
  readonly webhookUrl: string | null
  readonly webhookToken: Redacted.Redacted<string> | null
  readonly firstDeliveredAtMillis: number | null
}

/** Model responses by id. */
export class Responses extends Context.Tag("boxkit/server/Responses")<Responses, {
  readonly get: (id: string) => Effect.Effect<Option.Option<ResponseRecord>, StoreError>
  readonly insert: (record: ResponseRecord) => Effect.Effect<void, StoreError>
  /**
   * Inserts `record` (a new response) unless the organization's stored bytes (clipboards and response records) plus
   * the record's own ({@link responseBytes}) would pass `maxStoredBytes`; the read of what is stored and the insert
   * are one step (one transaction, with the organization's usage row locked in PostgreSQL). `Written` when inserted,
   * `Refused` otherwise (nothing written). Source: docs/ASSUMPTIONS.md "Quotas".
   */
  readonly insertWithinStoredBytes: (
    record: ResponseRecord,
    maxStoredBytes: number
  ) => Effect.Effect<StoredBytesUpdate<ResponseRecord>, StoreError>
  readonly update: (id: string, f: (record: ResponseRecord) => ResponseRecord) => Effect.Effect<Option.Option<ResponseRecord>, StoreError>
  readonly remove: (id: string) => Effect.Effect<void, StoreError>
  readonly list: Effect.Effect<ReadonlyArray<ResponseRecord>, StoreError>
  /** The bytes organization `orgId`'s response records take, as JSON text (Quotas.ts). */
  readonly storedBytes: (orgId: string) => Effect.Effect<number, StoreError>
}>() {}

/** The JSON text size of inputs already measured (an input is shared by every version of its record). */
const inputSizes = new WeakMap<object, number>()

/** The size of a response's input as JSON text, in bytes: measured once per input. */
const inputBytes = (input: unknown): number => {
  if (typeof input === "string") return Buffer.byteLength(input, "utf8") + 2
  if (typeof input !== "object" || input === null) return 0
  const known = inputSizes.get(input)
  if (known !== undefined) return known
  const size = Buffer.byteLength(JSON.stringify(input), "utf8")
  inputSizes.set(input, size)
  return size
}

/**
 * The size of a response record as JSON text (its object: input, output, metadata), in bytes; the input, by far the
 * largest part, is measured once however often the record changes.
 */
export const responseBytes = (record: ResponseRecord): number => {
  const { input, ...rest } = record.object as unknown as { readonly input: unknown }
  return inputBytes(input) + Buffer.byteLength(JSON.stringify(rest), "utf8")
}

/** One use of the owner override, with its reason (spec: Authentication 7: "goes into the organization's audit log"). */
export interface AuditEntry {
  readonly at: string
  readonly org_id: string
  readonly user_id: string | null
  readonly box_id: string
  readonly operation: string
  readonly reason: string
}

/** One webhook delivery attempt: its round (1-based), attempt in the round, HTTP status or error, and time. */
export interface WebhookDeliveryEntry {
  readonly response_id: string
  readonly url: string
  readonly round: number
  readonly attempt: number
  readonly status: number | null
  readonly error: string | null
  readonly ok: boolean
  readonly at: string
}

/** Append-only logs: the audit log and the webhook delivery log. */
export class Logs extends Context.Tag("boxkit/server/Logs")<Logs, {
  readonly audit: (entry: AuditEntry) => Effect.Effect<void, StoreError>
  readonly auditLog: Effect.Effect<ReadonlyArray<AuditEntry>, StoreError>
  readonly delivery: (entry: WebhookDeliveryEntry) => Effect.Effect<void, StoreError>
  readonly deliveries: Effect.Effect<ReadonlyArray<WebhookDeliveryEntry>, StoreError>
  /** Forgets the delivery log entries written before `beforeMillis` (Unix ms): the log is kept as long as results. */
  readonly pruneDeliveries: (beforeMillis: number) => Effect.Effect<void, StoreError>
}>() {}

/** Every repository service of the local service. */
export type Repositories =
  | Identity
  | Apps
  | Secrets
  | EgressPolicies
  | Boxes
  | RuntimeVersion
  | TcpAddresses
  | Responses
  | Logs
