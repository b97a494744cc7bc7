/**
 * The Responses area of the local service: validates a create request against every rule of the spec, builds the
 * prompt, runs the {@link LanguageModel}, enforces `max_output_tokens`, counts usage with a real tokenizer (including
 * cached prefix tokens under a `prompt_cache_key`), stores the result, streams Responses events, hands finished
 * results to the completion webhook, and expires results 10 minutes after their first successful delivery.
 *
 * Every mode applies the model's answer through the same state (output items, the token budget, usage): a streamed
 * request gets it token by token as {@link StreamEvent}s (the hosted Responses API's names and shapes) sent as
 * Server-Sent Events; a foreground request gets the final object only, and a background request runs later to its
 * final object, both from the model's whole answer without events (the same final object;
 * test/responses/EngineEquivalence.test.ts). Background requests wait in a queue for a fixed number of workers (no fiber each while they
 * wait), so accepting them stays cheap however many are pending.
 *
 * Source: spec "POST {api_url}/responses", "Model response object", "Events / Completion webhook" rules 1-7, Limits
 * (pre-tokenized prompt, result retention). Field names and shapes the spec does not give: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Layer, Option, Queue, Schedule, Stream } from "effect"
import * as ApiError from "../../ApiError.js"
import type { PrincipalShape } from "../../Contract/Principal.js"
import * as ModelResponse from "../../Domain/ModelResponse.js"
import { LanguageModel } from "./LanguageModel.js"
import * as ServiceClock from "../clock/ServiceClock.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Quotas from "../Quotas.js"
import { PromptCache } from "./PromptCache.js"
import { DurableWork, type StoredJob } from "../state/DurableWork.js"
import { Logs, Responses } from "../state/Repositories.js"
import { Transactions } from "../state/Transactions.js"
import { StoreError } from "../state/StoreError.js"
import * as StoreOutage from "../state/StoreOutage.js"
import { initialObject, type Prepared } from "./ResponseRequest.js"
import * as ResponseSession from "./ResponseSession.js"
import * as Completion from "./Completion.js"
import * as Retention from "./Retention.js"
import * as Tokenizer from "./Tokenizer.js"
import { WebhookDelivery } from "./WebhookDelivery.js"

/** One Responses streaming event (`ModelResponse.StreamEvent`). */
export type StreamEvent = ResponseSession.StreamEvent

const hex32 = () => crypto.randomUUID().replace(/-/g, "")

const encodeResponse = ResponseSession.encodeResponse

type Mode = Completion.Mode

/** Options of the engine beyond {@link LocalServiceConfig}. */
export interface EngineOptions {
  /** Background responses generated at once; the others wait in order (default 32). */
  readonly backgroundConcurrency?: number | undefined
}

/** The Responses engine of the local service. Each operation fails with `StoreError` when the state store does. */
export class ResponseEngine extends Context.Tag("boxkit/server/ResponseEngine")<ResponseEngine, {
  /**
   * Runs a foreground request to its end and returns the finished object (status `completed`, or `incomplete` at
   * `max_output_tokens`). A model failure is a 500 `server_error` naming the response id (the failed object stays
   * readable).
   */
  readonly foreground: (
    principal: PrincipalShape,
    prepared: Prepared
  ) => Effect.Effect<ModelResponse.ModelResponse, ApiError.ServerError | ApiError.QuotaExceededError | StoreError>
  /**
   * Runs a foreground request as a stream of Responses events; the result is stored before the terminal event. Each
   * of these creates fails with 429 `quota_exceeded_error` code `stored_bytes` when the new record would pass the
   * organization's stored bytes (checked as it is stored, Quotas.ts). The stream fails with `StoreError` (no
   * terminal event) when the result cannot be stored.
   */
  readonly stream: (
    principal: PrincipalShape,
    prepared: Prepared
  ) => Effect.Effect<Stream.Stream<StreamEvent, StoreError>, ApiError.QuotaExceededError | StoreError>
  /** Accepts a background request: stores it `queued` and returns that object; it is completed later. */
  readonly background: (
    principal: PrincipalShape,
    prepared: Prepared
  ) => Effect.Effect<ModelResponse.ModelResponse, ApiError.QuotaExceededError | StoreError>
  /**
   * Reads a response of the caller's organization. A finished result's first read starts its retention clock; an
   * expired one is gone (404 `not_found_error`, param `response_id`).
   */
  readonly retrieve: (
    principal: PrincipalShape,
    id: string
  ) => Effect.Effect<ModelResponse.ModelResponse, ApiError.NotFoundError | StoreError>
  /** Background responses of organization `orgId` accepted (or taken over) by this instance and not finished. */
  readonly backgroundInFlight: (orgId: string) => Effect.Effect<number>
}>() {}

