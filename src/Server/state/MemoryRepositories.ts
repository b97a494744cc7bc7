/**
 * The in-memory repositories of the local service (Repositories.ts): the default state store, lost with the
 * process (StateStore.ts). Every method is atomic with respect to the others (JavaScript runs one at a time and
 * these never yield inside).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { createHash } from "node:crypto"
import * as BoxLifecycle from "../../Domain/BoxLifecycle.js"
import {
  type ApiKeyRecord,
  type AppRecord,
  Apps,
  type AuditEntry,
  type BoxRecord,
  Boxes,
  EgressPolicies,
  Identity,
  keyIdOf,
  Logs,
  type OrganizationRecord,
  type PolicyRecord,
  type Repositories,
  responseBytes,
  type ResponseRecord,
  Responses,
  RuntimeVersion,
  type SecretRecord,
  Secrets,
  type StoredBytesUpdate,
  TcpAddresses,
  type UserRecord,
  type WebhookDeliveryEntry
} from "./Repositories.js"

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

/**
 * The in-memory records that a snapshot reads and writes beside the repositories' interfaces (StateSnapshots.ts,
 * MemorySnapshots.ts): users, API keys, secrets with their values and the tcp address pools. One per state; the
 * in-memory Identity, Secrets and TcpAddresses of {@link layerMemory} keep their records here.
 *
 * @since 0.1.0
 */
export class MemoryTables {
  readonly users = new Map<string, UserRecord>()
  /** API keys by the key itself (keys given by a seed or `addKey`). */
  readonly keys = new Map<string, ApiKeyRecord>()
  /** API keys known only by their SHA-256 (hex), as a snapshot gives them. */
  readonly hashedKeys = new Map<string, ApiKeyRecord>()
  /** Secrets by `orgId NUL name`. */
  readonly secrets = new Map<string, SecretRecord>()
  /** How many secrets each organization holds. */
  readonly secretCounts = new Map<string, number>()
  /** Each organization's pool of tcp addresses, oldest first. */
  readonly tcpPools = new Map<string, Array<string>>()
  /** The port of the next fresh tcp address (`tcp.boxes.localhost:PORT`). */
  nextTcpPort = 20000
}

/**
 * The {@link MemoryTables} of the in-memory repositories ({@link layerMemory} provides it), for the in-memory snapshot
 * store (MemorySnapshots.ts).
 *
 * @since 0.1.0
 */
export class MemoryTablesOfState extends Context.Tag("boxkit/server/MemoryTablesOfState")<MemoryTablesOfState, MemoryTables>() {}

/** The SHA-256 of an API key, hex: how a snapshot names a key. */
export const keyHashOf = (key: string): string => createHash("sha256").update(key).digest("hex")

/**
 * The in-memory Identity over `tables`: a key is found by itself, else (when any is known only by its hash) by its
 * hash, and from then on by itself.
 */
const makeIdentity = (tables: MemoryTables): Identity["Type"] => {
  const organizations = mapStore<OrganizationRecord>()
  const { hashedKeys, keys, users } = tables
  return {
    findKey: (key) =>
      Effect.sync(() => {
        const known = keys.get(Redacted.value(key))
        if (known !== undefined || hashedKeys.size === 0) return Option.fromNullable(known)
        const hashed = hashedKeys.get(keyHashOf(Redacted.value(key)))
        // Found by its hash once, the key is then found by itself, as a key given by a seed is.
        if (hashed !== undefined) keys.set(Redacted.value(key), hashed)
        return Option.fromNullable(hashed)
      }),
    organization: organizations.get,
    user: (id) => Effect.sync(() => Option.fromNullable(users.get(id))),
    organizations: organizations.list,
    addOrganization: (record) => organizations.insert(record.id, record),
    addUser: (record) => Effect.sync(() => void users.set(record.id, record)),
    addKey: (key, record) =>
      Effect.sync(() => {
        const full = { ...record, keyId: keyIdOf(key) }
        keys.set(Redacted.value(key), full)
        return full
      })
  }
}

/** In-memory Identity. */
export const identityMemory = Layer.sync(Identity, () => makeIdentity(new MemoryTables()))

