/**
 * Taking and restoring snapshots of the local service's state (Snapshot.ts). {@link take} reads every repository in
 * one consistent view of the store (`SnapshotStore.consistently`: one read transaction in SQL, one uninterrupted
 * step in memory); {@link restore} writes a snapshot's records in one unit of work, each record under its own id:
 * a record the store already holds is replaced, the others are kept.
 *
 * What the repositories' interfaces do not show (users, API keys by hash, secret values, remembered idempotent
 * answers, tcp address pools) each store gives through {@link SnapshotStore} (MemorySnapshots.ts,
 * sql/SqlSnapshots.ts).
 *
 * Source: docs/ASSUMPTIONS.md "Snapshots (local service)".
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Option, Redacted } from "effect"
import type { RememberedAnswer } from "../pipeline/Idempotency.js"
import * as Repositories from "./Repositories.js"
import type * as Snapshot from "./Snapshot.js"
import type { StoreError } from "./StoreError.js"
import { Transactions } from "./Transactions.js"

/**
 * An API key as a store keeps it: `keyHash`, its whole SHA-256 (hex), and the record the service reads.
 *
 * @since 0.1.0
 * @category Models
 */
export interface StoredApiKey extends Repositories.ApiKeyRecord {
  readonly keyHash: string
}

/**
 * A settled idempotency key: the `Idempotency-Key` (`key`) of API key `keyId` acting for `orgId`, the request's
 * fingerprint, its expiry (Unix ms) and the remembered answer.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RememberedKey {
  readonly keyId: string
  readonly orgId: string | null
  readonly key: string
  readonly fingerprint: string
  readonly expiresAtMillis: number
  readonly answer: RememberedAnswer
}

/** A tcp address in an organization's pool. @since 0.1.0 @category Models */
export interface PooledAddress {
  readonly orgId: string
  readonly address: string
}

/**
 * What a state store gives a snapshot beyond the repositories' interfaces. Reads see the store as `consistently`
 * runs them; writes replace a record of the same id (an API key, a secret) or leave one alone (a remembered key that
 * exists is kept as it is).
 *
 * @since 0.1.0
 * @category Services
 */
export class SnapshotStore extends Context.Tag("boxkit/server/SnapshotStore")<SnapshotStore, {
  /** Runs `effect` so that every read in it sees one state: no write of another request lands in between. */
  readonly consistently: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StoreError, R>
  readonly users: Effect.Effect<ReadonlyArray<Repositories.UserRecord>, StoreError>
  readonly apiKeys: Effect.Effect<ReadonlyArray<StoredApiKey>, StoreError>
  /** Every secret, with its value. */
  readonly secrets: Effect.Effect<ReadonlyArray<Repositories.SecretRecord>, StoreError>
  /** The settled idempotency keys that have not expired at `nowMillis` (Unix ms). */
  readonly rememberedKeys: (nowMillis: number) => Effect.Effect<ReadonlyArray<RememberedKey>, StoreError>
  /** The tcp addresses of every organization's pool, oldest first. */
  readonly tcpAddresses: Effect.Effect<ReadonlyArray<PooledAddress>, StoreError>
  readonly addApiKey: (key: StoredApiKey) => Effect.Effect<void, StoreError>
  /** Writes the secret as it is (value and both dates). */
  readonly restoreSecret: (record: Repositories.SecretRecord) => Effect.Effect<void, StoreError>
  /** Remembers a settled key, unless the API key already has this key. */
  readonly remember: (key: RememberedKey) => Effect.Effect<void, StoreError>
  /**
   * Puts `pooled` into the pools (an address already pooled is kept once) and moves the next fresh tcp port past
   * every port of `inUse` and `pooled`, so that no fresh address repeats one a restored box holds.
   */
  readonly restoreTcpAddresses: (
    pooled: ReadonlyArray<PooledAddress>,
    inUse: ReadonlyArray<string>
  ) => Effect.Effect<void, StoreError>
}>() {}

/**
 * The port of a fresh tcp address (`tcp.boxes.localhost:PORT`, TcpAddresses of Repositories.ts), or undefined for any
 * other address.
 *
 * @since 0.1.0
 * @category Utils
 */
export const tcpPortOf = (address: string): number | undefined => {
  const match = /^tcp\.boxes\.localhost:(\d+)$/.exec(address)
  return match === null ? undefined : Number(match[1])
}