/** The services, settings and state every operation of one engine ({@link layerWith}) runs with. */
interface EngineServices {
  readonly config: Context.Tag.Service<LocalServiceConfig>
  readonly responses: Context.Tag.Service<Responses>
  readonly durableWork: Context.Tag.Service<DurableWork>
  readonly transactions: Context.Tag.Service<Transactions>
  /** Background requests waiting for a worker, in the order they were accepted. */
  readonly jobs: Queue.Queue<BackgroundJob>
  /** How long a finished result is kept after its first delivery, in milliseconds. */
  readonly retentionMillis: number
  /** Starts the session of one response (ResponseSession.ts). */
  readonly session: ReturnType<typeof ResponseSession.make>
  /** Background responses in flight per organization (Quotas.ts), counted from acceptance to the end of its job. */
  readonly inFlight: Map<string, number>
}

/** Counts a background job of `orgId` in (`sign` 1) or out (-1) of `inFlight`. */
const countJob = (inFlight: Map<string, number>, orgId: string, sign: 1 | -1) => {
  const next = (inFlight.get(orgId) ?? 0) + sign
  if (next <= 0) inFlight.delete(orgId)
  else inFlight.set(orgId, next)
}

/**
 * The event stream of one streamed response from `base` (status in_progress) to its terminal event; the model answers
 * token by token. The final object is stored (and its webhook handed over) before the terminal event is emitted.
 * Interrupted before the end (the client went away, or the service stops), the response is stored `cancelled`.
 */
const runStream = (services: EngineServices, orgId: string, prepared: Prepared, base: ModelResponse.ModelResponse) =>
  Stream.suspend(() => {
    const state = services.session(orgId, "stream", prepared, base)
    const tail = Stream.unwrap(Effect.map(state.complete, ({ events, final }) =>
      Stream.fromIterable([
        ...events,
        state.event(final.status === "completed" ? "response.completed" : "response.incomplete", {
          response: encodeResponse(final)
        })
      ])))
    return Stream.concat(
      Stream.suspend(() => Stream.fromIterable(state.head())),
      Stream.concat(Stream.mapConcat(state.chunks(), state.onChunk), tail)
    ).pipe(
      // A store failure ends the stream without a terminal event: nothing is told stored that was not.
      Stream.catchAll((error) =>
        error instanceof StoreError ? Stream.fail(error) : Stream.unwrap(Effect.map(state.fail(error), (final) =>
          Stream.make(state.event("response.failed", { response: encodeResponse(final) }))))
      ),
      Stream.ensuring(state.cancelled)
    )
  })

/**
 * One response run to its final object without events (foreground and background requests): the model answers in
 * whole pieces, token counts are taken once per piece. Same final object as {@link runStream}. Interrupted before the
 * end, the response is stored `cancelled`, except a background one of a store that keeps work (DurableWork.ts): the
 * service is stopping, and its next start runs it again.
 */
const runDirect = (
  services: EngineServices,
  orgId: string,
  mode: Mode,
  prepared: Prepared,
  base: ModelResponse.ModelResponse
) =>
  Effect.suspend(() => {
    const state = services.session(orgId, mode, prepared, base)
    return state.applyAnswer().pipe(
      Effect.matchEffect({
        onFailure: state.fail,
        onSuccess: () => Effect.map(state.complete, ({ final }) => final)
      }),
      Effect.onInterrupt(() => mode === "background" && services.durableWork.resumable ? Effect.void : state.cancelled)
    )
  })

/** The current time in epoch seconds. */
const nowSeconds = Effect.map(Clock.currentTimeMillis, (millis) => Math.floor(millis / 1000))

/**
 * Stores a new response with `status` and returns its object; `QuotaExceededError` when it would pass the
 * organization's stored bytes. Loads the tokenizer first (once per process), since every response is counted with it.
 */
