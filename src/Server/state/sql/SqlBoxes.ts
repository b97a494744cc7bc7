/**
 * Boxes in SQL: the record as JSON (`record`), with the columns looked up beside it (organization, status, creation
 * time, lifetime deadline) and the clipboard's bytes in a column of their own, written only when they change.
 *
 * Source: docs/ASSUMPTIONS.md "Durable state".
 *
 * @since 0.1.0
 */
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import * as BoxLifecycle from "../../../Domain/BoxLifecycle.js"
import { LocalServiceConfig } from "../../LocalServiceConfig.js"
import { type BoxRecord, Boxes, type StoredBytesUpdate } from "../Repositories.js"
import { StoreError } from "../StoreError.js"
import { bytesOf, numberOf, rowsAffectedOf, textOrNull } from "./Rows.js"
import { forUpdate, lockedStoredBytes, modify, unitStatements, type UnitStatements } from "./SqlStatements.js"

type Row = Record<string, unknown>

/** The lifetime deadline (Unix ms) stored in `deadline_millis`: BoxLifecycle's, null without one. */
const deadlineOf = BoxLifecycle.lifetimeDeadline

/** The record without its clipboard bytes (stored in their own column). */
const documentOf = (record: BoxRecord): string => JSON.stringify({ ...record, clipboard: null })

const decode = (row: Row): BoxRecord => {
  const record = JSON.parse(String(row.record)) as BoxRecord
  const mediaType = textOrNull(row.clipboard_media_type)
  return {
    ...record,
    errorMessage: record.errorMessage ?? undefined,
    clipboard: mediaType === null ? null : { mediaType, bytes: bytesOf(row.clipboard) }
  }
}

/** The characters LIKE treats specially, escaped with a backslash. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (character) => `\\${character}`)

/** The ids of one `IN (...)` list: at most this many. */
const inListSize = 64

/**
 * `ids` in lists of at most {@link inListSize}, each as long as a power of two (the last id repeated), so that few
 * distinct statements are prepared (SqliteClient.ts keeps each one).
 */
const chunks = (ids: ReadonlyArray<string>): Array<ReadonlyArray<string>> => {
  const lists: Array<ReadonlyArray<string>> = []
  for (let from = 0; from < ids.length; from += inListSize) {
    const list = ids.slice(from, from + inListSize)
    let length = 1
    while (length < list.length) length *= 2
    while (list.length < length) list.push(list[list.length - 1])
    lists.push(list)
  }
  return lists
}

/**
 * How many boxes {@link boxes} remembers as inserted and not written since (the oldest forgotten first): the boots
 * waiting for their time (150 ms at a few thousand creations per second) fit with room to spare.
 */
const rememberedInserts = 1024

/**
 * Boxes this layer inserted and has not written since, by id, with the document stored (at most
 * {@link rememberedInserts}, the oldest forgotten first).
 */
class InsertedBoxes {
  private readonly byId = new Map<string, { readonly record: BoxRecord; readonly document: string }>()
  has(id: string): boolean {
    return this.byId.has(id)
  }
  /** The remembered box `id`, forgotten as it is taken: its next write changes the row. */
  take(id: string): { readonly record: BoxRecord; readonly document: string } | undefined {
    const known = this.byId.get(id)
    this.byId.delete(id)
    return known
  }
  forget(id: string): void {
    this.byId.delete(id)
  }
  remember(record: BoxRecord, document: string): void {
    if (this.byId.size >= rememberedInserts) this.byId.delete(this.byId.keys().next().value!)
    this.byId.set(record.id, { record, document })
  }
}

/**
 * What the statements of {@link boxes} share: the client, how a create's and a boot's statements run, the select of
 * a whole row, and the remembered inserts.
 */
interface BoxStore {
  readonly sql: SqlClient.SqlClient
  readonly unit: UnitStatements
  readonly select: Statement.Fragment
  readonly inserted: InsertedBoxes
}

/** Writes `next` over `current` (same id); the usage it changes follows by trigger (Migrations.ts). */
const write = ({ inserted, sql, unit }: BoxStore, next: BoxRecord, current: BoxRecord) => {
  inserted.forget(next.id)
  return next.clipboard === current.clipboard
    ? unit.raw(sql`UPDATE boxes SET status = ${next.status}, deadline_millis = ${deadlineOf(next)},
        record = ${documentOf(next)} WHERE id = ${next.id}`)
    : unit.raw(sql`UPDATE boxes SET status = ${next.status}, deadline_millis = ${deadlineOf(next)},
        record = ${documentOf(next)}, clipboard_media_type = ${next.clipboard?.mediaType ?? null},
        clipboard = ${next.clipboard?.bytes ?? null} WHERE id = ${next.id}`)
}

/**
 * Writes `f(known)` over a box remembered as inserted, if its row still holds the document stored then; false when it
 * does not (or `f` changes the clipboard, whose columns the document does not hold): read it back.
 */
