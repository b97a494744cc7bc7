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
import {
  decodeKnown,
  type GenerateRequest,
  LanguageModel,
  type LanguageModelError,
  type ModelChunk,
  tokenize
} from "./LanguageModel.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import { PromptCache } from "./PromptCache.js"
import { DurableWork, type StoredJob } from "../state/DurableWork.js"
import { Responses } from "../state/Repositories.js"
import { Transactions } from "../state/Transactions.js"
import { initialObject, type Prepared, usageOf } from "./ResponseRequest.js"
import * as Completion from "./Completion.js"
import * as Retention from "./Retention.js"
import * as Tokenizer from "./Tokenizer.js"
import { WebhookDelivery } from "./WebhookDelivery.js"

/** One Responses streaming event (`ModelResponse.StreamEvent`). */
export type StreamEvent = ModelResponse.StreamEvent

const hex32 = () => crypto.randomUUID().replace(/-/g, "")

/** The JSON form of a Model response object (`ModelResponse.toJson`: the schema's encoding, without its cost). */
const encodeResponse = ModelResponse.toJson

type Mode = Completion.Mode

/** Options of the engine beyond {@link LocalServiceConfig}. */
export interface EngineOptions {
  /** Background responses generated at once; the others wait in order (default 32). */
  readonly backgroundConcurrency?: number
}