const startResponse = (
  services: EngineServices,
  principal: PrincipalShape,
  prepared: Prepared,
  status: ModelResponse.ResponseStatus
) =>
  Effect.gen(function*() {
    yield* Tokenizer.load
    const object = initialObject(`resp_${hex32()}`, yield* nowSeconds, prepared, status)
    // The record and the organization's stored bytes checked in one step (Quotas.ts).
    const stored = yield* services.responses.insertWithinStoredBytes({
      id: object.id,
      orgId: orgOf(principal),
      keyId: principal.keyId,
      object,
      webhookUrl: prepared.webhookUrl,
      webhookToken: prepared.webhookToken,
      firstDeliveredAtMillis: null
    }, services.config.quotas.storedBytes)
    if (stored._tag === "Refused") {
      return yield* Effect.fail(Quotas.storedBytesExceeded(services.config.quotas, stored.storedBytes, stored.adding))
    }
    return object
  })

/** `retrieve` of the engine (see {@link ResponseEngine}). */
const retrieveResponse = (services: EngineServices, principal: PrincipalShape, id: string) =>
  Effect.gen(function*() {
    const { responses } = services
    const notFound = ApiError.make.notFound(`No response ${id}, or its result expired.`, "response_id")
    const found = yield* responses.get(id)
    if (Option.isNone(found) || found.value.orgId !== orgOf(principal)) return yield* Effect.fail(notFound)
    const record = found.value
    const nowMillis = yield* Clock.currentTimeMillis
    if (Retention.isExpired(record, nowMillis, services.retentionMillis)) {
      yield* responses.remove(id)
      return yield* Effect.fail(notFound)
    }
    if (ModelResponse.isFinished(record.object.status) && record.firstDeliveredAtMillis === null) {
      yield* responses.update(id, (current) => ({
        ...current,
        firstDeliveredAtMillis: current.firstDeliveredAtMillis ?? nowMillis
      }))
    }
    return record.object
  })

/** `foreground` of the engine (see {@link ResponseEngine}): a failed model answer is a `ServerError`. */
const runForeground = (services: EngineServices, principal: PrincipalShape, prepared: Prepared) =>
  Effect.gen(function*() {
    const base = yield* startResponse(services, principal, prepared, "in_progress")
    const final = yield* runDirect(services, orgOf(principal), "foreground", prepared, base)
    if (final.status === "failed") {
      const error = final.error as { readonly message?: string; readonly code?: string } | null
      return yield* Effect.fail(ApiError.make.server(
        `The model failed: ${error?.message ?? "no answer"} The failed response ${final.id} stays readable with ` +
          `GET /v1/responses/${final.id}.`,
        error?.code ?? null
      ))
    }
    return final
  })

/** `background` of the engine (see {@link ResponseEngine}): stored `queued` with its job, then queued for a worker. */
const acceptBackground = (services: EngineServices, principal: PrincipalShape, prepared: Prepared) =>
  Effect.gen(function*() {
    const notBeforeMillis = (yield* Clock.currentTimeMillis) + Duration.toMillis(services.config.backgroundDelay)
    // The response and its job are stored together: a crash keeps both (the job runs after the restart) or neither.
    const queued = yield* services.transactions.atomically(Effect.tap(
      startResponse(services, principal, prepared, "queued"),
      (queued) =>
        services.durableWork.addJob({ responseId: queued.id, orgId: orgOf(principal), prepared, notBeforeMillis })
    ))
    countJob(services.inFlight, orgOf(principal), 1)
    yield* Queue.offer(services.jobs, { orgId: orgOf(principal), prepared, queued, notBeforeMillis })
    return queued
  })

/**
 * One background request: not before `backgroundDelay` after its acceptance, stored `in_progress`, then run to its
 * final object (and webhook).
 */
const runBackgroundJob = (services: EngineServices, job: BackgroundJob) =>
  Effect.gen(function*() {
    const wait = job.notBeforeMillis - (yield* Clock.currentTimeMillis)
    if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
    const inProgress = new ModelResponse.ModelResponse({ ...job.queued, status: "in_progress" }, true)
    yield* services.responses.update(job.queued.id, (record) => ({ ...record, object: inProgress }))
    yield* runDirect(services, job.orgId, "background", job.prepared, inProgress)
    yield* services.durableWork.finishJob(job.queued.id)
  }).pipe(Effect.ensuring(Effect.sync(() => countJob(services.inFlight, job.orgId, -1))), Effect.catchAllCause((cause) =>
    Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.logError("background response failed", cause)
  ))

/**
 * A job taken over from the store (after a restart, or from an instance that is gone): run again from its queued
 * object, unless its response is already finished (the crash came after it) or gone.
 */
