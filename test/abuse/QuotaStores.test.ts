/**
 * The quotas as the stores hold them under concurrency, as a key holder who sends many writes at once would meet
 * them: the stored-bytes quota (clipboard writes and new response records) and the counts of secrets, egress policies
 * and apps, in memory, SQLite, PostgreSQL, and two PostgreSQL instances (two pools on one database). Each write
 * checks what the organization holds in the same step as it writes, so parallel writes never pass the quota.
 *
 * Source: docs/ASSUMPTIONS.md "Quotas".
 */
import { Migrator, SqlClient } from "@effect/sql"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as Repositories from "../../src/Server/state/Repositories.js"
import type { StoreError } from "../../src/Server/state/StoreError.js"
import { migrations } from "../../src/Server/state/sql/Migrations.js"
import { boxes as sqlBoxes } from "../../src/Server/state/sql/SqlBoxes.js"
import * as SqlRepositories from "../../src/Server/state/sql/SqlRepositories.js"
import { storedBox } from "../support/Fixtures.js"
import * as Postgres from "../support/Postgres.js"
import * as SqlClients from "../support/SqlClients.js"

beforeAll(() => Postgres.startTestDatabase().then((database) => database.stop()), Postgres.startLimitMillis)

type Stores =
  | Repositories.Boxes
  | Repositories.Responses
  | Repositories.Secrets
  | Repositories.EgressPolicies
  | Repositories.Apps

/** Runs the migrations whose id is at most `upTo`. */
const migrate = (upTo: number) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(
      Object.fromEntries(Object.entries(migrations).filter(([name]) => Number(name.split("_")[0]) <= upTo))
    )
  })

/** The SQL repositories this file uses, over whatever SQL client is provided. */
const sqlStores = Layer.mergeAll(
  sqlBoxes,
  SqlRepositories.responses,
  SqlRepositories.secrets,
  SqlRepositories.egressPolicies,
  SqlRepositories.apps
)

/** A store on fresh storage (memory, or a migrated database), built for one test. */
type Store = Effect.Effect<ReadonlyArray<Context.Context<Stores>>, never, import("effect").Scope.Scope>

/** One instance over `client`: the repositories, migrated first. */
const oneInstance = (client: Layer.Layer<any, any, never>): Store =>
  Effect.map(
    Layer.build(sqlStores.pipe(Layer.provideMerge(Layer.effectDiscard(migrate(Number.MAX_SAFE_INTEGER))), Layer.provideMerge(client), Layer.orDie)),
    (context) => [context as Context.Context<Stores>]
  )

/** Two instances (two pools of four connections) on one fresh PostgreSQL database. */
const twoPostgresInstances: Store = Effect.gen(function*() {
  const url = yield* Postgres.testDatabase
  const instance = () =>
    Layer.build(sqlStores.pipe(Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })), Layer.orDie))
  const first = yield* instance()
  yield* Effect.orDie(migrate(Number.MAX_SAFE_INTEGER).pipe(Effect.provide(first)))
  return [first, yield* instance()] as ReadonlyArray<Context.Context<Stores>>
})

const stores: ReadonlyArray<readonly [string, Store]> = [
  ["memory", Effect.map(Layer.build(MemoryRepositories.layerMemory), (context) => [context])],
  ["SQLite", oneInstance(SqlClients.sqlite)],
  ["PostgreSQL", oneInstance(SqlClients.postgres)],
  ["two PostgreSQL instances", twoPostgresInstances]
]

const kib = 1024

/** A new response record of organization `org` whose input is `inputBytes` characters. */
const responseRecord = (id: string, inputBytes: number): Repositories.ResponseRecord => ({
  id,
  orgId: "org",
  keyId: "key",
  object: { id, object: "response", status: "queued", input: "y".repeat(inputBytes) } as any,
  webhookUrl: null,
  webhookToken: null,
  firstDeliveredAtMillis: null
})

/** `count` indexes run at once, each through the instance `index % instances`. */
const atOnce = <A>(
  instances: ReadonlyArray<Context.Context<Stores>>,
  count: number,
  run: (index: number) => Effect.Effect<A, StoreError, Stores>
) =>
  Effect.forEach(
    Array.from({ length: count }, (_, index) => index),
    (index) => Effect.provide(run(index), instances[index % instances.length]!),
    { concurrency: "unbounded" }
  )

