/**
 * Remembered idempotent answers on two PostgreSQL instances of one database: new keys sent at once to both never pass
 * the API key's bound of keys, and answers recorded at once on both never pass the organization's stored-bytes quota
 * (the statements of both lock the same usage rows, the organization's first).
 *
 * Source: docs/ASSUMPTIONS.md "Quotas"; spec "Limits / Idempotency rules", "Errors" rules 1 and 3.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { type Context, Effect, Layer, TestClock } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import { defaultQuotas } from "../../src/Server/Quotas.js"
import type * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"
import * as Postgres from "../support/Postgres.js"
import { atOnce, expectFull, failingCreate, postgresState, storedBytes, sumOfBytes } from "../support/RememberedAnswers.js"

beforeAll(() => Postgres.startTestDatabase().then((database) => database.stop()), Postgres.startLimitMillis)

/** Two services on one fresh PostgreSQL database, with `settings`. */
const twoInstances = (settings: Partial<LocalServiceSettings>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(Date.now())
    const url = yield* Postgres.testDatabase
    const instance = Layer.build(
      LocalService.layerNode(Harness.seed, { settings, server: Harness.fast.server, state: postgresState(url) })
    )
    const instances: ReadonlyArray<Context.Context<C.Services>> = [yield* instance, yield* instance]
    return instances
  })

describe("remembered idempotent answers on two PostgreSQL instances of one database", () => {
  it.scoped("new keys sent at once to both against a bound of 4 keys: exactly 4 run", () =>
    Effect.gen(function*() {
      const instances = yield* twoInstances({ quotas: { ...defaultQuotas, idempotencyKeys: 4 } })
      const answers = yield* atOnce(20, (index) => Effect.provide(failingCreate(`pair-${index}`), instances[index % 2]))
      const ran = answers.filter((answer) => answer.status === 400)
      expect(ran).toHaveLength(4)
      for (const answer of answers.filter((answer) => answer.status !== 400)) expectFull(answer)
      // Both see the same remembered answers in the organization's usage.
      const seen = yield* Effect.forEach(instances, (context) => Effect.provide(storedBytes, context))
      expect(seen).toEqual([sumOfBytes(ran), sumOfBytes(ran)])
    }))

  it.scoped("answers recorded at once on both never pass the organization's stored-bytes quota", () =>
    Effect.gen(function*() {
      const instances = yield* twoInstances({ quotas: { ...defaultQuotas, storedBytes: 2048 } })
      const answers = yield* atOnce(24, (index) =>
        Effect.provide(failingCreate(`pair-stored-${index}`), instances[index % 2]))
      for (const answer of answers) expect(answer.status).toBe(400)
      const stored = yield* Effect.provide(storedBytes, instances[0])
      expect(stored).toBeLessThanOrEqual(2048)
      expect(stored + Buffer.byteLength(answers[0].text)).toBeGreaterThan(2048)
    }))
})