const takeOverJob = (services: EngineServices, stored: StoredJob) =>
  Effect.gen(function*() {
    const record = yield* services.responses.get(stored.responseId)
    if (Option.isNone(record) || ModelResponse.isFinished(record.value.object.status)) {
      return yield* services.durableWork.finishJob(stored.responseId)
    }
    const queued = new ModelResponse.ModelResponse({ ...record.value.object, status: "queued" }, true)
    const prepared = { ...stored.prepared, webhookToken: record.value.webhookToken }
    countJob(services.inFlight, stored.orgId, 1)
    yield* Queue.offer(services.jobs, { orgId: stored.orgId, prepared, queued, notBeforeMillis: stored.notBeforeMillis })
  })

/**
 * Starts the background work of the engine in the layer's scope: the sweep of expired results, the take-over of jobs
 * whose owner is gone (a store that keeps work only), and the workers: at most `backgroundConcurrency` background
 * requests run at once, the others wait in the queue (one offer per request, no fiber each). Stopped with the layer:
 * a request in progress is stored cancelled.
 */
const startBackgroundWork = (
  services: EngineServices,
  retention: ReturnType<typeof Retention.make>,
  backgroundConcurrency: number
) =>
  Effect.gen(function*() {
    const { config, durableWork } = services
    // Also when an advance of the virtual clock ends (ServiceClock.ts).
    yield* ServiceClock.registerDue({ name: "result retention", runDue: retention.sweep })
    yield* retention.sweep.pipe(
      Effect.catchAllCause(StoreOutage.logBackgroundFailure("sweeping expired results")),
      Effect.repeat(Schedule.spaced(config.sweepInterval)),
      Effect.forkScoped
    )
    if (durableWork.resumable) {
      yield* durableWork.claimJobs.pipe(
        Effect.flatMap(Effect.forEach((stored) => takeOverJob(services, stored), { discard: true })),
        Effect.catchAllCause(StoreOutage.logBackgroundFailure("taking over background responses")),
        Effect.repeat(Schedule.spaced(config.recoveryInterval)),
        Effect.forkScoped
      )
    }
    const worker = Effect.forever(Effect.flatMap(Queue.take(services.jobs), (job) => runBackgroundJob(services, job)))
    yield* Effect.forkScoped(
      Effect.all(Array.from({ length: Math.max(1, backgroundConcurrency) }, () => worker), {
        concurrency: "unbounded",
        discard: true
      })
    )
  })

/**
 * The engine, with background work running in the layer's scope. Needs the settings, the model, the Responses
 * repository and webhook delivery.
 */
export const layerWith = (options: EngineOptions = {}) =>
  Layer.scoped(
    ResponseEngine,
    Effect.gen(function*() {
      const config = yield* LocalServiceConfig
      const model = yield* LanguageModel
      const responses = yield* Responses
      const webhooks = yield* WebhookDelivery
      const transactions = yield* Transactions
      const retentionMillis = Duration.toMillis(config.responseRetention)
      const services: EngineServices = {
        config,
        responses,
        durableWork: yield* DurableWork,
        transactions,
        jobs: yield* Queue.unbounded<BackgroundJob>(),
        retentionMillis,
        session: ResponseSession.make({
          model,
          promptCache: new PromptCache(),
          finish: Completion.make(responses, webhooks, transactions)
        }),
        inFlight: new Map()
      }
      const retention = Retention.make(responses, yield* Logs, retentionMillis)
      yield* startBackgroundWork(services, retention, options.backgroundConcurrency ?? 32)
      return {
        foreground: (principal, prepared) => runForeground(services, principal, prepared),
        stream: (principal, prepared) =>
          Effect.map(
            startResponse(services, principal, prepared, "in_progress"),
            (base) => runStream(services, orgOf(principal), prepared, base)
          ),
        background: (principal, prepared) => acceptBackground(services, principal, prepared),
        retrieve: (principal, id) => retrieveResponse(services, principal, id),
        backgroundInFlight: (orgId) => Effect.sync(() => services.inFlight.get(orgId) ?? 0)
      } satisfies ResponseEngine["Type"]
    })
  )

/** A background request waiting for a worker: the org it acts in, the request, its queued object, its start time. */
interface BackgroundJob {
  readonly orgId: string
  readonly prepared: Prepared
  readonly queued: ModelResponse.ModelResponse
  readonly notBeforeMillis: number
}

/** The engine with the default options. */
export const layer = layerWith()

/** The organization a principal acts in (checked by the handler: keys without one get 403 before this). */
const orgOf = (principal: PrincipalShape): string => principal.organizationOfUser ?? ""
