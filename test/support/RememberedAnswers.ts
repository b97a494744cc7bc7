/**
 * The scenarios of remembered idempotent answers, as a key holder who sends a new `Idempotency-Key` with every
 * failing create, many at once, would play them, run against one kind of state store (memory, SQLite, PostgreSQL):
 * test/abuse/IdempotencyStores.test.ts (memory, SQLite) and test/abuse/IdempotencyPostgres.test.ts (PostgreSQL, and
 * two instances on one database).
 *
 * Source: docs/ASSUMPTIONS.md "Quotas"; spec "Limits / Idempotency rules", "Errors" rules 1 and 3.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted, TestClock } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import { defaultQuotas } from "../../src/Server/Quotas.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "./Harness.js"
import * as Postgres from "./Postgres.js"

/** Where the service keeps its state. */
export type Store = "memory" | "sqlite" | "postgres"

/** The state on PostgreSQL at `url`. */
export const postgresState = (url: string) => SqlState.layerPostgres(Redacted.make(url))

/** A fresh state store of kind `store` (undefined: the default, in memory). */
const stateOf = (store: Store) =>
  store === "memory"
    ? undefined
    : store === "sqlite"
    ? Harness.sqliteStateOf(Harness.fast.sqliteClient)
    : Layer.unwrapScoped(Effect.map(Postgres.testDatabase, postgresState))

/** Runs `program` against a fresh service on `store`, built in the test (so it shares the test's TestClock). */
export const withStore = (store: Store, settings: Partial<LocalServiceSettings>) =>
<A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.zipRight(
    TestClock.setTime(Date.now()),
    Effect.provide(program, LocalService.layerNode(Harness.seed, { settings, server: Harness.fast.server, state: stateOf(store) }))
  )

/** A create box that fails its own checks (400: the name is not a string), with `key`. */
export const failingCreate = (key: string, apiKey = "sk_acme_org") =>
  C.post("/v1/boxes", { name: 42, image: { base: "debian" } }, apiKey, { "idempotency-key": key })

/** What organization `org_acme` stores, as `GET /_local/state` shows it. */
export const storedBytes = Effect.map(
  C.state,
  (state) => state.organizations.find((entry: any) => entry.id === "org_acme").usage.stored_bytes as number
)

/** The bytes of an answer's body. */
export const bytesOf = (answer: C.RawResponse) => Buffer.byteLength(answer.text)

/** The sum of the bytes of `answers`' bodies. */
export const sumOfBytes = (answers: ReadonlyArray<C.RawResponse>) =>
  answers.reduce((sum, answer) => sum + bytesOf(answer), 0)

/** A 429 `quota_exceeded_error` code `idempotency_keys`: the request did not run. */
export const expectFull = (answer: C.RawResponse) => {
  C.expectError(answer, 429, "quota_exceeded_error", { code: "idempotency_keys" })
  expect(answer.headers["idempotent-replayed"]).toBeUndefined()
}

/** `count` requests made by `send(index)`, all sent at once. */
export const atOnce = <A, E, R>(count: number, send: (index: number) => Effect.Effect<A, E, R>) =>
  Effect.forEach(Array.from({ length: count }, (_, index) => index), send, { concurrency: "unbounded" })