describe.each(stores)("quotas held by the store under concurrency: %s", (_, store) => {
  it.scoped("40 clipboard writes of 1 KiB at once on 40 boxes with a quota of 10 KiB store 10 KiB", () =>
    Effect.gen(function*() {
      const instances = yield* store
      const use = <A>(effect: Effect.Effect<A, StoreError, Stores>) => Effect.provide(effect, instances[0]!)
      const boxes = yield* use(Repositories.Boxes)
      for (let index = 0; index < 40; index++) yield* boxes.insert(storedBox(`sb_${index}`))
      const bytes = new Uint8Array(kib)
      const outcomes = yield* atOnce(instances, 40, (index) =>
        Effect.flatMap(Repositories.Boxes, (boxes) =>
          boxes.updateWithinStoredBytes(`sb_${index}`, (record) => ({
            ...record,
            clipboard: { mediaType: "text/plain", bytes }
          }), 10 * kib)))
      expect(outcomes.filter((outcome) => outcome._tag === "Written")).toHaveLength(10)
      const refused = outcomes.filter((outcome) => outcome._tag === "Refused")
      expect(refused).toHaveLength(30)
      expect(refused[0]).toEqual({ _tag: "Refused", storedBytes: 10 * kib, adding: kib })
      expect((yield* boxes.usage("org")).clipboardBytes).toBe(10 * kib)
      // A refused write changed nothing; a write that frees bytes passes over the quota, and one that replaces
      // bytes with as many passes at it.
      const written = (yield* boxes.list).filter((record) => record.clipboard !== null)
      expect(written).toHaveLength(10)
      const empty = yield* boxes.updateWithinStoredBytes(written[0]!.id, (record) => ({ ...record, clipboard: null }), 0)
      expect(empty._tag).toBe("Written")
      const same = yield* boxes.updateWithinStoredBytes(written[1]!.id, (record) => ({
        ...record,
        clipboard: { mediaType: "text/plain", bytes: new Uint8Array(kib) }
      }), 9 * kib)
      expect(same._tag).toBe("Written")
      expect(yield* boxes.updateWithinStoredBytes("sb_missing", (record) => record, 10 * kib)).toEqual({ _tag: "Missing" })
      expect((yield* boxes.usage("org")).clipboardBytes).toBe(9 * kib)
    }))

  it.scoped("clipboard writes and new response records at once share the quota: never past it", () =>
    Effect.gen(function*() {
      const instances = yield* store
      const use = <A>(effect: Effect.Effect<A, StoreError, Stores>) => Effect.provide(effect, instances[0]!)
      const boxes = yield* use(Repositories.Boxes)
      const responses = yield* use(Repositories.Responses)
      for (let index = 0; index < 20; index++) yield* boxes.insert(storedBox(`sb_${index}`))
      const quota = 40 * kib
      const outcomes = yield* atOnce(instances, 40, (index): Effect.Effect<{ readonly _tag: string }, StoreError, Stores> =>
        index % 2 === 0
          ? Effect.flatMap(Repositories.Boxes, (boxes) =>
            boxes.updateWithinStoredBytes(`sb_${index / 2}`, (record) => ({
              ...record,
              clipboard: { mediaType: "text/plain", bytes: new Uint8Array(2 * kib) }
            }), quota))
          : Effect.flatMap(Repositories.Responses, (responses) =>
            responses.insertWithinStoredBytes(responseRecord(`resp_${index}`, 2 * kib), quota)))
      const stored = (yield* boxes.usage("org")).clipboardBytes + (yield* responses.storedBytes("org"))
      expect(stored).toBeLessThanOrEqual(quota)
      // Each response record is its input and a little more: the writes filled the quota to within one write.
      expect(stored).toBeGreaterThan(quota - 3 * kib)
      const written = outcomes.filter((outcome) => outcome._tag === "Written").length
      expect(written).toBeGreaterThanOrEqual(17)
      expect(written).toBeLessThan(20)
      // What the refused response creates left behind: nothing.
      expect((yield* responses.list).length).toBe(outcomes.filter((outcome, index) => index % 2 === 1 && outcome._tag === "Written").length)
    }))

  it.scoped("30 secrets, 30 egress policies and 30 apps at once with quotas of 10 make 10 of each", () =>
    Effect.gen(function*() {
      const instances = yield* store
      const use = <A>(effect: Effect.Effect<A, StoreError, Stores>) => Effect.provide(effect, instances[0]!)
      const now = "2026-01-01T00:00:00.000Z"
      const secrets = yield* atOnce(instances, 30, (index) =>
        Effect.flatMap(Repositories.Secrets, (secrets) =>
          secrets.putWithinQuota("org", `S${index}`, Redacted.make("value"), now, 10)))
      expect(secrets.filter(Option.isSome)).toHaveLength(10)
      const policies = yield* atOnce(instances, 30, (index) =>
        Effect.flatMap(Repositories.EgressPolicies, (policies) =>
          policies.insertWithinQuota({
            id: `ep_${index}`,
            orgId: "org",
            name: `p${index}`,
            document: { allowlist: [] } as any,
            createdAt: now,
            updatedAt: now
          }, 10)))
      expect(policies.filter((inserted) => inserted)).toHaveLength(10)
      const apps = yield* atOnce(instances, 30, (index) =>
        Effect.flatMap(Repositories.Apps, (apps) =>
          apps.findOrCreateWithinQuota("org", `app-${index}`, () => ({
            id: `app_${index}`,
            orgId: "org",
            name: `app-${index}`,
            createdAt: 0
          }), 10)))
      expect(apps.filter(Option.isSome)).toHaveLength(10)
      expect(yield* use(Effect.flatMap(Repositories.Secrets, (secrets) => secrets.count("org")))).toBe(10)
      expect(yield* use(Effect.flatMap(Repositories.EgressPolicies, (policies) => policies.count("org")))).toBe(10)
      expect(yield* use(Effect.flatMap(Repositories.Apps, (apps) => apps.count("org")))).toBe(10)

      // At the quota: an existing secret is still replaced, an existing app still found; new ones are refused.
      const kept = secrets.flatMap((secret) => Option.isSome(secret) ? [secret.value.name] : [])[0]!
      const replaced = yield* use(Effect.flatMap(Repositories.Secrets, (secrets) =>
        secrets.putWithinQuota("org", kept, Redacted.make("new value"), "2026-01-02T00:00:00.000Z", 10)))
      expect(Option.map(replaced, (secret) => [secret.createdAt, secret.updatedAt])).toEqual(
        Option.some([now, "2026-01-02T00:00:00.000Z"])
      )
      expect(yield* use(Effect.flatMap(Repositories.Secrets, (secrets) =>
        secrets.putWithinQuota("org", "S_new", Redacted.make("value"), now, 10)))).toEqual(Option.none())
      const keptApp = apps.flatMap((app) => Option.isSome(app) ? [app.value] : [])[0]!
      expect(yield* use(Effect.flatMap(Repositories.Apps, (apps) =>
        apps.findOrCreateWithinQuota("org", keptApp.name, () => ({ ...keptApp, id: "app_other" }), 10)))).toEqual(
          Option.some(keptApp)
        )
      // Another organization counts its own.
      expect(Option.isSome(yield* use(Effect.flatMap(Repositories.Secrets, (secrets) =>
        secrets.putWithinQuota("org_other", "S0", Redacted.make("value"), now, 10))))).toBe(true)
      expect(yield* use(Effect.flatMap(Repositories.Secrets, (secrets) => secrets.count("org")))).toBe(10)
    }))
})