/** Options of {@link take}. @since 0.1.0 @category Models */
export interface TakeOptions {
  /** Include secret values and webhook tokens (default false: left out). */
  readonly secretValues?: boolean | undefined
}

const iso = (millis: number): string => new Date(millis).toISOString()

/** A box record as the snapshot shows it. */
const boxOf = (box: Repositories.BoxRecord): Snapshot.Snapshot["boxes"][number] => ({
  id: box.id,
  org_id: box.orgId,
  creator_key_id: box.creatorKeyId,
  creator_user_id: box.creatorUserId,
  name: box.name,
  app_id: box.appId,
  image: box.image,
  size: box.size,
  vcpus: box.vcpus,
  memory_limit_gib: box.memoryLimitGib,
  state_disk_limit_gib: box.stateDiskLimitGib,
  max_lifetime_seconds: box.maxLifetimeSeconds,
  visibility: box.visibility,
  egress_policy: box.egressPolicy,
  listeners: box.listeners.map((listener) => ({
    guest_port: listener.guest_port,
    protocol: listener.protocol,
    address: listener.address,
    custom_domains: listener.customDomains
  })),
  status: box.status,
  error_message: box.errorMessage ?? null,
  guest_schema_version: box.guestSchemaVersion,
  pending_upgrade: box.pendingUpgrade,
  created_at: iso(box.createdAtMillis),
  persistent: box.persistent,
  has_clipboard: box.hasClipboard,
  clipboard: box.clipboard === null ? null : { media_type: box.clipboard.mediaType, bytes: box.clipboard.bytes },
  terminal_sizes: box.terminalSizes,
  boot_count: box.bootCount
})

/** A snapshot's box as the repositories keep it. */
const boxRecordOf = (box: Snapshot.Snapshot["boxes"][number]): Repositories.BoxRecord => ({
  id: box.id,
  orgId: box.org_id,
  creatorKeyId: box.creator_key_id,
  creatorUserId: box.creator_user_id,
  name: box.name,
  appId: box.app_id,
  image: box.image,
  size: box.size,
  vcpus: box.vcpus,
  memoryLimitGib: box.memory_limit_gib,
  stateDiskLimitGib: box.state_disk_limit_gib,
  maxLifetimeSeconds: box.max_lifetime_seconds,
  visibility: box.visibility,
  egressPolicy: box.egress_policy,
  listeners: box.listeners.length === 0 ? Repositories.noListeners : box.listeners.map((listener) => ({
    guest_port: listener.guest_port,
    protocol: listener.protocol,
    address: listener.address,
    customDomains: listener.custom_domains
  })),
  status: box.status,
  errorMessage: box.error_message ?? undefined,
  guestSchemaVersion: box.guest_schema_version,
  pendingUpgrade: box.pending_upgrade,
  createdAtMillis: Date.parse(box.created_at),
  persistent: box.persistent,
  hasClipboard: box.has_clipboard,
  clipboard: box.clipboard === null ? null : { mediaType: box.clipboard.media_type, bytes: box.clipboard.bytes },
  terminalSizes: Object.keys(box.terminal_sizes).length === 0 ? Repositories.noTerminalSizes : box.terminal_sizes,
  bootCount: box.boot_count
})

/** A response record as the snapshot shows it (its webhook token only with secret values). */
const responseOf = (
  record: Repositories.ResponseRecord,
  secretValues: boolean
): Snapshot.Snapshot["responses"][number] => ({
  id: record.id,
  org_id: record.orgId,
  key_id: record.keyId,
  object: record.object,
  webhook_url: record.webhookUrl,
  ...(secretValues
    ? { webhook_token: record.webhookToken === null ? null : Redacted.value(record.webhookToken) }
    : {}),
  first_delivered_at: record.firstDeliveredAtMillis === null ? null : iso(record.firstDeliveredAtMillis)
})

/** A remembered key as the snapshot shows it. */
const idempotencyKeyOf = (remembered: RememberedKey): Snapshot.Snapshot["idempotency_keys"][number] => ({
  key_id: remembered.keyId,
  org_id: remembered.orgId,
  key: remembered.key,
  fingerprint: remembered.fingerprint,
  expires_at: iso(remembered.expiresAtMillis),
  status: remembered.answer.status,
  headers: remembered.answer.headers,
  body: remembered.answer.body
})

