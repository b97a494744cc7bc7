/**
 * The clock's offset is part of the stored state (docs/ASSUMPTIONS.md "The virtual clock"): a service restarted on the
 * same SQLite data directory resumes it, and two services on one PostgreSQL database share it (an advance on one is
 * read by the other at its next `GET /_local/clock`). A real clock ignores a stored offset. A snapshot carries the
 * clock, and a virtual service started on it resumes the snapshot's offset.
 */
import { describe, expect, it } from "@effect/vitest"
import type { HttpServer } from "@effect/platform"
import { Effect, Layer, Redacted } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Snapshot from "../../src/Server/state/Snapshot.js"
import * as SqlState from "../../src/Server/state/sql/SqlState.js"
import * as Harness from "../support/Harness.js"
import * as Clocked from "./Clocked.js"

/** `program` against a service on `state` with the `clock` given, built and closed around it. */
const on = <A, E>(
  state: NonNullable<LocalService.ResponsesOptions["state"]>,
  clock: "virtual" | "real",
  program: Effect.Effect<A, E, HttpServer.HttpServer>
) => Effect.scoped(Effect.flatMap(
  Layer.build(LocalService.layerNode(Harness.seed, { state, settings: { clock } })),
  (context) => Effect.provide(program, context)
))

describe("the clock's offset in the stored state", () => {
  it.live("a restart on the same SQLite data directory resumes the offset; a real clock ignores it", () =>
    Effect.scoped(Effect.gen(function*() {
      const directory = yield* Clocked.sqliteDirectory
      const advanced = yield* on(SqlState.layerSqlite(directory), "virtual", Clocked.advance(7200))
      expect(advanced.offset_seconds).toBeGreaterThanOrEqual(7200)
      const resumed = yield* on(SqlState.layerSqlite(directory), "virtual", Clocked.readClock)
      expect(resumed.offset_seconds).toBe(advanced.offset_seconds)
      expect(Date.parse(resumed.now)).toBeGreaterThanOrEqual(Date.parse(advanced.now))
      const real = yield* on(SqlState.layerSqlite(directory), "real", Clocked.readClock)
      expect(real).toMatchObject({ mode: "real", offset_seconds: 0 })
    })), 120_000)

  it.live("two services on one PostgreSQL database share the offset", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* Clocked.postgresDatabase
      const state = () => SqlState.layerPostgres(Redacted.make(url))
      const first = yield* Layer.build(LocalService.layerNode(Harness.seed, { state: state(), settings: { clock: "virtual" } }))
      const second = yield* Layer.build(LocalService.layerNode(Harness.seed, { state: state(), settings: { clock: "virtual" } }))
      const advanced = yield* Effect.provide(Clocked.advance(600), first)
      const seen = yield* Effect.provide(Clocked.readClock, second)
      expect(seen.offset_seconds).toBe(advanced.offset_seconds)
    })), 120_000)

  it.live("a snapshot carries the clock; a virtual service started on it resumes its offset", () =>
    Effect.scoped(Effect.gen(function*() {
      const taken = yield* Effect.scoped(Effect.flatMap(
        Layer.build(LocalService.layerNode(Harness.seed, { settings: { clock: "virtual" } })),
        (context) =>
          Effect.provide(
            Effect.zipRight(Clocked.advance(3600), Effect.map(Clocked.request("/_local/snapshot"), (answer) => answer.json)),
            context
          )
      ))
      expect(taken.clock).toMatchObject({ mode: "virtual" })
      expect(taken.clock.offset_seconds).toBeGreaterThanOrEqual(3600)
      const snapshot = yield* Snapshot.decode(taken)
      const resumed = yield* Effect.scoped(Effect.flatMap(
        Layer.build(LocalService.layerNode(snapshot, { settings: { clock: "virtual" } })),
        (context) => Effect.provide(Clocked.readClock, context)
      ))
      expect(resumed.offset_seconds).toBe(taken.clock.offset_seconds)
    })), 120_000)
})