describe.each([["SQLite", SqlClients.sqlite], ["PostgreSQL", SqlClients.postgres]] as const)(
  "migration 3 in %s: the rows stored before it are counted",
  (_, client) => {
    it.scoped("secrets, egress policies and apps already stored count toward their quotas", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Effect.orDie(migrate(2))
        yield* Effect.orDie(sql`INSERT INTO secrets (org_id, name, value, created_at, updated_at)
          VALUES ('org', 'A', 'v', 'now', 'now'), ('org', 'B', 'v', 'now', 'now'), ('org_other', 'A', 'v', 'now', 'now')`)
        yield* Effect.orDie(sql`INSERT INTO egress_policies (id, org_id, record) VALUES ('ep_1', 'org', '{}')`)
        yield* Effect.orDie(sql`INSERT INTO apps (id, org_id, name, created_at) VALUES ('app_1', 'org', 'a', 0)`)
        yield* Effect.orDie(migrate(3))
        const counts = yield* Effect.orDie(sql`SELECT org_id, secrets, egress_policies, apps FROM org_usage ORDER BY org_id`)
        expect(counts.map((row) => [row.org_id, Number(row.secrets), Number(row.egress_policies), Number(row.apps)]))
          .toEqual([["org", 2, 1, 1], ["org_other", 1, 0, 0]])
        // The triggers count from there: a third secret of org is over a quota of 2.
        const secrets = yield* Effect.provide(Repositories.Secrets, SqlRepositories.secrets.pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))))
        expect(yield* secrets.putWithinQuota("org", "C", Redacted.make("v"), "now", 2)).toEqual(Option.none())
        expect(Option.isSome(yield* secrets.putWithinQuota("org", "C", Redacted.make("v"), "now", 3))).toBe(true)
        expect(yield* secrets.count("org")).toBe(3)
      }).pipe(Effect.provide(Layer.orDie(client))))
  }
)
