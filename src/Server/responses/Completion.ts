/**
 * What happens when a response finishes: its final object is stored; answered on the request (foreground or
 * stream), a deliverable result (`completed` or `incomplete`) counts as delivered now, which starts its retention
 * clock (Retention.ts); and with a completion webhook, the final object is handed to webhook delivery, in the same
 * unit of work as the final object (a crash never keeps a finished response without its pending webhook).
 *
 * Source: spec "Events / Completion webhook" rules 1-3 and 7; docs/ASSUMPTIONS.md "Model responses".
 *
 * @since 0.1.0
 */
import { Clock, type Context, Effect, Option } from "effect"
import * as ModelResponse from "../../Domain/ModelResponse.js"
import type { Responses } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"
import type { Transactions } from "../state/Transactions.js"
import type { WebhookDelivery } from "./WebhookDelivery.js"

/** How a response was asked for: answered on the request (`foreground`, `stream`) or later (`background`). */
export type Mode = "foreground" | "stream" | "background"

/**
 * The step that finishes a response, over the service's responses and webhook delivery; fails with `StoreError` when
 * the store does (nothing of the unit is kept).
 */
export const make = (
  responses: Context.Tag.Service<Responses>,
  webhooks: Context.Tag.Service<WebhookDelivery>,
  transactions: Context.Tag.Service<Transactions>
) =>
(mode: Mode, record: { readonly id: string }, final: ModelResponse.ModelResponse): Effect.Effect<void, StoreError> =>
  transactions.atomically(Effect.gen(function*() {
    const nowMillis = yield* Clock.currentTimeMillis
    const updated = yield* responses.update(record.id, (current) => ({
      ...current,
      object: final,
      firstDeliveredAtMillis:
        current.firstDeliveredAtMillis === null && mode !== "background" && ModelResponse.isDeliverable(final.status)
          ? nowMillis
          : current.firstDeliveredAtMillis
    }))
    if (Option.isSome(updated) && updated.value.webhookUrl !== null && ModelResponse.isDeliverable(final.status)) {
      yield* webhooks.deliver({
        responseId: final.id,
        orgId: updated.value.orgId,
        url: updated.value.webhookUrl,
        token: updated.value.webhookToken,
        body: ModelResponse.toJson(final)
      })
    }
  }))
