/**
 * The request pipeline's idempotency, driven directly with a controllable handler (spec: Create a box, "A server
 * error or a failure to record the answer can leave a key unsettled"; Limits / Idempotency rules): a 5xx, a failed
 * handler, an interrupted request and a failure to record each leave the key unsettled, and concurrent first
 * requests with one key never both execute. On SQLite (one writer) a create's claim is part of its unit of work:
 * a second use of the key waits for the first and gets its answer replayed; a first use writes its key only when it
 * settles (none for a 5xx); a failed create keeps no claim.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Layer, Option, Ref } from "effect"
import * as Idempotency from "../../src/Server/pipeline/Idempotency.js"
import * as LocalService from "../../src/Server/LocalService.js"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import * as MemoryRepositories from "../../src/Server/state/MemoryRepositories.js"
import * as RequestPipeline from "../../src/Server/pipeline/RequestPipeline.js"
import * as Admission from "../../src/Server/pipeline/Admission.js"
import * as Transactions from "../../src/Server/state/Transactions.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import Database from "libsql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Harness from "../support/Harness.js"

const base = Layer.mergeAll(
  Layer.effectDiscard(LocalService.applySeed(Harness.seed)).pipe(Layer.provideMerge(MemoryRepositories.layerMemory)),
  Admission.layer,
  Transactions.layerMemory
).pipe(Layer.provideMerge(LocalServiceConfig.layer()))

/** The memory store, except that recording an answer always fails. */
const storeThatCannotRecord = Layer.effect(
  Idempotency.IdempotencyStore,
  Effect.map(Idempotency.IdempotencyStore, (inner) => ({
    ...inner,
    claim: (holder: Idempotency.KeyHolder, key: string, print: string, unit?: Idempotency.ClaimUnit) =>
      Effect.map(inner.claim(holder, key, print, unit), (claim): Idempotency.Claim =>
        claim._tag === "Started"
          ? { ...claim, settle: () => Effect.fail(new Idempotency.IdempotencyStoreError({ reason: "disk full" })) }
          : claim)
  }))
).pipe(Layer.provide(Idempotency.layerMemory))

const memory = Layer.provideMerge(Idempotency.layerMemory, base)

/** A fresh data directory for each test that runs on SQLite (removed after the file's tests). */
const dataDirectories: Array<string> = []
afterAll(() => {
  for (const directory of dataDirectories) rmSync(directory, { recursive: true, force: true })
})

/** The same services on a SQLite store in a fresh directory (its idempotency store and units of work). */
const sqlite = (directory: string, client: Harness.Variant["sqliteClient"]) =>
  Layer.mergeAll(
    Layer.effectDiscard(LocalService.applySeed(Harness.seed)),
    Admission.layer
  ).pipe(
    Layer.provideMerge(SqlState.layerSqlite(directory, { client })),
    Layer.provideMerge(LocalServiceConfig.layer())
  )

/** A fresh directory for {@link sqlite}. */
const freshDirectory = () => {
  const directory = mkdtempSync(join(tmpdir(), "boxkit-pipeline-"))
  dataDirectories.push(directory)
  return directory
}

/** The idempotency keys committed to the database of `directory`, read by another connection. */
const committedKeys = (directory: string) => {
  const reader = new Database(join(directory, SqlState.databaseFileName))
  try {
    return reader.prepare("SELECT key FROM idempotency_keys").all([])
  } finally {
    reader.close()
  }
}
const cannotRecord = Layer.provideMerge(storeThatCannotRecord, base)

const createRequest = (key: string) =>
  HttpServerRequest.fromWeb(
    new Request("http://local/v1/boxes", {
      method: "POST",
      headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "idempotency-key": key }
    })
  )

/** Runs the pipeline around `handler` for one create-box request with `key`. */
const send = <E>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E>, key = "k") =>
  Effect.flatMap(RequestPipeline.middleware, (pipeline) =>
    Effect.provideService(pipeline(handler), HttpServerRequest.HttpServerRequest, createRequest(key)))

