/**
 * One model response being generated: the model's chunks applied within the `max_output_tokens` budget, the output
 * items, the Responses streaming events they make, usage, and the final object stored once (Completion.ts). Both ways
 * of running a response (streamed, or the final object only) go through it, so they end in the same final object
 * (test/responses/EngineEquivalence.test.ts).
 *
 * Source: spec "POST {api_url}/responses", "Model response object"; event names and shapes: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import * as ModelResponse from "../../Domain/ModelResponse.js"
import type * as Completion from "./Completion.js"
import {
  decodeKnown,
  type GenerateRequest,
  type LanguageModel,
  type LanguageModelError,
  type ModelChunk,
  tokenize
} from "./LanguageModel.js"
import type { PromptCache } from "./PromptCache.js"
import { type Prepared, usageOf } from "./ResponseRequest.js"
import * as StoreOutage from "../state/StoreOutage.js"

/** One Responses streaming event (`ModelResponse.StreamEvent`). */
export type StreamEvent = ModelResponse.StreamEvent

/** The JSON form of a Model response object (`ModelResponse.toJson`: the schema's encoding, without its cost). */
export const encodeResponse = ModelResponse.toJson

/** What a session needs: the model, the prompt cache counting cached tokens, and the step that finishes a response. */
export interface SessionServices {
  readonly model: LanguageModel["Type"]
  readonly promptCache: PromptCache
  readonly finish: ReturnType<typeof Completion.make>
}

/** `reasoning.effort` of a request, when it is a string. */
const effortOf = (reasoning: unknown): string | undefined =>
  typeof reasoning === "object" && reasoning !== null && typeof (reasoning as { effort?: unknown }).effort === "string"
    ? (reasoning as { effort: string }).effort
    : undefined

/** Sessions over `services`. */
export const make = ({ finish, model, promptCache }: SessionServices) =>
(orgId: string, mode: Completion.Mode, prepared: Prepared, base: ModelResponse.ModelResponse) => {
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
            error: { code: error.code ?? "server_error", message: error.message }
          }, true)
          return settle(final).pipe(
            Effect.zipRight(
              Effect.logWarning("model response failed").pipe(
                Effect.annotateLogs({ response_id: base.id, reason: error.message })
              )
            ),
            // What exactly happened (an upstream's address and answer) only in the debug log, never to callers.
            Effect.zipRight(
              error.detail === undefined
                ? Effect.void
                : Effect.logDebug("model failure detail").pipe(
                  Effect.annotateLogs({ response_id: base.id, detail: error.detail })
                )
            ),
            Effect.as(final)
          )
        }),
      /**
       * Ended before its end (the client went away, or the service stops): stored `cancelled`. A store that fails
       * then is logged (nobody waits for this answer); the record keeps the status stored before.
       */
      cancelled: Effect.suspend(() =>
        finished
          ? Effect.void
          : Effect.catchAll(
            finish(mode, base, new ModelResponse.ModelResponse({ ...base, status: "cancelled" }, true)),
            StoreOutage.logStoreFailure("storing a cancelled response")
          )
      ),
      event
    }
  }