/**
 * A saved egress policy as JSON: the member names of the snapshot (Snapshot.ts `SnapshotEgressPolicy`), which
 * `/_local/state` shows too (LocalRoutes.ts).
 *
 * @since 0.1.0
 * @category Utils
 */
export const egressPolicyOf = (policy: Repositories.PolicyRecord): Snapshot.Snapshot["egress_policies"][number] => ({
  id: policy.id,
  org_id: policy.orgId,
  name: policy.name,
  document: policy.document,
  created_at: policy.createdAt,
  updated_at: policy.updatedAt
})

/** Every repository the snapshot reads and writes. */
const repositories = Effect.all({
  store: SnapshotStore,
  identity: Repositories.Identity,
  apps: Repositories.Apps,
  policies: Repositories.EgressPolicies,
  boxes: Repositories.Boxes,
  responses: Repositories.Responses,
  runtimeVersion: Repositories.RuntimeVersion
})

/** The records of the snapshot as read in one view of the store (without `taken_at`). */
const readState = (secretValues: boolean, now: number) =>
  Effect.gen(function*() {
    const { apps, boxes, identity, policies, responses, runtimeVersion, store } = yield* repositories
    return {
      organizations: (yield* identity.organizations).map((organization) => ({
        id: organization.id,
        credits: organization.credits,
        created_at: iso(organization.createdAtMillis)
      })),
      users: (yield* store.users).map((user) => ({ id: user.id, org_id: user.orgId, admin: user.admin })),
      api_keys: (yield* store.apiKeys).map((key) => ({
        key_hash: key.keyHash,
        key_id: key.keyId,
        org_id: key.orgId,
        user_id: key.userId
      })),
      apps: (yield* apps.list).map((app) => ({
        id: app.id,
        org_id: app.orgId,
        name: app.name,
        created_at: app.createdAt
      })),
      secrets: (yield* store.secrets).map((secret) => ({
        org_id: secret.orgId,
        name: secret.name,
        ...(secretValues ? { value: Redacted.value(secret.value) } : {}),
        created_at: secret.createdAt,
        updated_at: secret.updatedAt
      })),
      egress_policies: (yield* policies.list).map(egressPolicyOf),
      boxes: (yield* boxes.list).map(boxOf),
      responses: (yield* responses.list).map((record) => responseOf(record, secretValues)),
      idempotency_keys: (yield* store.rememberedKeys(now)).map(idempotencyKeyOf),
      tcp_addresses: (yield* store.tcpAddresses).map((pooled) => ({ org_id: pooled.orgId, address: pooled.address })),
      guest_schema_version: Option.getOrNull(yield* runtimeVersion.get)
    }
  })

/**
 * The whole state as a snapshot, read in one consistent view of the store. Secret values and webhook tokens only
 * with `secretValues`. Fails with `StoreError` when a durable store fails.
 *
 * @since 0.1.0
 * @category Snapshots
 */
export const take = (options: TakeOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* SnapshotStore
    const now = yield* Clock.currentTimeMillis
    const secretValues = options.secretValues === true
    const state = yield* store.consistently(readState(secretValues, now))
    return { version: 1, taken_at: iso(now), secret_values: secretValues, ...state } satisfies Snapshot.Snapshot
  })

/**
 * What a restore did not write: `secretsWithoutValue`, the secrets of the snapshot that carry no value
 * (`org_id/name`; a secret the service already holds keeps its value).
 *
 * @since 0.1.0
 * @category Models
 */
export interface RestoreReport {
  readonly secretsWithoutValue: ReadonlyArray<string>
}

/** Writes the identity records: organizations, users and API keys. */
const restoreIdentity = (snapshot: Snapshot.Snapshot) =>
  Effect.gen(function*() {
    const { identity, store } = yield* repositories
    for (const organization of snapshot.organizations) {
      yield* identity.addOrganization({
        id: organization.id,
        credits: organization.credits,
        createdAtMillis: Date.parse(organization.created_at)
      })
    }
    for (const user of snapshot.users) yield* identity.addUser({ id: user.id, orgId: user.org_id, admin: user.admin })
    for (const key of snapshot.api_keys) {
      yield* store.addApiKey({ keyHash: key.key_hash, keyId: key.key_id, orgId: key.org_id, userId: key.user_id })
    }
  })