/** The Responses engine of the local service. */
export class ResponseEngine extends Context.Tag("boxkit/server/ResponseEngine")<ResponseEngine, {
  /**
   * Runs a foreground request to its end and returns the finished object (status `completed`, or `incomplete` at
   * `max_output_tokens`). A model failure is a 500 `server_error` naming the response id (the failed object stays
   * readable).
   */
  readonly foreground: (
    principal: PrincipalShape,
    prepared: Prepared
  ) => Effect.Effect<ModelResponse.ModelResponse, ApiError.ServerError>
  /** Runs a foreground request as a stream of Responses events; the result is stored before the terminal event. */
  readonly stream: (principal: PrincipalShape, prepared: Prepared) => Effect.Effect<Stream.Stream<StreamEvent>>
  /** Accepts a background request: stores it `queued` and returns that object; it is completed later. */
  readonly background: (principal: PrincipalShape, prepared: Prepared) => Effect.Effect<ModelResponse.ModelResponse>
  /**
   * Reads a response of the caller's organization. A finished result's first read starts its retention clock; an
   * expired one is gone (404 `not_found_error`, param `response_id`).
   */
  readonly retrieve: (
    principal: PrincipalShape,
    id: string
  ) => Effect.Effect<ModelResponse.ModelResponse, ApiError.NotFoundError>
}>() {}

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
      const durableWork = yield* DurableWork
      const transactions = yield* Transactions
      /** Background requests waiting for a worker, in the order they were accepted. */
      const jobs = yield* Queue.unbounded<BackgroundJob>()
      const retentionMillis = Duration.toMillis(config.responseRetention)
      const promptCache = new PromptCache()
      const retention = Retention.make(responses, retentionMillis)

      const finish = Completion.make(responses, webhooks, transactions)

      /**
       * The state of one response being generated from `base` (status in_progress): the model's chunks applied within
       * the `max_output_tokens` budget, the output items, and the Responses events they make (`emit` false: the
       * events are not kept, for requests answered with the final object only). Both ways of running a response
       * ({@link runStream}, {@link runDirect}) go through it, so a streamed and a non-streamed response end in the same
       * final object.
       */
      const session = (orgId: string, mode: Mode, prepared: Prepared, base: ModelResponse.ModelResponse) => {
        let sequence = 0
        const event = (type: string, fields: Record<string, unknown>): StreamEvent => ({
          type,
          sequence_number: sequence++,
          ...fields
        })
        const limit = prepared.request.max_output_tokens ?? Number.POSITIVE_INFINITY
        const suffix = base.id.slice("resp_".length)
        let used = 0
        let reasoningTokens = 0
        let truncated = false
        let stopped = false
        let finished = false
        const items: Array<unknown> = []
        let reasoning: { index: number; id: string; text: string; done: boolean } | null = null
        let message: { index: number; id: string; text: string } | null = null

        const reasoningItem = (text: string | null) => ({
          type: "reasoning",
          id: reasoning!.id,
          summary: [],
          content: text === null ? [] : [{ type: "reasoning_text", text }]
        })
        const messageItem = (status: string, text: string | null) => ({
          type: "message",
          id: message!.id,
          status,
          role: "assistant",
          content: text === null ? [] : [{ type: "output_text", text, annotations: [], logprobs: [] }]
        })
        const openReasoning = (): Array<StreamEvent> => {
          reasoning = { index: items.length, id: `rs_${suffix}`, text: "", done: false }
          items.push(null)
          return [
            event("response.output_item.added", { output_index: reasoning.index, item: reasoningItem(null) }),
            event("response.content_part.added", {
              item_id: reasoning.id,
              output_index: reasoning.index,
              content_index: 0,
              part: { type: "reasoning_text", text: "" }
            })
          ]
        }
        const closeReasoning = (): Array<StreamEvent> => {
          if (reasoning === null || reasoning.done) return []
          reasoning.done = true
          const { id, index, text } = reasoning
          items[index] = reasoningItem(text)
          return [
            event("response.reasoning_text.done", { item_id: id, output_index: index, content_index: 0, text }),
            event("response.content_part.done", {
              item_id: id,
              output_index: index,
              content_index: 0,
              part: { type: "reasoning_text", text }
            }),
            event("response.output_item.done", { output_index: index, item: items[index] })
          ]
        }
        const openMessage = (): Array<StreamEvent> => {
          message = { index: items.length, id: `msg_${suffix}`, text: "" }
          items.push(null)
          return [
            event("response.output_item.added", { output_index: message.index, item: messageItem("in_progress", null) }),
            event("response.content_part.added", {
              item_id: message.id,
              output_index: message.index,
              content_index: 0,
              part: { type: "output_text", text: "", annotations: [], logprobs: [] }
            })
          ]
        }
        const closeMessage = (status: string): Array<StreamEvent> => {
          if (message === null) return []
          const { id, index, text } = message
          items[index] = messageItem(status, text)
          return [
            event("response.output_text.done", { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
            event("response.content_part.done", {
              item_id: id,
              output_index: index,
              content_index: 0,
              part: { type: "output_text", text, annotations: [], logprobs: [] }
            }),
            event("response.output_item.done", { output_index: index, item: items[index] })
          ]
        }

        /** Applies one model chunk within the `max_output_tokens` budget and returns its events. */
        const onChunk = (chunk: ModelChunk): Array<StreamEvent> => {
          if (stopped) return []
          if (chunk._tag === "Length") {
            truncated = true
            stopped = true
            return []
          }
          let { text, tokens } = chunk
          if (used + tokens > limit) {
            const room = limit - used
            text = decodeKnown(tokenize(text).slice(0, room)).replace(/\uFFFD+$/, "")
            tokens = room
            truncated = true
            stopped = true
          }
          used += tokens
          const events: Array<StreamEvent> = []
          if (chunk._tag === "Reasoning") {
            reasoningTokens += tokens
            if (reasoning === null) events.push(...openReasoning())
            if (text !== "") {
              reasoning!.text += text
              events.push(event("response.reasoning_text.delta", {
                item_id: reasoning!.id,
                output_index: reasoning!.index,
                content_index: 0,
                delta: text
              }))
            }
          } else {
            events.push(...closeReasoning())
            if (message === null) events.push(...openMessage())
            if (text !== "") {
              message!.text += text
              events.push(event("response.output_text.delta", {
                item_id: message!.id,
                output_index: message!.index,
                content_index: 0,
                delta: text,
                logprobs: []
              }))
            }
          }
          return events
        }

        /** Stores `final` (and hands its webhook over) once; later calls do nothing. */
        const settle = (final: ModelResponse.ModelResponse) =>
          Effect.suspend(() => {
            finished = true
            return finish(mode, base, final)
          })

        const generateRequest = (streamed: boolean): GenerateRequest => ({
          model: prepared.request.model,
          messages: prepared.messages,
          promptTokenIds: prepared.request.prompt_token_ids,
          maxOutputTokens: prepared.request.max_output_tokens ?? undefined,
          temperature: prepared.request.temperature ?? undefined,
          topP: prepared.request.top_p ?? undefined,
          reasoningEffort: effortOf(prepared.request.reasoning),
          stream: streamed
        })

        return {
          /** The model's chunks for this response, token by token, until the budget stops them. */
          chunks: () => model.generate(generateRequest(true)).pipe(Stream.takeWhile(() => !stopped)),
          /**
           * The model's whole answer applied (whole pieces; the model's `answer` when it has one, else its stream
           * collected until the budget stops it).
           */
          applyAnswer: (): Effect.Effect<void, LanguageModelError> =>
            model.answer !== undefined
              ? Effect.map(model.answer(generateRequest(false)), (chunks) => {
                for (const chunk of chunks) onChunk(chunk)
              })
              : Stream.runForEach(
              model.generate(generateRequest(false)).pipe(Stream.takeWhile(() => !stopped)),
              (chunk) => Effect.sync(() => onChunk(chunk))
            ),
          onChunk,
          /** `response.created` and `response.in_progress`. */
          head: (): Array<StreamEvent> => [
            event("response.created", { response: encodeResponse(base) }),
            event("response.in_progress", { response: encodeResponse(base) })
          ],
          /**
           * The model finished: closes the items, counts usage, stores the final object (`completed`, or `incomplete`
           * at the token budget) and returns it with the closing events.
           */
          complete: Effect.suspend(() => {
            const status = truncated ? "incomplete" : "completed"
            const events = closeReasoning()
            if (message === null && !(truncated && reasoning !== null)) events.push(...openMessage())
            events.push(...closeMessage(status))
            const counted = usageOf(promptCache, orgId, prepared, used, reasoningTokens)
            const final = new ModelResponse.ModelResponse({
              ...base,
              status,
              usage: counted.usage,
              metadata: {
                ...base.metadata,
                supercached_input_tokens: String(counted.cache.cached),
                supercache_write_input_tokens: String(counted.cache.written)
              },
              output: items,
              incomplete_details: truncated ? { reason: "max_output_tokens" } : null
            }, true)
            return Effect.as(settle(final), { final, events })
          }),
          /** The model failed: stores the `failed` object (with the output so far) and logs why. */
          fail: (error: LanguageModelError) =>
            Effect.suspend(() => {
              const final = new ModelResponse.ModelResponse({
                ...base,
                status: "failed",
                output: items.filter((item) => item !== null),
                error: { code: "server_error", message: error.message }
              }, true)
              return settle(final).pipe(
                Effect.zipRight(
                  Effect.logWarning("model response failed").pipe(
                    Effect.annotateLogs({ response_id: base.id, reason: error.message })
                  )
                ),
                Effect.as(final)
              )
            }),
          /** Ended before its end (the client went away, or the service stops): stored `cancelled`. */
          cancelled: Effect.suspend(() =>
            finished
              ? Effect.void
              : finish(mode, base, new ModelResponse.ModelResponse({ ...base, status: "cancelled" }, true))
          ),
          event
        }
      }

      /**
       * The event stream of one streamed response from `base` (status in_progress) to its terminal event; the model
       * answers token by token. The final object is stored (and its webhook handed over) before the terminal event
       * is emitted. Interrupted before the end (the client went away, or the service stops), the response is stored
       * `cancelled`.
       */
      const runStream = (orgId: string, prepared: Prepared, base: ModelResponse.ModelResponse) =>
        Stream.suspend(() => {
          const state = session(orgId, "stream", prepared, base)
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
            Stream.catchAll((error) =>
              Stream.unwrap(Effect.map(state.fail(error), (final) =>
                Stream.make(state.event("response.failed", { response: encodeResponse(final) }))))
            ),
            Stream.ensuring(state.cancelled)
          )
        })

      /**
       * One response run to its final object without events (foreground and background requests): the model answers
       * in whole pieces, token counts are taken once per piece. Same final object as {@link runStream}. Interrupted
       * before the end, the response is stored `cancelled`, except a background one of a store that keeps work
       * (DurableWork.ts): the service is stopping, and its next start runs it again.
       */
      const runDirect = (orgId: string, mode: Mode, prepared: Prepared, base: ModelResponse.ModelResponse) =>
        Effect.suspend(() => {
          const state = session(orgId, mode, prepared, base)
          return state.applyAnswer().pipe(
            Effect.matchEffect({
              onFailure: state.fail,
              onSuccess: () => Effect.map(state.complete, ({ final }) => final)
            }),
            Effect.onInterrupt(() => mode === "background" && durableWork.resumable ? Effect.void : state.cancelled)
          )
        })

      const now = Effect.map(Clock.currentTimeMillis, (millis) => Math.floor(millis / 1000))

      /**
       * Stores a new response with `status` and returns its object. Loads the tokenizer first (once per process),
       * since every response is counted with it.
       */
      const start = (principal: PrincipalShape, prepared: Prepared, status: ModelResponse.ResponseStatus) =>
        Effect.gen(function*() {
          yield* Tokenizer.load
          yield* retention.sweep
          const object = initialObject(`resp_${hex32()}`, yield* now, prepared, status)
          yield* responses.insert({
            id: object.id,
            orgId: orgOf(principal),
            keyId: principal.keyId,
            object,
            webhookUrl: prepared.webhookUrl,
            webhookToken: prepared.webhookToken,
            firstDeliveredAtMillis: null
          })
          return object
        })

      const retrieve = (principal: PrincipalShape, id: string) =>
        Effect.gen(function*() {
          const notFound = ApiError.make.notFound(`No response ${id}, or its result expired.`, "response_id")
          const found = yield* responses.get(id)
          if (Option.isNone(found) || found.value.orgId !== orgOf(principal)) return yield* Effect.fail(notFound)
          const record = found.value
          const nowMillis = yield* Clock.currentTimeMillis
          if (Retention.isExpired(record, nowMillis, retentionMillis)) {
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

      const engine: ResponseEngine["Type"] = {
        foreground: (principal, prepared) =>
          Effect.gen(function*() {
            const base = yield* start(principal, prepared, "in_progress")
            const final = yield* runDirect(orgOf(principal), "foreground", prepared, base)
            if (final.status === "failed") {
              const reason = (final.error as { readonly message?: string } | null)?.message ?? "no answer"
              return yield* Effect.fail(ApiError.make.server(
                `The model failed: ${reason}. The failed response ${final.id} stays readable with GET /v1/responses/${final.id}.`
              ))
            }
            return final
          }),
        stream: (principal, prepared) =>
          Effect.map(
            start(principal, prepared, "in_progress"),
            (base) => runStream(orgOf(principal), prepared, base)
          ),
        background: (principal, prepared) =>
          Effect.gen(function*() {
            const notBeforeMillis = (yield* Clock.currentTimeMillis) + Duration.toMillis(config.backgroundDelay)
            // The response and its job are stored together: a crash keeps both (the job runs after the restart) or neither.
            const queued = yield* transactions.atomically(Effect.tap(
              start(principal, prepared, "queued"),
              (queued) => durableWork.addJob({ responseId: queued.id, orgId: orgOf(principal), prepared, notBeforeMillis })
            ))
            yield* Queue.offer(jobs, { orgId: orgOf(principal), prepared, queued, notBeforeMillis })
            return queued
          }),
        retrieve
      }

      /**
       * One background request: not before `backgroundDelay` after its acceptance, stored `in_progress`, then run to
       * its final object (and webhook).
       */
      const work = (job: BackgroundJob) =>
        Effect.gen(function*() {
          const wait = job.notBeforeMillis - (yield* Clock.currentTimeMillis)
          if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
          const inProgress = new ModelResponse.ModelResponse({ ...job.queued, status: "in_progress" }, true)
          yield* responses.update(job.queued.id, (record) => ({ ...record, object: inProgress }))
          yield* runDirect(job.orgId, "background", job.prepared, inProgress)
          yield* durableWork.finishJob(job.queued.id)
        }).pipe(Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.logError("background response failed", cause)
        ))

      /**
       * A job taken over from the store (after a restart, or from an instance that is gone): run again from its
       * queued object, unless its response is already finished (the crash came after it) or gone.
       */
      const takeOver = (stored: StoredJob) =>
        Effect.gen(function*() {
          const record = yield* responses.get(stored.responseId)
          if (Option.isNone(record) || ModelResponse.isFinished(record.value.object.status)) {
            return yield* durableWork.finishJob(stored.responseId)
          }
          const queued = new ModelResponse.ModelResponse({ ...record.value.object, status: "queued" }, true)
          const prepared = { ...stored.prepared, webhookToken: record.value.webhookToken }
          yield* Queue.offer(jobs, { orgId: stored.orgId, prepared, queued, notBeforeMillis: stored.notBeforeMillis })
        })
      if (durableWork.resumable) {
        yield* durableWork.claimJobs.pipe(
          Effect.flatMap(Effect.forEach(takeOver, { discard: true })),
          Effect.catchAllCause((cause) => Effect.logError("taking over background responses failed", cause)),
          Effect.repeat(Schedule.spaced(config.recoveryInterval)),
          Effect.forkScoped
        )
      }

      // The workers: at most `backgroundConcurrency` background requests run at once, the others wait in the queue
      // (one offer per request, no fiber each). Stopped with the layer: a request in progress is stored cancelled.
      const worker = Effect.forever(Effect.flatMap(Queue.take(jobs), work))
      yield* Effect.forkScoped(
        Effect.all(Array.from({ length: Math.max(1, options.backgroundConcurrency ?? 32) }, () => worker), {
          concurrency: "unbounded",
          discard: true
        })
      )

      return engine
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

/** `reasoning.effort` of a request, when it is a string. */
const effortOf = (reasoning: unknown): string | undefined =>
  typeof reasoning === "object" && reasoning !== null && typeof (reasoning as { effort?: unknown }).effort === "string"
    ? (reasoning as { effort: string }).effort
    : undefined