/** In-memory Apps. */
export const appsMemory = Layer.sync(Apps, () => {
  const byId = new Map<string, AppRecord>()
  const byName = new Map<string, AppRecord>()
  const counts = new Map<string, number>()
  const nameKey = (orgId: string, name: string) => `${orgId}\u0000${name}`
  /** The app named `name`, made with `make` when missing and the organization holds fewer than `maxApps`. */
  const findOrCreateNow = (orgId: string, name: string, make: () => AppRecord, maxApps: number) => {
    const existing = byName.get(nameKey(orgId, name))
    if (existing !== undefined) return existing
    if ((counts.get(orgId) ?? 0) >= maxApps) return undefined
    const created = make()
    byName.set(nameKey(orgId, name), created)
    byId.set(created.id, created)
    counts.set(orgId, (counts.get(orgId) ?? 0) + 1)
    return created
  }
  return {
    findByName: (orgId, name) => Effect.sync(() => Option.fromNullable(byName.get(nameKey(orgId, name)))),
    get: (orgId, id) =>
      Effect.sync(() => Option.fromNullable(byId.get(id)).pipe(Option.filter((app) => app.orgId === orgId))),
    findOrCreate: (orgId, name, make) => Effect.sync(() => findOrCreateNow(orgId, name, make, Infinity)!),
    findOrCreateWithinQuota: (orgId, name, make, maxApps) =>
      Effect.sync(() => Option.fromNullable(findOrCreateNow(orgId, name, make, maxApps))),
    count: (orgId) => Effect.sync(() => counts.get(orgId) ?? 0),
    list: Effect.sync(() => Array.from(byId.values()))
  }
})

/** The key of a secret in {@link MemoryTables} `secrets`. */
export const secretKey = (orgId: string, name: string): string => `${orgId}\u0000${name}`

/** Writes `record` into `tables` as it is, counting a new secret in its organization. */
export const putSecretRecord = (tables: MemoryTables, record: SecretRecord): void => {
  const key = secretKey(record.orgId, record.name)
  if (!tables.secrets.has(key)) tables.secretCounts.set(record.orgId, (tables.secretCounts.get(record.orgId) ?? 0) + 1)
  tables.secrets.set(key, record)
}

/** The in-memory Secrets over `tables`. */
const makeSecrets = (tables: MemoryTables): Secrets["Type"] => {
  const { secretCounts: counts, secrets: map } = tables
  /** Creates or replaces the secret; a new one only while the organization holds fewer than `maxSecrets`. */
  const putNow = (orgId: string, name: string, value: Redacted.Redacted<string>, now: string, maxSecrets: number) => {
    const existing = map.get(secretKey(orgId, name))
    if (existing === undefined && (counts.get(orgId) ?? 0) >= maxSecrets) return undefined
    const record: SecretRecord = { orgId, name, value, createdAt: existing?.createdAt ?? now, updatedAt: now }
    putSecretRecord(tables, record)
    return record
  }
  return {
    get: (orgId, name) => Effect.sync(() => Option.fromNullable(map.get(secretKey(orgId, name)))),
    put: (orgId, name, value, now) => Effect.sync(() => putNow(orgId, name, value, now, Infinity)!),
    putWithinQuota: (orgId, name, value, now, maxSecrets) =>
      Effect.sync(() => Option.fromNullable(putNow(orgId, name, value, now, maxSecrets))),
    count: (orgId) => Effect.sync(() => counts.get(orgId) ?? 0)
  }
}

/** In-memory Secrets. */
export const secretsMemory = Layer.sync(Secrets, () => makeSecrets(new MemoryTables()))