const writeOverInserted = ({ inserted, sql, unit }: BoxStore, id: string, f: (record: BoxRecord) => BoxRecord) => {
  const known = inserted.take(id)
  if (known === undefined) return Effect.succeed(false)
  const next = f(known.record)
  if (next === known.record || next.clipboard !== known.record.clipboard) return Effect.succeed(false)
  return Effect.map(
    unit.raw(sql`UPDATE boxes SET status = ${next.status}, deadline_millis = ${deadlineOf(next)},
      record = ${documentOf(next)} WHERE id = ${id} AND record = ${known.document}`),
    (raw) => rowsAffectedOf(raw) === 1
  )
}

/** The boxes a query finds, decoded; a database failure is the `StoreError` of `operation`. */
const rows = (operation: string, effect: Effect.Effect<ReadonlyArray<Row>, SqlError.SqlError>) =>
  Effect.map(StoreError.refail(operation)(effect), (found) => found.map(decode))

/**
 * Inserts `record`, remembered as inserted. The organization's usage grows with the row, by trigger (Migrations.ts).
 */
const insert = (store: BoxStore, record: BoxRecord) => {
  const document = documentOf(record)
  return StoreError.refail("Boxes.insert")(Effect.map(
    store.sql`INSERT INTO boxes
      (id, org_id, status, created_at_millis, deadline_millis, record, clipboard_media_type, clipboard)
      VALUES (${record.id}, ${record.orgId}, ${record.status}, ${record.createdAtMillis}, ${deadlineOf(record)},
        ${document}, ${record.clipboard?.mediaType ?? null}, ${record.clipboard?.bytes ?? null})`,
    // A unit of work taken back after the insert leaves a remembered box with no row: its write finds none.
    () => store.inserted.remember(record, document)
  ))
}

/**
 * The count and the insert in one statement: a separate read of the usage cost a statement per create.
 * `INSERT ... SELECT` binds untyped values in PostgreSQL as text, hence the casts of the number columns.
 */
const insertWithinQuota = (store: BoxStore, record: BoxRecord, maxActiveBoxes: number) => {
  if (record.clipboard !== null) return Effect.dieMessage("insertWithinQuota: a new box has no clipboard")
  const { sql } = store
  const document = documentOf(record)
  // SQLite has one writer: the count read by the insert is the count when it commits. PostgreSQL's inserts of
  // one organization may run at once (on one instance or several): the organization's usage row is created if
  // missing and locked by the upsert, which returns its latest count, so they take turns and none passes the
  // quota; the trigger's update of that row commits with the box.
  const statement = sql.onDialectOrElse({
    pg: () =>
      sql`WITH usage AS (
          INSERT INTO org_usage (org_id, active_boxes, clipboard_bytes) VALUES (${record.orgId}, 0, 0)
          ON CONFLICT (org_id) DO UPDATE SET active_boxes = org_usage.active_boxes RETURNING active_boxes)
        INSERT INTO boxes (id, org_id, status, created_at_millis, deadline_millis, record)
        SELECT ${record.id}, ${record.orgId}, ${record.status}, CAST(${record.createdAtMillis} AS BIGINT),
          CAST(${deadlineOf(record)} AS BIGINT), ${document}
        FROM usage WHERE usage.active_boxes < ${maxActiveBoxes}`,
    orElse: () =>
      sql`INSERT INTO boxes (id, org_id, status, created_at_millis, deadline_millis, record)
        SELECT ${record.id}, ${record.orgId}, ${record.status}, CAST(${record.createdAtMillis} AS BIGINT),
          CAST(${deadlineOf(record)} AS BIGINT), ${document}
        WHERE COALESCE((SELECT active_boxes FROM org_usage WHERE org_id = ${record.orgId}), 0) < ${maxActiveBoxes}`
  })
  return StoreError.refail("Boxes.insertWithinQuota")(Effect.map(store.unit.raw(statement), (raw) => {
    if (rowsAffectedOf(raw) !== 1) return false
    store.inserted.remember(record, document)
    return true
  }))
}

/**
 * The box's row is locked first, then its organization's usage row (the order of the usage triggers), so that what
 * is stored is read, checked and written with no other write of the organization in between.
 */
const updateWithinStoredBytes = (
  store: BoxStore,
  id: string,
  f: (record: BoxRecord) => BoxRecord,
  maxStoredBytes: number
) => {
  const { select, sql } = store
  return StoreError.refail("Boxes.updateWithinStoredBytes")(sql.withTransaction(Effect.gen(function*() {
    const found = yield* sql`${select} WHERE id = ${id} ${forUpdate(sql)}`
    if (found.length === 0) return { _tag: "Missing" } satisfies StoredBytesUpdate<BoxRecord>
    const current = decode(found[0])
    const next = f(current)
    const replacing = current.clipboard?.bytes.byteLength ?? 0
    const adding = next.clipboard?.bytes.byteLength ?? 0
    if (adding > replacing) {
      const others = (yield* lockedStoredBytes(sql, current.orgId)) - replacing
      if (others + adding > maxStoredBytes) {
        return { _tag: "Refused", storedBytes: others, adding } satisfies StoredBytesUpdate<BoxRecord>
      }
    }
    if (next !== current) yield* write(store, next, current)
    return { _tag: "Written", record: next } satisfies StoredBytesUpdate<BoxRecord>
  })))
}

