/**
 * How long a finished result is kept: 10 minutes (`LocalServiceConfig.responseRetention`) from its first successful
 * delivery (a GET of the finished result, or a webhook answered 2xx); until then it stays. Expired results answer
 * 404 and are forgotten, on read and by a sweep at most once a minute.
 *
 * Source: spec "Events / Completion webhook" rule 7 (results can expire); docs/ASSUMPTIONS.md "Model responses".
 *
 * @since 0.1.0
 */
import { Clock, type Context, Effect } from "effect"
import type { ResponseRecord, Responses } from "../state/Repositories.js"

/** True when `record` was first delivered at least `retentionMillis` before `nowMillis`. */
export const isExpired = (record: ResponseRecord, nowMillis: number, retentionMillis: number): boolean =>
  record.firstDeliveredAtMillis !== null && nowMillis >= record.firstDeliveredAtMillis + retentionMillis

/** The sweep of a service's responses: forgets expired results, at most once a minute. */
export const make = (responses: Context.Tag.Service<Responses>, retentionMillis: number) => {
  let lastSweepMillis = 0
  return {
    sweep: Effect.gen(function*() {
      const nowMillis = yield* Clock.currentTimeMillis
      if (nowMillis - lastSweepMillis < 60_000) return
      lastSweepMillis = nowMillis
      for (const record of yield* responses.list) {
        if (isExpired(record, nowMillis, retentionMillis)) yield* responses.remove(record.id)
      }
    })
  }
}