/** The scenarios on `store`. */
export const describeStore = (store: Store) =>
  describe(`remembered idempotent answers on the ${store} store`, () => {
    it.scoped("keys past the API key's bound are refused; answers are replayed, counted, and given back on expiry", () =>
      withStore(store, {
        quotas: { ...defaultQuotas, idempotencyKeys: 5, idempotencyAnswerBytes: 256 },
        idempotencyRetention: Duration.minutes(1),
        sweepInterval: Duration.seconds(30),
        // The clock moves 2 minutes at once: the periodic checks that do not matter here run once in it, not 120 times.
        expiryCheckInterval: Duration.minutes(1),
        recoveryInterval: Duration.minutes(1),
        instanceTimeout: Duration.minutes(4)
      })(Effect.gen(function*() {
        expect(yield* storedBytes).toBe(0)
        const answers: Array<C.RawResponse> = []
        for (let index = 0; index < 5; index++) answers.push(yield* failingCreate(`fail-${index}`))
        for (const answer of answers) expect(answer.status).toBe(400)
        for (let index = 5; index < 12; index++) expectFull(yield* failingCreate(`fail-${index}`))
        const replay = yield* failingCreate("fail-0")
        expect(replay.headers["idempotent-replayed"]).toBe("true")
        expect(replay.text).toBe(answers[0].text)
        // Another API key of the organization has its own keys; its answer counts in the same organization.
        const other = yield* failingCreate("fail-5", "sk_acme_ada")
        expect(other.status).toBe(400)
        expect((yield* C.state).idempotency_keys).toBe(6)
        expect(yield* storedBytes).toBe(sumOfBytes(answers) + bytesOf(other))
        // An answer over the remembered answer bound (256 bytes here, 1 MiB by default) is not recorded.
        const large = { model: "boxkit-local", input: "y".repeat(512) }
        const first = yield* C.post("/v1/responses", large, "sk_acme_bob", { "idempotency-key": "large" })
        expect(first.status).toBe(200)
        expect(bytesOf(first)).toBeGreaterThan(256)
        const again = yield* C.post("/v1/responses", large, "sk_acme_bob", { "idempotency-key": "large" })
        expect(again.headers["idempotent-replayed"]).toBeUndefined()
        expect(again.json.id).not.toBe(first.json.id)
        // Expired answers give their bytes back (the two response records stay); then new keys are taken again.
        const responses = (yield* storedBytes) - sumOfBytes(answers) - bytesOf(other)
        yield* TestClock.adjust("2 minutes")
        yield* C.awaitState((state) =>
          state.organizations.find((entry: any) => entry.id === "org_acme").usage.stored_bytes === responses
        )
        expect((yield* failingCreate("fail-6")).status).toBe(400)
      })))

    it.scoped("new keys sent at once against a bound of 4 keys: exactly 4 run, the others are refused", () =>
      withStore(store, { quotas: { ...defaultQuotas, idempotencyKeys: 4 } })(Effect.gen(function*() {
        const answers = yield* atOnce(16, (index) => failingCreate(`parallel-${index}`))
        expect(answers.filter((answer) => answer.status === 400)).toHaveLength(4)
        for (const answer of answers.filter((answer) => answer.status !== 400)) expectFull(answer)
        expect((yield* C.state).idempotency_keys).toBe(4)
      })))

    it.scoped("answers sent at once against a bound of 4 answers' bytes: exactly 4 are kept, then new keys are refused", () =>
      Effect.gen(function*() {
        // The size of one answer, from a service of its own: the API key's bound holds exactly four.
        const size = bytesOf(yield* withStore("memory", {})(failingCreate("probe")))
        yield* withStore(store, { quotas: { ...defaultQuotas, idempotencyBytes: 4 * size } })(Effect.gen(function*() {
          const answers = yield* atOnce(16, (index) => failingCreate(`bytes-${index}`))
          for (const answer of answers.filter((answer) => answer.status !== 400)) expectFull(answer)
          expect(yield* storedBytes).toBe(4 * size)
          const retries = yield* Effect.forEach(answers, (_, index) => failingCreate(`bytes-${index}`))
          expect(retries.filter((answer) => answer.headers["idempotent-replayed"] === "true")).toHaveLength(4)
          expectFull(yield* failingCreate("bytes-after"))
        }))
      }))

    it.scoped("answers that would pass the stored-bytes quota are not recorded; clipboards count them", () =>
      withStore(store, { quotas: { ...defaultQuotas, storedBytes: 2048 } })(Effect.gen(function*() {
        const boxId = yield* C.runningBox()
        const answers = yield* atOnce(24, (index) => failingCreate(`stored-${index}`))
        // Every request ran (a key is refused only by its API key's bounds); only the answers that fit were kept.
        for (const answer of answers) expect(answer.status).toBe(400)
        const stored = yield* storedBytes
        expect(stored).toBeLessThanOrEqual(2048)
        expect(stored + bytesOf(answers[0])).toBeGreaterThan(2048)
        const retries = yield* Effect.forEach(answers, (_, index) => failingCreate(`stored-${index}`))
        const replayed = retries.filter((answer) => answer.headers["idempotent-replayed"] === "true")
        expect(sumOfBytes(replayed)).toBe(stored)
        // A clipboard write that would pass the quota with the answers held is refused.
        const write = yield* C.request(`/v1/boxes/${boxId}/clipboard`, {
          method: "PUT",
          headers: C.auth("sk_acme_org", { "content-type": "text/plain" }),
          body: "x".repeat(2048 - stored + 1)
        })
        C.expectError(write, 429, "quota_exceeded_error", { code: "stored_bytes" })
      })))
  })