/** A handler that counts its executions and answers `statuses` in turn (the last one repeats). */
const counting = (statuses: ReadonlyArray<number>) =>
  Effect.map(Ref.make(0), (executions) => ({
    executions,
    handler: Effect.flatMap(Ref.getAndUpdate(executions, (n) => n + 1), (n) =>
      HttpServerResponse.json({ execution: n }, { status: statuses[Math.min(n, statuses.length - 1)] }))
  }))

const bodyOf = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(response.body.body)) : undefined

/**
 * Sends `handler` (made by `counting([status, 201])`) three times: the first answers `status` (a 5xx), the retry runs
 * again and answers 201, and the third is the retry's answer replayed.
 */
const expectRetriedAfter5xx = (
  { executions, handler }: Effect.Effect.Success<ReturnType<typeof counting>>,
  status: number
) =>
  Effect.gen(function*() {
    expect((yield* send(handler)).status).toBe(status)
    const retried = yield* send(handler)
    expect(retried.status).toBe(201)
    expect(retried.headers["idempotent-replayed"]).toBeUndefined()
    const replayed = yield* send(handler)
    expect(replayed.headers["idempotent-replayed"]).toBe("true")
    expect(bodyOf(replayed)).toEqual({ execution: 1 })
    expect(yield* Ref.get(executions)).toBe(2)
  })

