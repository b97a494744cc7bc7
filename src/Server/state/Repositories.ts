/**
 * The local service's state, behind repository services. Handlers only see these interfaces; the in-memory
 * implementations here are the default, and a durable store slots in by providing other layers for the same tags.
 *
 * Every method is atomic with respect to the others (JavaScript runs one at a time and these never yield inside).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { createHash } from "node:crypto"
import type { ImageSpec, Listener } from "../../Domain/Box.js"
import type { PolicyDocument } from "../../Domain/EgressPolicy.js"
import type { ModelResponse } from "../../Domain/ModelResponse.js"

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
  readonly findKey: (key: Redacted.Redacted<string>) => Effect.Effect<Option.Option<ApiKeyRecord>>
  readonly organization: (id: string) => Effect.Effect<Option.Option<OrganizationRecord>>
  readonly user: (id: string) => Effect.Effect<Option.Option<UserRecord>>
  readonly organizations: Effect.Effect<ReadonlyArray<OrganizationRecord>>
  readonly addOrganization: (record: OrganizationRecord) => Effect.Effect<void>
  readonly addUser: (record: UserRecord) => Effect.Effect<void>
  readonly addKey: (key: Redacted.Redacted<string>, record: Omit<ApiKeyRecord, "keyId">) => Effect.Effect<ApiKeyRecord>
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
  readonly findByName: (orgId: string, name: string) => Effect.Effect<Option.Option<AppRecord>>
  readonly get: (orgId: string, id: string) => Effect.Effect<Option.Option<AppRecord>>
  /** Returns the app with this name, creating it with `make` when missing: one app per name, whatever the race. */
  readonly findOrCreate: (orgId: string, name: string, make: () => AppRecord) => Effect.Effect<AppRecord>
  readonly list: Effect.Effect<ReadonlyArray<AppRecord>>
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
  readonly get: (orgId: string, name: string) => Effect.Effect<Option.Option<SecretRecord>>
  /** Creates the secret or replaces its value (keeping `createdAt`). */
  readonly put: (orgId: string, name: string, value: Redacted.Redacted<string>, now: string) => Effect.Effect<SecretRecord>
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
  readonly get: (orgId: string, id: string) => Effect.Effect<Option.Option<PolicyRecord>>
  readonly insert: (record: PolicyRecord) => Effect.Effect<void>
  readonly update: (orgId: string, id: string, f: (record: PolicyRecord) => PolicyRecord) => Effect.Effect<Option.Option<PolicyRecord>>
  readonly list: Effect.Effect<ReadonlyArray<PolicyRecord>>
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
  readonly get: (id: string) => Effect.Effect<Option.Option<BoxRecord>>
  readonly insert: (record: BoxRecord) => Effect.Effect<void>
  /** Applies `f` atomically; None when the box does not exist. */
  readonly update: (id: string, f: (record: BoxRecord) => BoxRecord) => Effect.Effect<Option.Option<BoxRecord>>
  readonly list: Effect.Effect<ReadonlyArray<BoxRecord>>
  /**
   * The boxes not terminated whose `max_lifetime_seconds` has elapsed at `nowMillis` (Unix ms). Only boxes with a
   * lifetime are looked at, so the periodic lifetime check costs nothing for boxes without one.
   */
  readonly expired: (nowMillis: number) => Effect.Effect<ReadonlyArray<BoxRecord>>
  /**
   * The boxes still `creating` that were created before `createdBeforeMillis` (Unix ms): boots a restart, or an
   * instance that died, left unfinished (BoxRuntime.ts boots them).
   */
  readonly creating: (createdBeforeMillis: number) => Effect.Effect<ReadonlyArray<BoxRecord>>
  /** True when a box of organization `orgId` has `hostname` among the custom domains of one of its listeners. */
  readonly hasCustomDomain: (orgId: string, hostname: string) => Effect.Effect<boolean>
  /** What organization `orgId`'s boxes hold: boxes not terminated, and the bytes on their clipboards. */
  readonly usage: (orgId: string) => Effect.Effect<BoxUsage>
}>() {}

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
  readonly get: Effect.Effect<Option.Option<number>>
  readonly set: (version: number) => Effect.Effect<void>
}>() {}

