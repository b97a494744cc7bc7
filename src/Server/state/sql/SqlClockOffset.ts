/**
 * The virtual clock's offset in SQL (clock/ClockOffset.ts): the `settings` row `clock_offset_millis` (the table of
 * the first migration, Migrations.ts; the offset as decimal milliseconds), raised in one statement so that two
 * instances advancing at once keep the larger offset.
 *
 * Source: docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { ClockOffset } from "../../clock/ClockOffset.js"
import { StoreError } from "../StoreError.js"
import { numberOf } from "./Rows.js"

/** The row's name in `settings`. */
const settingName = "clock_offset_millis"

/**
 * The offset in the `settings` table of the SQL store in context.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = Layer.effect(
  ClockOffset,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const get = sql`SELECT value FROM settings WHERE name = ${settingName}`.pipe(
      Effect.map((rows) => rows.length === 0 ? Option.none<number>() : Option.some(numberOf(rows[0].value))),
      StoreError.refail("ClockOffset.get")
    )
    return {
      get,
      raise: (offsetMillis) =>
        sql`INSERT INTO settings (name, value) VALUES (${settingName}, ${String(Math.round(offsetMillis))})
          ON CONFLICT (name) DO UPDATE SET value = excluded.value
          WHERE CAST(settings.value AS BIGINT) < CAST(excluded.value AS BIGINT)`.pipe(
          StoreError.refail("ClockOffset.raise"),
          Effect.zipRight(get),
          Effect.map(Option.getOrElse(() => Math.round(offsetMillis)))
        )
    }
  })
)
