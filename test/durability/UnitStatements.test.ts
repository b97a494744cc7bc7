/**
 * A create's unit of work and a boot in the SQLite store as the service builds it (SqlState.layerSqlite): the key's
 * claim in the unit, the box inserted within the boxes quota, the answer settled, then the boot's write. With request
 * tracing off (the default) their statements run on the transaction's connection without a `sql.execute` span each
 * (SqlStatements.ts `unitStatements`); with it on, each makes its span under the unit's `sql.transaction`. Either way
 * the same rows are written: the key replays its answer and the box is booted.
 *
 * Source: docs/decisions/0003-sqlite-client.md ("Statements of a unit"); LocalServiceConfig.requestTracing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, type Tracer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { LocalServiceConfig } from "../../src/Server/LocalServiceConfig.js"
import { IdempotencyStore } from "../../src/Server/pipeline/Idempotency.js"
import { Boxes } from "../../src/Server/state/Repositories.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import { Transactions } from "../../src/Server/state/Transactions.js"
import * as Capture from "../resilience/Capture.js"
import { storedBox } from "../support/Fixtures.js"

/** The SQLite store in a fresh temporary directory (removed with the scope), request tracing as `requestTracing`. */
const store = (requestTracing: boolean) =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "boxkit-unit-statements-"))),
      (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true }))
    ),
    (directory) => SqlState.layerSqlite(directory).pipe(Layer.provide(LocalServiceConfig.layer({ requestTracing })))
  ))

const holder = { scope: "key_1", orgId: "org" }
const answer = { status: 201, headers: { "content-type": "application/json" }, body: new TextEncoder().encode("{}") }

/**
 * One create (claim, insert, settle in one unit) and its boot, recorded; then what they stored: the key's claim
 * again and the box.
 */
const createAndBoot = Effect.gen(function*() {
  const transactions = yield* Transactions
  const idempotency = yield* IdempotencyStore
  const boxes = yield* Boxes
  const recorder = yield* Capture.make
  yield* recorder.record(transactions.atomically(Effect.gen(function*() {
    const claim = yield* idempotency.claim(holder, "create-1", "fingerprint", transactions.claimsInUnit ? "InUnitOfWork" : "Standalone")
    if (claim._tag !== "Started") return yield* Effect.dieMessage(`claimed: ${claim._tag}`)
    expect(yield* boxes.insertWithinQuota(storedBox("sb_1", { status: "creating", bootCount: 0 }), 10)).toBe(true)
    yield* claim.settle(answer)
  })))
  yield* recorder.record(boxes.updateAll(["sb_1"], (box) => ({ ...box, status: "running", bootCount: box.bootCount + 1 })))
  const again = yield* idempotency.claim(holder, "create-1", "fingerprint", "Standalone")
  const box = yield* boxes.get("sb_1")
  return { spans: recorder.spans, again, box }
})

/** The `sql.execute` spans among `spans`: the first words of each query, and whether a transaction's span holds it. */
const executed = (spans: ReadonlyArray<Tracer.Span>) => {
  const transactions = new Set(spans.filter((span) => span.name === "sql.transaction").map((span) => span.spanId))
  return spans.filter((span) => span.name === "sql.execute").map((span) => ({
    query: String(span.attributes.get("db.query.text")).replace(/\s+/g, " ").split(" ").slice(0, 3).join(" "),
    inTransaction: span.parent._tag === "Some" && transactions.has(span.parent.value.spanId)
  }))
}

describe("a create's unit of work and its boot in the SQLite store", () => {
  it.scoped("with request tracing off: no sql.execute span per statement, the same rows written", () =>
    Effect.gen(function*() {
      const { again, box, spans } = yield* createAndBoot
      expect(executed(spans)).toEqual([])
      expect(spans.filter((span) => span.name === "sql.transaction")).toHaveLength(2)
      expect(again._tag === "Replay" && new TextDecoder().decode(again.answer.body)).toBe("{}")
      expect(Option.map(box, (found) => [found.status, found.bootCount])).toEqual(Option.some(["running", 1]))
    }).pipe(Effect.provide(store(false))))

  it.scoped("with request tracing on: a sql.execute span for each statement, under the unit's transaction", () =>
    Effect.gen(function*() {
      const { again, box, spans } = yield* createAndBoot
      expect(executed(spans)).toEqual([
        { query: "SELECT k.fingerprint, k.token,", inTransaction: true },
        { query: "INSERT INTO boxes", inTransaction: true },
        { query: "INSERT INTO idempotency_keys", inTransaction: true },
        { query: "UPDATE boxes SET", inTransaction: true }
      ])
      expect(again._tag === "Replay" && new TextDecoder().decode(again.answer.body)).toBe("{}")
      expect(Option.map(box, (found) => [found.status, found.bootCount])).toEqual(Option.some(["running", 1]))
    }).pipe(Effect.provide(store(true))))
})