/** In-memory EgressPolicies. */
export const egressPoliciesMemory = Layer.sync(EgressPolicies, () => {
  const store = mapStore<PolicyRecord>()
  const counts = new Map<string, number>()
  const insertNow = (record: PolicyRecord) => {
    const replaced = store.map.get(record.id)
    if (replaced !== undefined) counts.set(replaced.orgId, (counts.get(replaced.orgId) ?? 0) - 1)
    store.map.set(record.id, record)
    counts.set(record.orgId, (counts.get(record.orgId) ?? 0) + 1)
  }
  return {
    get: (orgId, id) => Effect.map(store.get(id), Option.filter((policy) => policy.orgId === orgId)),
    insert: (record) => Effect.sync(() => insertNow(record)),
    insertWithinQuota: (record, maxPolicies) =>
      Effect.sync(() => {
        if (!store.map.has(record.id) && (counts.get(record.orgId) ?? 0) >= maxPolicies) return false
        insertNow(record)
        return true
      }),
    count: (orgId) => Effect.sync(() => counts.get(orgId) ?? 0),
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

/**
 * What each organization stores, shared by the in-memory Boxes (boxes not terminated, clipboard bytes), Responses
 * (response bytes) and idempotency keys (remembered answer bytes, Idempotency.ts `layerMemory`) of one state, so that
 * each checks the stored-bytes quota against all three in the step that writes.
 *
 * @since 0.1.0
 */
export class StoredUsage {
  readonly boxes = new Map<string, { activeBoxes: number; clipboardBytes: number }>()
  readonly responseBytes = new Map<string, number>()
  /** The body bytes of the idempotent answers remembered for each organization's API keys. */
  readonly answerBytes = new Map<string, number>()
  /** The bytes organization `orgId` stores: clipboards, response records and remembered idempotent answers. */
  storedBytes(orgId: string): number {
    return (this.boxes.get(orgId)?.clipboardBytes ?? 0) + (this.responseBytes.get(orgId) ?? 0) +
      (this.answerBytes.get(orgId) ?? 0)
  }
  /** Adds `delta` bytes (negative: gives them back) to the remembered answers of organization `orgId`. */
  addAnswerBytes(orgId: string, delta: number): void {
    const next = (this.answerBytes.get(orgId) ?? 0) + delta
    if (next === 0) this.answerBytes.delete(orgId)
    else this.answerBytes.set(orgId, next)
  }
}

/**
 * The {@link StoredUsage} of the in-memory repositories ({@link layerMemory} provides it), for the in-memory
 * idempotency store to count remembered answers in the organization's stored bytes.
 *
 * @since 0.1.0
 */
export class MemoryStoredUsage extends Context.Tag("boxkit/server/MemoryStoredUsage")<MemoryStoredUsage, StoredUsage>() {}

/**
 * In-memory Boxes, with an index of the boxes that have a lifetime (id to deadline, Unix ms) and each organization's
 * usage kept as boxes change.
 */
export const boxesMemory = Layer.sync(Boxes, () => makeBoxes(new StoredUsage()))

const makeBoxes = (shared: StoredUsage): Boxes["Type"] => {
  const store = mapStore<BoxRecord>()
  const deadlines = new Map<string, number>()
  const usages = shared.boxes
  const index = (record: BoxRecord) => {
    const deadline = BoxLifecycle.lifetimeDeadline(record)
    if (deadline === null) deadlines.delete(record.id)
    else deadlines.set(record.id, deadline)
  }
  /** Adds `sign` times what `record` holds to its organization's usage. */
  const count = (record: BoxRecord, sign: 1 | -1) => {
    let usage = usages.get(record.orgId)
    if (usage === undefined) usages.set(record.orgId, usage = { activeBoxes: 0, clipboardBytes: 0 })
    if (BoxLifecycle.countsTowardBoxesQuota(record.status)) usage.activeBoxes += sign
    usage.clipboardBytes += sign * (record.clipboard?.bytes.byteLength ?? 0)
  }
  const insertNow = (record: BoxRecord) => {
    store.map.set(record.id, record)
    index(record)
    count(record, 1)
  }
  /** Applies `f` to box `id` now; undefined when it does not exist. */
  const updateNow = (id: string, f: (record: BoxRecord) => BoxRecord): BoxRecord | undefined => {
    const current = store.map.get(id)
    if (current === undefined) return undefined
    const next = f(current)
    store.map.set(id, next)
    if (next.status !== current.status || next.maxLifetimeSeconds !== current.maxLifetimeSeconds) index(next)
    if (next.status !== current.status || next.clipboard !== current.clipboard) {
      count(current, -1)
      count(next, 1)
    }
    return next
  }
  return {
    get: store.get,
    insert: (record) => Effect.sync(() => insertNow(record)),
    insertWithinQuota: (record, maxActiveBoxes) =>
      Effect.sync(() => {
        if ((usages.get(record.orgId)?.activeBoxes ?? 0) >= maxActiveBoxes) return false
        insertNow(record)
        return true
      }),
    update: (id, f) => Effect.sync(() => Option.fromNullable(updateNow(id, f))),
    updateWithinStoredBytes: (id, f, maxStoredBytes) =>
      Effect.sync((): StoredBytesUpdate<BoxRecord> => {
        const current = store.map.get(id)
        if (current === undefined) return { _tag: "Missing" }
        const next = f(current)
        const replacing = current.clipboard?.bytes.byteLength ?? 0
        const adding = next.clipboard?.bytes.byteLength ?? 0
        const others = shared.storedBytes(current.orgId) - replacing
        if (adding > replacing && others + adding > maxStoredBytes) return { _tag: "Refused", storedBytes: others, adding }
        return { _tag: "Written", record: updateNow(id, () => next)! }
      }),
    updateAll: (ids, f) =>
      Effect.sync(() => {
        for (const id of ids) updateNow(id, f)
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
}

/** In-memory RuntimeVersion. */
export const runtimeVersionMemory = Layer.sync(RuntimeVersion, () => {
  let version = Option.none<number>()
  return {
    get: Effect.sync(() => version),
    set: (next) => Effect.sync(() => void (version = Option.some(next)))
  }
})

/** The in-memory TcpAddresses over `tables`. */
const makeTcpAddresses = (tables: MemoryTables): TcpAddresses["Type"] => {
  const pools = tables.tcpPools
  return {
    take: (orgId) =>
      Effect.sync(() => {
        const pool = pools.get(orgId)
        return pool !== undefined && pool.length > 0 ? pool.shift()! : `tcp.boxes.localhost:${tables.nextTcpPort++}`
      }),
    release: (orgId, address) =>
      Effect.sync(() => {
        const pool = pools.get(orgId) ?? []
        pool.push(address)
        pools.set(orgId, pool)
      }),
    pool: (orgId) => Effect.sync(() => [...(pools.get(orgId) ?? [])])
  }
}

/** In-memory TcpAddresses. */
export const tcpAddressesMemory = Layer.sync(TcpAddresses, () => makeTcpAddresses(new MemoryTables()))

/** In-memory Responses, with each organization's stored bytes kept as records change. */
export const responsesMemory = Layer.sync(Responses, () => makeResponses(new StoredUsage()))

const makeResponses = (shared: StoredUsage): Responses["Type"] => {
  const store = mapStore<ResponseRecord>()
  const sizes = new Map<string, number>()
  const bytesByOrg = shared.responseBytes
  /** Counts `record` in (`sign` 1; its size measured unless `measured` is given) or out (-1) of its organization's bytes. */
  const account = (record: ResponseRecord | undefined, sign: 1 | -1, measured?: number) => {
    if (record === undefined) return
    const size = sign === 1 ? (measured ?? responseBytes(record)) : (sizes.get(record.id) ?? 0)
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
    insertWithinStoredBytes: (record, maxStoredBytes) =>
      Effect.sync((): StoredBytesUpdate<ResponseRecord> => {
        const replaced = store.map.get(record.id)
        const others = shared.storedBytes(record.orgId) - (replaced === undefined ? 0 : (sizes.get(record.id) ?? 0))
        const adding = responseBytes(record)
        if (others + adding > maxStoredBytes) return { _tag: "Refused", storedBytes: others, adding }
        account(replaced, -1)
        store.map.set(record.id, record)
        account(record, 1, adding)
        return { _tag: "Written", record }
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
}

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

/**
 * Every repository, in memory, what each organization stores ({@link MemoryStoredUsage}): Boxes, Responses and
 * the in-memory idempotency store given it share it (the stored-bytes quota is checked against all in the step that
 * writes), and the records a snapshot reads beside the repositories ({@link MemoryTablesOfState}).
 */
export const layerMemory: Layer.Layer<Repositories | MemoryStoredUsage | MemoryTablesOfState> = Layer.suspend(() => {
  const shared = new StoredUsage()
  const tables = new MemoryTables()
  return Layer.mergeAll(
    Layer.succeed(MemoryStoredUsage, shared),
    Layer.succeed(MemoryTablesOfState, tables),
    Layer.sync(Identity, () => makeIdentity(tables)),
    appsMemory,
    Layer.sync(Secrets, () => makeSecrets(tables)),
    egressPoliciesMemory,
    Layer.sync(Boxes, () => makeBoxes(shared)),
    runtimeVersionMemory,
    Layer.sync(TcpAddresses, () => makeTcpAddresses(tables)),
    Layer.sync(Responses, () => makeResponses(shared)),
    logsMemory
  )
})