/** Tcp addresses kept by an organization after unpublish, for reuse by its other boxes (spec: listener rule 3). */
export class TcpAddresses extends Context.Tag("boxkit/server/TcpAddresses")<TcpAddresses, {
  /**
   * An address of the organization's pool, or a fresh one (`tcp.boxes.localhost:PORT`, ports from 20000, counted
   * per service: two services in one process never share a counter).
   */
  readonly take: (orgId: string) => Effect.Effect<string>
  readonly release: (orgId: string, address: string) => Effect.Effect<void>
  readonly pool: (orgId: string) => Effect.Effect<ReadonlyArray<string>>
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
  readonly get: (id: string) => Effect.Effect<Option.Option<ResponseRecord>>
  readonly insert: (record: ResponseRecord) => Effect.Effect<void>
  readonly update: (id: string, f: (record: ResponseRecord) => ResponseRecord) => Effect.Effect<Option.Option<ResponseRecord>>
  readonly remove: (id: string) => Effect.Effect<void>
  readonly list: Effect.Effect<ReadonlyArray<ResponseRecord>>
  /** The bytes organization `orgId`'s response records take, as JSON text (Quotas.ts). */
  readonly storedBytes: (orgId: string) => Effect.Effect<number>
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
  readonly audit: (entry: AuditEntry) => Effect.Effect<void>
  readonly auditLog: Effect.Effect<ReadonlyArray<AuditEntry>>
  readonly delivery: (entry: WebhookDeliveryEntry) => Effect.Effect<void>
  readonly deliveries: Effect.Effect<ReadonlyArray<WebhookDeliveryEntry>>
  /** Forgets the delivery log entries written before `beforeMillis` (Unix ms): the log is kept as long as results. */
  readonly pruneDeliveries: (beforeMillis: number) => Effect.Effect<void>
}>() {}

const mapStore = <A>() => {
  const map = new Map<string, A>()
  return {
    map,
    get: (id: string) => Effect.sync(() => Option.fromNullable(map.get(id))),
    insert: (id: string, record: A) => Effect.sync(() => void map.set(id, record)),
    update: (id: string, f: (record: A) => A) =>
      Effect.sync(() => {
        const current = map.get(id)
        if (current === undefined) return Option.none<A>()
        const next = f(current)
        map.set(id, next)
        return Option.some(next)
      }),
    list: Effect.sync(() => Array.from(map.values()))
  }
}

/** In-memory Identity. */
export const identityMemory = Layer.sync(Identity, () => {
  const organizations = mapStore<OrganizationRecord>()
  const users = mapStore<UserRecord>()
  const keys = new Map<string, ApiKeyRecord>()
  return {
    findKey: (key) => Effect.sync(() => Option.fromNullable(keys.get(Redacted.value(key)))),
    organization: organizations.get,
    user: users.get,
    organizations: organizations.list,
    addOrganization: (record) => organizations.insert(record.id, record),
    addUser: (record) => users.insert(record.id, record),
    addKey: (key, record) =>
      Effect.sync(() => {
        const full = { ...record, keyId: keyIdOf(key) }
        keys.set(Redacted.value(key), full)
        return full
      })
  }
})

/** In-memory Apps. */
export const appsMemory = Layer.sync(Apps, () => {
  const byId = new Map<string, AppRecord>()
  const byName = new Map<string, AppRecord>()
  const nameKey = (orgId: string, name: string) => `${orgId}\u0000${name}`
  return {
    findByName: (orgId, name) => Effect.sync(() => Option.fromNullable(byName.get(nameKey(orgId, name)))),
    get: (orgId, id) =>
      Effect.sync(() => Option.fromNullable(byId.get(id)).pipe(Option.filter((app) => app.orgId === orgId))),
    findOrCreate: (orgId, name, make) =>
      Effect.sync(() => {
        const existing = byName.get(nameKey(orgId, name))
        if (existing !== undefined) return existing
        const created = make()
        byName.set(nameKey(orgId, name), created)
        byId.set(created.id, created)
        return created
      }),
    list: Effect.sync(() => Array.from(byId.values()))
  }
})