/** Writes apps, secrets (those with a value) and egress policies; the names of the secrets without a value. */
const restoreSettings = (snapshot: Snapshot.Snapshot) =>
  Effect.gen(function*() {
    const { apps, policies, store } = yield* repositories
    for (const app of snapshot.apps) {
      const record = { id: app.id, orgId: app.org_id, name: app.name, createdAt: app.created_at }
      yield* apps.findOrCreate(app.org_id, app.name, () => record)
    }
    const withoutValue: Array<string> = []
    for (const secret of snapshot.secrets) {
      if (secret.value === undefined) {
        withoutValue.push(`${secret.org_id}/${secret.name}`)
        continue
      }
      yield* store.restoreSecret({
        orgId: secret.org_id,
        name: secret.name,
        value: Redacted.make(secret.value),
        createdAt: secret.created_at,
        updatedAt: secret.updated_at
      })
    }
    for (const policy of snapshot.egress_policies) {
      const record = {
        id: policy.id,
        orgId: policy.org_id,
        name: policy.name,
        document: policy.document,
        createdAt: policy.created_at,
        updatedAt: policy.updated_at
      }
      const replaced = yield* policies.update(policy.org_id, policy.id, () => record)
      if (Option.isNone(replaced)) yield* policies.insert(record)
    }
    return withoutValue
  })

/** Writes boxes and responses (each replacing a record of the same id) and the runtime version. */
const restoreResources = (snapshot: Snapshot.Snapshot) =>
  Effect.gen(function*() {
    const { boxes, responses, runtimeVersion } = yield* repositories
    for (const box of snapshot.boxes) {
      const record = boxRecordOf(box)
      const replaced = yield* boxes.update(record.id, () => record)
      if (Option.isNone(replaced)) yield* boxes.insert(record)
    }
    for (const response of snapshot.responses) {
      const token = response.webhook_token ?? null
      const record: Repositories.ResponseRecord = {
        id: response.id,
        orgId: response.org_id,
        keyId: response.key_id,
        object: response.object,
        webhookUrl: response.webhook_url,
        webhookToken: token === null ? null : Redacted.make(token),
        firstDeliveredAtMillis: response.first_delivered_at === null ? null : Date.parse(response.first_delivered_at)
      }
      const replaced = yield* responses.update(record.id, () => record)
      if (Option.isNone(replaced)) yield* responses.insert(record)
    }
    if (snapshot.guest_schema_version !== null) yield* runtimeVersion.set(snapshot.guest_schema_version)
  })

/** Writes the remembered idempotent answers that have not expired at `now`, and the tcp address pools. */
const restoreKeysAndAddresses = (snapshot: Snapshot.Snapshot, now: number) =>
  Effect.gen(function*() {
    const { store } = yield* repositories
    const remembered = snapshot.idempotency_keys
      .map((entry): RememberedKey => ({
        keyId: entry.key_id,
        orgId: entry.org_id,
        key: entry.key,
        fingerprint: entry.fingerprint,
        expiresAtMillis: Date.parse(entry.expires_at),
        answer: { status: entry.status, headers: entry.headers, body: entry.body }
      }))
      .filter((entry) => entry.expiresAtMillis > now)
      .sort((left, right) => left.expiresAtMillis - right.expiresAtMillis)
    for (const entry of remembered) yield* store.remember(entry)
    const inUse = snapshot.boxes.flatMap((box) => box.listeners.map((listener) => listener.address))
    yield* store.restoreTcpAddresses(
      snapshot.tcp_addresses.map((pooled) => ({ orgId: pooled.org_id, address: pooled.address })),
      inUse
    )
  })

/**
 * Writes every record of `snapshot` into the state, in one unit of work: each under its own id, replacing a record
 * of the same id and keeping the others. Remembered idempotent answers that expired by now are left out; a secret
 * without a value is not written (listed in the report). Fails with `StoreError` when a durable store fails.
 *
 * @since 0.1.0
 * @category Snapshots
 */
export const restore = (snapshot: Snapshot.Snapshot) =>
  Effect.gen(function*() {
    const transactions = yield* Transactions
    const now = yield* Clock.currentTimeMillis
    return yield* transactions.atomically(Effect.gen(function*() {
      yield* restoreIdentity(snapshot)
      const secretsWithoutValue = yield* restoreSettings(snapshot)
      yield* restoreResources(snapshot)
      yield* restoreKeysAndAddresses(snapshot, now)
      return { secretsWithoutValue } satisfies RestoreReport
    }))
  })
