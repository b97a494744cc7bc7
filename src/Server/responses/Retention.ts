/**
 * How long a finished result is kept: 10 minutes (`LocalServiceConfig.responseRetention`) from its first successful
 * delivery (a GET of the finished result, or a webhook answered 2xx); until then it stays. Expired results answer
 * 404 and are forgotten, on read and by a sweep once a minute, which also forgets webhook delivery log entries older
 * than the retention.
 *
 * Source: spec "Events / Completion webhook" rule 7 (results can expire); docs/ASSUMPTIONS.md "Model responses".
 *
 * @since 0.1.0
 */
import { Clock, type Context, Effect } from "effect"
import type { Logs, ResponseRecord, Responses } from "../state/Repositories.js"

/** True when `record` was first delivered at least `retentionMillis` before `nowMillis`. */
export const isExpired = (record: ResponseRecord, nowMillis: number, retentionMillis: number): boolean =>
  record.firstDeliveredAtMillis !== null && nowMillis >= record.firstDeliveredAtMillis + retentionMillis

/**
 * The sweep of a service's responses: forgets expired results, and the webhook delivery log entries older than the
 * retention (the log is kept as long as results are).
 */
export const make = (responses: Context.Tag.Service<Responses>, logs: Context.Tag.Service<Logs>, retentionMillis: number) => ({
  sweep: Effect.gen(function*() {
    const nowMillis = yield* Clock.currentTimeMillis
    for (const record of yield* responses.list) {
      if (isExpired(record, nowMillis, retentionMillis)) yield* responses.remove(record.id)
    }
    yield* logs.pruneDeliveries(nowMillis - retentionMillis)
  })
})