/** In-memory Secrets. */
export const secretsMemory = Layer.sync(Secrets, () => {
  const map = new Map<string, SecretRecord>()
  const key = (orgId: string, name: string) => `${orgId}\u0000${name}`
  return {
    get: (orgId, name) => Effect.sync(() => Option.fromNullable(map.get(key(orgId, name)))),
    put: (orgId, name, value, now) =>
      Effect.sync(() => {
        const existing = map.get(key(orgId, name))
        const record: SecretRecord = { orgId, name, value, createdAt: existing?.createdAt ?? now, updatedAt: now }
        map.set(key(orgId, name), record)
        return record
      })
  }
})

/** In-memory EgressPolicies. */
export const egressPoliciesMemory = Layer.sync(EgressPolicies, () => {
  const store = mapStore<PolicyRecord>()
  return {
    get: (orgId, id) => Effect.map(store.get(id), Option.filter((policy) => policy.orgId === orgId)),
    insert: (record) => store.insert(record.id, record),
    update: (orgId, id, f) =>
      Effect.sync(() => {
        const current = store.map.get(id)
        if (current === undefined || current.orgId !== orgId) return Option.none()
        const next = f(current)
        store.map.set(id, next)
        return Option.some(next)
      }),
    list: store.list
  }
})

const deadlineOf = (record: BoxRecord): number | undefined =>
  record.maxLifetimeSeconds !== null && record.status !== "terminated"
    ? record.createdAtMillis + record.maxLifetimeSeconds * 1000
    : undefined

/**
 * In-memory Boxes, with an index of the boxes that have a lifetime (id to deadline, Unix ms) and each organization's
 * usage kept as boxes change.
 */
export const boxesMemory = Layer.sync(Boxes, () => {
  const store = mapStore<BoxRecord>()
  const deadlines = new Map<string, number>()
  const usages = new Map<string, { activeBoxes: number; clipboardBytes: number }>()
  const index = (record: BoxRecord) => {
    const deadline = deadlineOf(record)
    if (deadline === undefined) deadlines.delete(record.id)
    else deadlines.set(record.id, deadline)
  }
  /** Adds `sign` times what `record` holds to its organization's usage. */
  const count = (record: BoxRecord, sign: 1 | -1) => {
    let usage = usages.get(record.orgId)
    if (usage === undefined) usages.set(record.orgId, usage = { activeBoxes: 0, clipboardBytes: 0 })
    if (record.status !== "terminated") usage.activeBoxes += sign
    usage.clipboardBytes += sign * (record.clipboard?.bytes.byteLength ?? 0)
  }
  return {
    get: store.get,
    insert: (record) =>
      Effect.sync(() => {
        store.map.set(record.id, record)
        index(record)
        count(record, 1)
      }),
    update: (id, f) =>
      Effect.sync(() => {
        const current = store.map.get(id)
        if (current === undefined) return Option.none<BoxRecord>()
        const next = f(current)
        store.map.set(id, next)
        if (next.status !== current.status || next.maxLifetimeSeconds !== current.maxLifetimeSeconds) index(next)
        if (next.status !== current.status || next.clipboard !== current.clipboard) {
          count(current, -1)
          count(next, 1)
        }
        return Option.some(next)
      }),
    usage: (orgId) =>
      Effect.sync(() => {
        const usage = usages.get(orgId)
        return { activeBoxes: usage?.activeBoxes ?? 0, clipboardBytes: usage?.clipboardBytes ?? 0 }
      }),
    list: store.list,
    creating: (createdBeforeMillis) =>
      Effect.sync(() => {
        const found: Array<BoxRecord> = []
        for (const record of store.map.values()) {
          if (record.status === "creating" && record.createdAtMillis < createdBeforeMillis) found.push(record)
        }
        return found
      }),
    hasCustomDomain: (orgId, hostname) =>
      Effect.sync(() => {
        for (const record of store.map.values()) {
          if (record.orgId === orgId && record.listeners.some((entry) => entry.customDomains.includes(hostname))) return true
        }
        return false
      }),
    expired: (nowMillis) =>
      Effect.sync(() => {
        const due: Array<BoxRecord> = []
        for (const [id, deadline] of deadlines) {
          if (nowMillis < deadline) continue
          const record = store.map.get(id)
          if (record !== undefined) due.push(record)
        }
        return due
      })
  }
})

