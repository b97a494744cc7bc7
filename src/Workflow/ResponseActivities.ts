/**
 * Background model responses inside workflows: submitted by an activity (execution-derived idempotency key), awaited
 * as a `DurableDeferred` that survives a crash of the process.
 *
 * Two things complete the wait, whichever comes first (the engine keeps the first completion, so a response is
 * awaited once):
 * - the completion webhook: {@link completeFromWebhook} is the handler to give `WebhookReceiver` (the deferred's token
 *   travels in the response's `metadata` under {@link deferredTokenKey});
 * - the polling fallback, {@link pollPending}: reads `GET /responses/{id}` for every awaited response older than a
 *   grace period (the webhook never came: the process that registered its URL died, or no webhook was set) and
 *   completes the finished ones; a response gone (404: past its 10-minute retention) fails the wait with an
 *   {@link ActivityError} of type `ResponseExpiredError`.
 *
 * The webhook URL of a submit is stored in the ledger the first time the submit runs (`Ledger.webhookUrl`), so a
 * submit run again after a crash sends the same request body (a key reused with another body would be refused with
 * 409) even when the restarted process listens elsewhere; the webhook token is not stored and must be the same on
 * every run of the orchestrator (the orchestrate command derives it from the API key).
 *
 * Source: spec "Events / Completion webhook", "GET /responses/{id}";
 * docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import * as DurableDeferred from "@effect/workflow/DurableDeferred"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import { Clock, Context, Duration, Effect, Exit, Option, type Redacted, Schema } from "effect"
import { type ResponseRequest, Responses } from "../Client/Responses.js"
import * as ModelResponse from "../Domain/ModelResponse.js"
import {
  type ActivityOptions,
  ActivityError,
  countReplayed,
  currentOwner,
  idempotencyKey,
  toActivityError
} from "./BoxActivities.js"
import * as ActivityTemplate from "./ActivityTemplate.js"
import { Ledger } from "./Ledger.js"

/**
 * The `metadata` key that carries the `DurableDeferred` token of the wait (base64url of the workflow name, execution
 * id and deferred name).
 *
 * @since 0.1.0
 * @category Constants
 */
export const deferredTokenKey = "boxkit_deferred_token"

/**
 * Where completion webhooks of this process go: the receiver's `url` and the `token` the service sends back as
 * `Authorization: Bearer <token>`. Optional: without it, waits are completed by {@link pollPending} only.
 *
 * @since 0.1.0
 * @category Services
 */
export class ResponseWebhook extends Context.Tag("boxkit/workflow/ResponseWebhook")<ResponseWebhook, {
  readonly url: string
  readonly token?: Redacted.Redacted<string> | undefined
}>() {}

/**
 * The deferred a wait named `name` completes with: the finished Model response, or an {@link ActivityError}. The
 * same object for the same name (made once: a new one would compile its result's decoder again).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const completion = ActivityTemplate.onePerName((name) =>
  DurableDeferred.make(name, { success: ModelResponse.ModelResponse, error: ActivityError })
)

/**
 * Submits `request` as a background response and waits, durably, until it is finished (status `completed`,
 * `incomplete`, `failed` or `cancelled`); returns the finished response. Two steps of the workflow: the submit
 * (activity `<name>/submit`: the webhook URL kept in the ledger, the response recorded there) and the wait (deferred
 * `<name>`); then the ledger row is marked completed (an idempotent update, not a step of its own: the completer may
 * have died between completing the wait and marking the row). `name` defaults to `boxkit/response`; give another for
 * a second response in one workflow. Fails with {@link ActivityError}.
 *
 * @since 0.1.0
 * @category Activities
 */
export const submitAndAwait = (request: ResponseRequest, options: ActivityOptions = {}) =>
  Effect.gen(function*() {
    const name = options.name ?? "boxkit/response"
    const deferred = completion(name)
    const token = yield* DurableDeferred.token(deferred)
    yield* submitTemplate(`${name}/submit`, { request, token })
    const exit = yield* Effect.exit(DurableDeferred.await(deferred))
    // Recorded by the workflow too: the completer may have died between completing the wait and marking the row.
    const ledger = yield* Ledger
    yield* Effect.orDie(
      Exit.isSuccess(exit) ? ledger.markCompleted(exit.value.id) : ledger.markCompletedByToken(token)
    )
    return yield* exit
  })

/**
 * The submit of {@link submitAndAwait}: the deferred's `token` in the metadata, recorded in the ledger. Its stored
 * result is the response's id only: the finished response comes from the wait, and a smaller result costs less to
 * store and to read back on every replay.
 */
