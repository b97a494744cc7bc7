/**
 * Every store applies BoxLifecycle's rules of active boxes and lifetime deadlines (src/Domain/BoxLifecycle.ts): the
 * in-memory Boxes, and SQLite and PostgreSQL, where the triggers of migration 2 (Migrations.ts) count active boxes in
 * SQL text of their own. A box in each status the spec lists (and one it does not list yet) counts toward the boxes
 * quota exactly when `countsTowardBoxesQuota` says so, as it is inserted and as its status changes; `expired` finds
 * exactly the boxes whose `lifetimeDeadline` has passed.
 *
 * Source: spec "States and transitions" (max_lifetime_seconds); docs/ASSUMPTIONS.md "Quotas (local service)".
 */
import { Migrator } from "@effect/sql"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Box from "../../src/Domain/Box.js"
import * as BoxLifecycle from "../../src/Domain/BoxLifecycle.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import { boxes as sqlBoxes } from "../../src/Server/state/sql/SqlBoxes.js"
import { storedBox } from "../support/Fixtures.js"
import * as Postgres from "../support/Postgres.js"
import * as SqlClients from "../support/SqlClients.js"

const migrated = (client: typeof SqlClients.sqlite) =>
  sqlBoxes.pipe(
    Layer.provideMerge(Layer.effectDiscard(Migrator.make({})({ loader: Migrator.fromRecord(migrations) }))),
    Layer.provideMerge(client),
    Layer.orDie
  )

beforeAll(() => Postgres.startTestDatabase().then((database) => database.stop()), Postgres.startLimitMillis)

/** Every status the spec lists, and one it does not list yet (the set is open). */
const statuses: ReadonlyArray<string> = [...Box.knownStatuses, "hibernating"]

const activeAmong = (list: ReadonlyArray<string>) => list.filter(BoxLifecycle.countsTowardBoxesQuota).length

describe.each([
  ["memory", MemoryRepositories.boxesMemory],
  ["SQLite", migrated(SqlClients.sqlite)],
  ["PostgreSQL", migrated(SqlClients.postgres)]
] as const)("BoxLifecycle in the %s store", (_, store) => {
  it.scoped("a box counts toward the boxes quota exactly when BoxLifecycle says it is active", () =>
    Effect.gen(function*() {
      const boxes = yield* Repositories.Boxes
      for (const [index, status] of statuses.entries()) yield* boxes.insert(storedBox(`sb_${index}`, { status }))
      expect(activeAmong(statuses)).toBe(statuses.length - 1)
      expect((yield* boxes.usage("org")).activeBoxes).toBe(activeAmong(statuses))
      // Every box moves to the next status of the list (the last to the first): each count follows its new status.
      const moved = statuses.map((_, index) => statuses[(index + 1) % statuses.length])
      for (const [index, status] of moved.entries()) {
        yield* boxes.update(`sb_${index}`, (record) => ({ ...record, status }))
      }
      expect((yield* boxes.usage("org")).activeBoxes).toBe(activeAmong(moved))
      yield* boxes.updateAll(statuses.map((_, index) => `sb_${index}`), (record) => ({
        ...record,
        status: BoxLifecycle.terminatedStatus
      }))
      expect((yield* boxes.usage("org")).activeBoxes).toBe(0)
    }).pipe(Effect.provide(store)))

  it.scoped("expired finds exactly the boxes whose lifetime deadline has passed", () =>
    Effect.gen(function*() {
      const boxes = yield* Repositories.Boxes
      const createdAtMillis = 1_764_000_000_000
      const records = statuses.flatMap((status, index) => [
        storedBox(`sb_${index}_short`, { status, createdAtMillis, maxLifetimeSeconds: 60 }),
        storedBox(`sb_${index}_long`, { status, createdAtMillis, maxLifetimeSeconds: 3600 }),
        storedBox(`sb_${index}_unlimited`, { status, createdAtMillis })
      ])
      for (const record of records) yield* boxes.insert(record)
      for (const nowMillis of [createdAtMillis + 59_999, createdAtMillis + 60_000, createdAtMillis + 3_600_000]) {
        const expected = records.filter((record) => {
          const deadline = BoxLifecycle.lifetimeDeadline(record)
          return deadline !== null && deadline <= nowMillis
        }).map((record) => record.id).sort()
        const found = (yield* boxes.expired(nowMillis)).map((record) => record.id).sort()
        expect(found).toEqual(expected)
      }
      expect(BoxLifecycle.lifetimeDeadline(records[0])).toBe(createdAtMillis + 60_000)
    }).pipe(Effect.provide(store)))
})