describe("idempotency in the request pipeline", () => {
  it.effect("a 5xx answer leaves the key unsettled: the retry runs again", () =>
    Effect.flatMap(counting([500, 201]), (counted) => expectRetriedAfter5xx(counted, 500)).pipe(Effect.provide(memory)))

  it.effect("a failed handler leaves the key unsettled", () =>
    Effect.gen(function*() {
      const executions = yield* Ref.make(0)
      const handler = Effect.flatMap(Ref.getAndUpdate(executions, (n) => n + 1), (n) =>
        n === 0 ? Effect.die("boom") : HttpServerResponse.json({ ok: true }, { status: 201 }))
      const failed = yield* Effect.exit(send(handler))
      expect(Exit.isFailure(failed)).toBe(true)
      expect((yield* send(handler)).status).toBe(201)
      expect(yield* Ref.get(executions)).toBe(2)
    }).pipe(Effect.provide(memory)))

  it.effect("an interrupted request leaves the key unsettled", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const executions = yield* Ref.make(0)
      const handler = Effect.flatMap(Ref.getAndUpdate(executions, (n) => n + 1), (n) =>
        n === 0
          ? Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
          : HttpServerResponse.json({ ok: true }, { status: 201 }))
      const first = yield* Effect.fork(send(handler))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      expect((yield* send(handler)).status).toBe(201)
      expect(yield* Ref.get(executions)).toBe(2)
    }).pipe(Effect.provide(memory)))

  it.effect("a failure to record the answer leaves the key unsettled; the answer still goes out", () =>
    Effect.gen(function*() {
      const { executions, handler } = yield* counting([201])
      const first = yield* send(handler)
      expect(first.status).toBe(201)
      const second = yield* send(handler)
      expect(second.status).toBe(201)
      expect(second.headers["idempotent-replayed"]).toBeUndefined()
      expect(yield* Ref.get(executions)).toBe(2)
      const store = yield* Idempotency.IdempotencyStore
      expect(yield* store.size).toBe(0)
    }).pipe(Effect.provide(cannotRecord)))

  it.effect("concurrent first requests with one key: exactly one executes, the others are told it is in flight", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const executions = yield* Ref.make(0)
      const handler = Effect.zipRight(
        Ref.update(executions, (n) => n + 1),
        Effect.zipRight(Deferred.await(gate), HttpServerResponse.json({ ok: true }, { status: 201 }))
      )
      const fibers = yield* Effect.forEach(Array.from({ length: 10 }), () => Effect.fork(send(handler)))
      // Whichever request claimed the key first is held at the gate; every other one is answered at once.
      let done = 0
      for (let spins = 0; done < 9 && spins < 10_000; spins++) {
        yield* Effect.yieldNow()
        done = (yield* Effect.forEach(fibers, Fiber.poll)).filter((exit) => exit._tag === "Some").length
      }
      expect(done).toBe(9)
      expect(yield* Ref.get(executions)).toBe(1)
      yield* Deferred.succeed(gate, undefined)
      const responses = yield* Effect.forEach(fibers, Fiber.join)
      const inFlight = responses.filter((response) => response.status === 409)
      expect(responses.filter((response) => response.status === 201)).toHaveLength(1)
      expect(inFlight).toHaveLength(9)
      for (const response of inFlight) {
        expect(bodyOf(response).error).toMatchObject({ type: "server_error", code: "idempotent_request_in_flight" })
      }
      expect(yield* Ref.get(executions)).toBe(1)
    }).pipe(Effect.provide(memory)))

  // The SQLite store over each SQL client (SqlState.ts `client`): the prepared one of SqliteClient.ts, and the stock
  // @effect/sql-libsql over @libsql/client, whose statements run in the same units of work.
  describe.each(["prepared", "stock"] as const)("on SQLite, the %s SQL client", (sqliteClient) => {
    it.live("on SQLite a create claims its key in its own unit of work: a second use waits for it and is replayed", () => {
      const directory = freshDirectory()
      // Opened at the end whatever happens, so that a failed expectation does not leave the first request held.
      const gate = Deferred.unsafeMake<void>(FiberId.none)
      return Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const executions = yield* Ref.make(0)
        const handler = Effect.zipRight(
          Ref.update(executions, (n) => n + 1),
          Effect.zipRight(
            Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate)),
            HttpServerResponse.json({ ok: true }, { status: 201 })
          )
        )
        const first = yield* Effect.fork(send(handler))
        yield* Deferred.await(started)
        // Nothing of the request is committed while it runs, its claim neither (one commit per request).
        if (sqliteClient === "prepared") expect(committedKeys(directory)).toEqual([])
        const second = yield* Effect.fork(send(handler))
        // The first holds the store's writer: the second is not answered (no "in flight" 409) until the first ends.
        for (let spins = 0; spins < 200; spins++) yield* Effect.yieldNow()
        yield* Effect.sleep("20 millis")
        expect(yield* Fiber.poll(second)).toEqual(Option.none())
        yield* Deferred.succeed(gate, undefined)
        const answered = yield* Fiber.join(first)
        const replayed = yield* Fiber.join(second)
        expect(answered.status).toBe(201)
        expect(replayed.status).toBe(201)
        expect(replayed.headers["idempotent-replayed"]).toBe("true")
        expect(yield* Ref.get(executions)).toBe(1)
        expect(committedKeys(directory)).toEqual([{ key: "k" }])
      }).pipe(Effect.ensuring(Deferred.succeed(gate, undefined)), Effect.provide(sqlite(directory, sqliteClient)))
    })

    it.live("on SQLite a create answered 5xx writes no key: the retry runs again, and its answer is remembered", () =>
      Effect.gen(function*() {
        const counted = yield* counting([503, 201])
        const store = yield* Idempotency.IdempotencyStore
        // What the store holds while the request runs, seen from within its unit: the key is written when it settles
        // (the retry still sees none: the 503 wrote nothing).
        const seen: Array<number> = []
        const handler = Effect.zipRight(
          Effect.tap(Effect.orDie(store.size), (size) => Effect.sync(() => seen.push(size))),
          counted.handler
        )
        yield* expectRetriedAfter5xx({ ...counted, handler }, 503)
        expect(seen).toEqual([0, 0])
        expect(yield* store.size).toBe(1)
      }).pipe(Effect.provide(sqlite(freshDirectory(), sqliteClient))))

    it.live("on SQLite a failed create takes back its claim with its writes: the retry runs", () =>
      Effect.gen(function*() {
        const executions = yield* Ref.make(0)
        const handler = Effect.flatMap(Ref.getAndUpdate(executions, (n) => n + 1), (n) =>
          n === 0 ? Effect.die("boom") : HttpServerResponse.json({ ok: true }, { status: 201 }))
        expect(Exit.isFailure(yield* Effect.exit(send(handler)))).toBe(true)
        const store = yield* Idempotency.IdempotencyStore
        expect(yield* store.size).toBe(0)
        const retried = yield* send(handler)
        expect(retried.status).toBe(201)
        expect(retried.headers["idempotent-replayed"]).toBeUndefined()
        expect(yield* Ref.get(executions)).toBe(2)
        expect(yield* store.size).toBe(1)
      }).pipe(Effect.provide(sqlite(freshDirectory(), sqliteClient))))
  })
})