const submitTemplate = ActivityTemplate.make({
  key: "submit-response",
  success: Schema.Struct({ id: Schema.String }),
  error: ActivityError,
  execute: ({ request, token }: { readonly request: ResponseRequest; readonly token: string }, submitName) =>
    Effect.gen(function*() {
      const responses = yield* Responses
      const ledger = yield* Ledger
      const hook = yield* Effect.serviceOption(ResponseWebhook)
      const key = yield* idempotencyKey(submitName)
      const owner = yield* currentOwner
      const webhookUrl = yield* Effect.orDie(
        ledger.webhookUrl(owner, submitName, Option.match(hook, { onNone: () => null, onSome: (hook) => hook.url }))
      )
      const submitted = yield* responses.submit(
        { ...request, metadata: { ...request.metadata, [deferredTokenKey]: token } },
        {
          idempotencyKey: key,
          completionWebhook: webhookUrl === null
            ? undefined
            : { url: webhookUrl, token: Option.getOrUndefined(Option.flatMap(hook, (hook) => Option.fromNullable(hook.token))) }
        }
      ).pipe(Effect.mapError(toActivityError(submitName)), Effect.flatMap(countReplayed))
      yield* Effect.orDie(ledger.recordResponse(owner, submitted.value.id, token))
      return { id: submitted.value.id }
    })
})

/** Completes the wait of `token` with `exit` and marks the response completed in the ledger. */
const complete = (
  token: string,
  responseId: string,
  exit: Exit.Exit<ModelResponse.ModelResponse, ActivityError>
): Effect.Effect<void, never, WorkflowEngine | Ledger> =>
  Effect.gen(function*() {
    const parsed = yield* Schema.decode(DurableDeferred.TokenParsed.FromString)(token).pipe(Effect.option)
    if (Option.isNone(parsed)) return yield* Effect.logWarning(`response ${responseId}: not a deferred token`)
    yield* DurableDeferred.done(completion(parsed.value.deferredName), {
      token: DurableDeferred.Token.make(token),
      exit
    })
    const ledger = yield* Ledger
    yield* Effect.orDie(ledger.markCompleted(responseId))
  })

/**
 * The webhook handler: completes the wait whose token is in the finished response's `metadata`
 * ({@link deferredTokenKey}); a response without one (not submitted by {@link submitAndAwait}) is ignored.
 *
 * @since 0.1.0
 * @category Webhooks
 */
export const completeFromWebhook = (response: ModelResponse.ModelResponse) => {
  const token = response.metadata?.[deferredTokenKey]
  return typeof token === "string" && ModelResponse.isFinished(response.status)
    ? complete(token, response.id, Exit.succeed(response))
    : Effect.void
}

/**
 * The polling fallback: for every awaited response submitted at least `grace` ago (default 5 s) and not completed,
 * reads `GET /responses/{id}` and completes the finished ones (an expired one, 404, with an `ActivityError` of type
 * `ResponseExpiredError`). Returns how many it completed. Reads at most 8 at once; a failed read is logged and left
 * for the next round.
 *
 * @since 0.1.0
 * @category Polling
 */
export const pollPending = (options: { readonly grace?: Duration.Duration | undefined } = {}) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const responses = yield* Responses
    const now = yield* Clock.currentTimeMillis
    const pending = yield* Effect.orDie(
      ledger.pendingResponses(now - Duration.toMillis(options.grace ?? Duration.seconds(5)))
    )
    const completed = yield* Effect.forEach(pending, (row) =>
      responses.retrieve(row.response_id).pipe(
        Effect.flatMap((response) =>
          ModelResponse.isFinished(response.status)
            ? Effect.as(complete(row.token, row.response_id, Exit.succeed(response)), 1)
            : Effect.succeed(0)
        ),
        Effect.catchTag("NotFoundError", (error) =>
          Effect.as(
            complete(
              row.token,
              row.response_id,
              Exit.fail(
                new ActivityError({
                  operation: "boxkit/poll-response",
                  type: "ResponseExpiredError",
                  status: 404,
                  message: `response ${row.response_id} is gone (past its retention): ${error.message}`
                })
              )
            ),
            1
          )),
        Effect.catchAll((error) => Effect.as(Effect.logWarning(`polling response ${row.response_id}: ${error.message}`), 0))
      ), { concurrency: 8 })
    return completed.reduce((sum, count) => sum + count, 0)
  })