/** In-memory RuntimeVersion. */
export const runtimeVersionMemory = Layer.sync(RuntimeVersion, () => {
  let version = Option.none<number>()
  return {
    get: Effect.sync(() => version),
    set: (next) => Effect.sync(() => void (version = Option.some(next)))
  }
})

/** In-memory TcpAddresses. */
export const tcpAddressesMemory = Layer.sync(TcpAddresses, () => {
  const pools = new Map<string, Array<string>>()
  let nextPort = 20000
  return {
    take: (orgId) =>
      Effect.sync(() => {
        const pool = pools.get(orgId)
        return pool !== undefined && pool.length > 0 ? pool.shift()! : `tcp.boxes.localhost:${nextPort++}`
      }),
    release: (orgId, address) =>
      Effect.sync(() => {
        const pool = pools.get(orgId) ?? []
        pool.push(address)
        pools.set(orgId, pool)
      }),
    pool: (orgId) => Effect.sync(() => [...(pools.get(orgId) ?? [])])
  }
})

/** In-memory Responses, with each organization's stored bytes kept as records change. */
export const responsesMemory = Layer.sync(Responses, () => {
  const store = mapStore<ResponseRecord>()
  const sizes = new Map<string, number>()
  const bytesByOrg = new Map<string, number>()
  const account = (record: ResponseRecord | undefined, sign: 1 | -1) => {
    if (record === undefined) return
    const size = sign === 1 ? responseBytes(record) : (sizes.get(record.id) ?? 0)
    if (sign === 1) sizes.set(record.id, size)
    else sizes.delete(record.id)
    bytesByOrg.set(record.orgId, (bytesByOrg.get(record.orgId) ?? 0) + sign * size)
  }
  return {
    get: store.get,
    insert: (record) =>
      Effect.sync(() => {
        account(store.map.get(record.id), -1)
        store.map.set(record.id, record)
        account(record, 1)
      }),
    update: (id, f) =>
      Effect.sync(() => {
        const current = store.map.get(id)
        if (current === undefined) return Option.none<ResponseRecord>()
        const next = f(current)
        store.map.set(id, next)
        if (next.object !== current.object) {
          account(current, -1)
          account(next, 1)
        }
        return Option.some(next)
      }),
    remove: (id) =>
      Effect.sync(() => {
        account(store.map.get(id), -1)
        store.map.delete(id)
      }),
    list: store.list,
    storedBytes: (orgId) => Effect.sync(() => bytesByOrg.get(orgId) ?? 0)
  }
})

/** In-memory Logs. */
export const logsMemory = Layer.sync(Logs, () => {
  const audit: Array<AuditEntry> = []
  const deliveries: Array<WebhookDeliveryEntry> = []
  return {
    audit: (entry) => Effect.sync(() => void audit.push(entry)),
    auditLog: Effect.sync(() => [...audit]),
    delivery: (entry) => Effect.sync(() => void deliveries.push(entry)),
    deliveries: Effect.sync(() => [...deliveries]),
    pruneDeliveries: (beforeMillis) =>
      Effect.sync(() => {
        // Entries are appended in time order: the old ones are a prefix.
        let count = 0
        while (count < deliveries.length && Date.parse(deliveries[count].at) < beforeMillis) count++
        if (count > 0) deliveries.splice(0, count)
      })
  }
})

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

/** Every repository, in memory. */
export const layerMemory: Layer.Layer<Repositories> = Layer.mergeAll(
  identityMemory,
  appsMemory,
  secretsMemory,
  egressPoliciesMemory,
  boxesMemory,
  runtimeVersionMemory,
  tcpAddressesMemory,
  responsesMemory,
  logsMemory
)