/**
 * Applies `f` to the boxes `ids` in one transaction: boxes remembered as inserted by a compare-and-set on their
 * stored document, the others (and those whose row changed) read back in lists of {@link inListSize}.
 */
const updateAll = (store: BoxStore, ids: ReadonlyArray<string>, f: (record: BoxRecord) => BoxRecord) => {
  const { select, sql } = store
  if (ids.length === 0) return Effect.void
  return StoreError.refail("Boxes.updateAll")(sql.withTransaction(Effect.gen(function*() {
    const unread: Array<string> = []
    for (const id of new Set(ids)) {
      if (!store.inserted.has(id) || !(yield* writeOverInserted(store, id, f))) unread.push(id)
    }
    yield* Effect.forEach(chunks(unread), (some) =>
      Effect.flatMap(store.unit.rows(sql`${select} WHERE id IN ${sql.in(some)} ${forUpdate(sql)}`), (found) =>
        Effect.forEach(found, (row) => {
          const current = decode(row)
          const next = f(current)
          return next === current ? Effect.void : write(store, next, current)
        }, { discard: true })), { discard: true })
  })))
}

/** What organization `orgId`'s boxes hold, from its usage row (none: nothing). */
const usage = ({ sql }: BoxStore, orgId: string) =>
  StoreError.refail("Boxes.usage")(Effect.map(
    sql`SELECT active_boxes, clipboard_bytes FROM org_usage WHERE org_id = ${orgId}`,
    (found) => ({
      activeBoxes: found.length === 0 ? 0 : numberOf(found[0].active_boxes),
      clipboardBytes: found.length === 0 ? 0 : numberOf(found[0].clipboard_bytes)
    })
  ))

/**
 * True when a box of `orgId` lists `hostname` as a custom domain: the JSON text narrows the rows, the listeners
 * decide.
 */
const hasCustomDomain = ({ select, sql }: BoxStore, orgId: string, hostname: string) =>
  Effect.map(
    rows("Boxes.hasCustomDomain", sql`${select} WHERE org_id = ${orgId}
      AND record LIKE ${`%${likeLiteral(JSON.stringify(hostname))}%`} ESCAPE '\\'`),
    (found) => found.some((record) => record.listeners.some((listener) => listener.customDomains.includes(hostname)))
  )

/**
 * Boxes in SQL; every method fails with `StoreError` when the database does.
 *
 * The boxes this layer inserted and has not written since are remembered with the document it stored (at most
 * {@link rememberedInserts}): `updateAll` (the boots due together, BoxRuntime.ts) writes over such a box with a
 * compare-and-set on that document instead of reading the row back, and reads it back only when the row changed
 * meanwhile (another write, another instance). `f` then runs on the remembered record and again on the stored one;
 * only the stored record's result is written (the Boxes interface asks `f` to have no effect of its own).
 */
export const boxes = Layer.effect(
  Boxes,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Without the service's settings (a repository alone, in a test) request tracing is off, as by default.
    const config = yield* Effect.serviceOption(LocalServiceConfig)
    const store: BoxStore = {
      sql,
      unit: unitStatements(Option.isSome(config) && config.value.requestTracing),
      select: sql.literal("SELECT id, record, clipboard_media_type, clipboard FROM boxes"),
      inserted: new InsertedBoxes()
    }
    const { select } = store
    return {
      get: (id) =>
        Effect.map(rows("Boxes.get", sql`${select} WHERE id = ${id}`), (found) => Option.fromNullable(found[0])),
      insert: (record) => insert(store, record),
      insertWithinQuota: (record, maxActiveBoxes) => insertWithinQuota(store, record, maxActiveBoxes),
      update: (id, f) =>
        StoreError.refail("Boxes.update")(
          modify(sql, sql`${select} WHERE id = ${id} ${forUpdate(sql)}`, decode, f, (next, current) =>
            write(store, next, current))
        ),
      updateWithinStoredBytes: (id, f, maxStoredBytes) => updateWithinStoredBytes(store, id, f, maxStoredBytes),
      updateAll: (ids, f) => updateAll(store, ids, f),
      list: rows("Boxes.list", sql`${select} ORDER BY created_at_millis, id`),
      expired: (nowMillis) =>
        rows("Boxes.expired", sql`${select} WHERE deadline_millis IS NOT NULL AND deadline_millis <= ${nowMillis}`),
      creating: (createdBeforeMillis) =>
        rows("Boxes.creating", sql`${select} WHERE status = 'creating' AND created_at_millis < ${createdBeforeMillis}`),
      usage: (orgId) => usage(store, orgId),
      hasCustomDomain: (orgId, hostname) => hasCustomDomain(store, orgId, hostname)
    }
  })
)
