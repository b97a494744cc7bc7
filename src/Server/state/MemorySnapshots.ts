/**
 * The snapshot store of the in-memory state (StateSnapshots.ts `SnapshotStore`): users, API keys, secrets and tcp
 * pools from the in-memory repositories' tables (MemoryRepositories.ts `MemoryTables`), remembered answers from the
 * in-memory idempotency store (Idempotency.ts `MemoryRememberedKeys`).
 *
 * A consistent read is one uninterrupted step: the in-memory repositories never yield inside a method, and the
 * fiber taking the snapshot is not let go to the scheduler until it ends, so no request's write lands in between.
 *
 * Source: docs/ASSUMPTIONS.md "Snapshots (local service)".
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { MemoryRememberedKeys } from "../pipeline/Idempotency.js"
import { keyHashOf, MemoryTablesOfState, putSecretRecord } from "./MemoryRepositories.js"
import { type PooledAddress, SnapshotStore, type StoredApiKey, tcpPortOf } from "./StateSnapshots.js"

/** A snapshot store for repositories without the in-memory tables: every use dies, saying why. */
const unsupported: SnapshotStore["Type"] = (() => {
  const die = Effect.dieMessage(
    "snapshots need the in-memory repositories of MemoryRepositories.ts (StateStore.layerMemory)"
  )
  return {
    consistently: () => die,
    users: die,
    apiKeys: die,
    secrets: die,
    rememberedKeys: () => die,
    tcpAddresses: die,
    addApiKey: () => die,
    restoreSecret: () => die,
    remember: () => die,
    restoreTcpAddresses: () => die
  }
})()

/**
 * The in-memory snapshot store, over the in-memory repositories' tables and idempotency store of the same state
 * (StateStore.ts `layerMemory`). Repositories of another kind keep no such tables: then taking or restoring a
 * snapshot dies, saying so.
 */
export const layer = Layer.effect(
  SnapshotStore,
  Effect.gen(function*() {
    const tablesOption = yield* Effect.serviceOption(MemoryTablesOfState)
    const rememberedOption = yield* Effect.serviceOption(MemoryRememberedKeys)
    if (Option.isNone(tablesOption) || Option.isNone(rememberedOption)) return unsupported
    const tables = tablesOption.value
    const remembered = rememberedOption.value
    return {
      consistently: (effect) => Effect.withMaxOpsBeforeYield(effect, Number.MAX_SAFE_INTEGER),
      users: Effect.sync(() => Array.from(tables.users.values())),
      apiKeys: Effect.sync(() => {
        const keys: Array<StoredApiKey> = []
        for (const [key, record] of tables.keys) keys.push({ ...record, keyHash: keyHashOf(key) })
        for (const [keyHash, record] of tables.hashedKeys) {
          if (!keys.some((known) => known.keyHash === keyHash)) keys.push({ ...record, keyHash })
        }
        return keys
      }),
      secrets: Effect.sync(() => Array.from(tables.secrets.values())),
      rememberedKeys: (now) => Effect.sync(() => remembered.remembered(now)),
      tcpAddresses: Effect.sync(() => {
        const pooled: Array<PooledAddress> = []
        for (const [orgId, pool] of tables.tcpPools) for (const address of pool) pooled.push({ orgId, address })
        return pooled
      }),
      addApiKey: ({ keyHash, ...record }) =>
        Effect.sync(() => {
          // A key given by itself with the same hash gives way to the snapshot's record.
          for (const key of tables.keys.keys()) if (keyHashOf(key) === keyHash) tables.keys.delete(key)
          tables.hashedKeys.set(keyHash, record)
        }),
      restoreSecret: (record) => Effect.sync(() => putSecretRecord(tables, record)),
      remember: (entry) => Effect.sync(() => remembered.remember(entry)),
      restoreTcpAddresses: (pooled, inUse) =>
        Effect.sync(() => {
          for (const { address, orgId } of pooled) {
            const pool = tables.tcpPools.get(orgId) ?? []
            if (!pool.includes(address)) pool.push(address)
            tables.tcpPools.set(orgId, pool)
          }
          for (const address of [...inUse, ...pooled.map((entry) => entry.address)]) {
            const port = tcpPortOf(address)
            if (port !== undefined && port >= tables.nextTcpPort) tables.nextTcpPort = port + 1
          }
        })
    }
  })
)
