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

/** An output item being generated: its place in `output`, its id and its text so far. */
interface OpenItem {
  readonly index: number
  readonly id: string
  text: string
}

/**
 * The output of one response being generated: the model's chunks applied within the `max_output_tokens` budget
 * (`limit`, in tokens), the output items (a reasoning item, then a message), and the streaming events they make, each
 * with the next `sequence_number`. `event` and `onChunk` are fields so that they can be passed on unbound.
 */
class SessionOutput {
  sequence = 0
  /** Output tokens applied so far, and of them reasoning tokens. */
  used = 0
  reasoningTokens = 0
  /** The budget cut the output short (`incomplete`); `stopped`: no later chunk is applied. */
  truncated = false
  stopped = false
  readonly items: Array<unknown> = []
  reasoning: (OpenItem & { done: boolean }) | null = null
  message: OpenItem | null = null

  constructor(readonly idSuffix: string, readonly limit: number) {}

  /** An event of `type` with `fields` and the next sequence number. */
  readonly event = (type: string, fields: Record<string, unknown>): StreamEvent => ({
    type,
    sequence_number: this.sequence++,
    ...fields
  })

  reasoningItem(text: string | null) {
    return {
      type: "reasoning",
      id: this.reasoning!.id,
      summary: [],
      content: text === null ? [] : [{ type: "reasoning_text", text }]
    }
  }

  messageItem(status: string, text: string | null) {
    return {
      type: "message",
      id: this.message!.id,
      status,
      role: "assistant",
      content: text === null ? [] : [{ type: "output_text", text, annotations: [], logprobs: [] }]
    }
  }

  openReasoning(): Array<StreamEvent> {
    const reasoning = { index: this.items.length, id: `rs_${this.idSuffix}`, text: "", done: false }
    this.reasoning = reasoning
    this.items.push(null)
    return [
      this.event("response.output_item.added", { output_index: reasoning.index, item: this.reasoningItem(null) }),
      this.event("response.content_part.added", {
        item_id: reasoning.id,
        output_index: reasoning.index,
        content_index: 0,
        part: { type: "reasoning_text", text: "" }
      })
    ]
  }

  closeReasoning(): Array<StreamEvent> {
    const reasoning = this.reasoning
    if (reasoning === null || reasoning.done) return []
    reasoning.done = true
    const { id, index, text } = reasoning
    this.items[index] = this.reasoningItem(text)
    return [
      this.event("response.reasoning_text.done", { item_id: id, output_index: index, content_index: 0, text }),
      this.event("response.content_part.done", {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: "reasoning_text", text }
      }),
      this.event("response.output_item.done", { output_index: index, item: this.items[index] })
    ]
  }

  openMessage(): Array<StreamEvent> {
    const message = { index: this.items.length, id: `msg_${this.idSuffix}`, text: "" }
    this.message = message
    this.items.push(null)
    return [
      this.event("response.output_item.added", { output_index: message.index, item: this.messageItem("in_progress", null) }),
      this.event("response.content_part.added", {
        item_id: message.id,
        output_index: message.index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] }
      })
    ]
  }

  closeMessage(status: string): Array<StreamEvent> {
    if (this.message === null) return []
    const { id, index, text } = this.message
    this.items[index] = this.messageItem(status, text)
    return [
      this.event("response.output_text.done", { item_id: id, output_index: index, content_index: 0, text, logprobs: [] }),
      this.event("response.content_part.done", {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text, annotations: [], logprobs: [] }
      }),
      this.event("response.output_item.done", { output_index: index, item: this.items[index] })
    ]
  }

  /** Applies one model chunk within the `max_output_tokens` budget and returns its events. */
  readonly onChunk = (chunk: ModelChunk): Array<StreamEvent> => {
    if (this.stopped) return []
    if (chunk._tag === "Length") {
      this.truncated = true
      this.stopped = true
      return []
    }
    let { text, tokens } = chunk
    if (this.used + tokens > this.limit) {
      const room = this.limit - this.used
      text = decodeKnown(tokenize(text).slice(0, room)).replace(/\uFFFD+$/, "")
      tokens = room
      this.truncated = true
      this.stopped = true
    }
    this.used += tokens
    if (chunk._tag === "Reasoning") {
      this.reasoningTokens += tokens
      return this.reasoningDelta(text)
    }
    return this.messageDelta(text)
  }

  /** The events of reasoning `text`: the reasoning item opened first, then its delta (none for no text). */
  reasoningDelta(text: string): Array<StreamEvent> {
    const events: Array<StreamEvent> = []
    if (this.reasoning === null) events.push(...this.openReasoning())
    if (text !== "") {
      const reasoning = this.reasoning!
      reasoning.text += text
      events.push(this.event("response.reasoning_text.delta", {
        item_id: reasoning.id,
        output_index: reasoning.index,
        content_index: 0,
        delta: text
      }))
    }
    return events
  }

  /** The events of answer `text`: the reasoning item closed and the message opened first, then its delta. */
  messageDelta(text: string): Array<StreamEvent> {
    const events: Array<StreamEvent> = []
    events.push(...this.closeReasoning())
    if (this.message === null) events.push(...this.openMessage())
    if (text !== "") {
      const message = this.message!
      message.text += text
      events.push(this.event("response.output_text.delta", {
        item_id: message.id,
        output_index: message.index,
        content_index: 0,
        delta: text,
        logprobs: []
      }))
    }
    return events
  }

  /** Closes the items for a final `status` and returns the closing events. */
  close(status: string): Array<StreamEvent> {
    const events = this.closeReasoning()
    if (this.message === null && !(this.truncated && this.reasoning !== null)) events.push(...this.openMessage())
    events.push(...this.closeMessage(status))
    return events
  }
}

/** The model's request for `prepared`, streamed or not. */
const generateRequestOf = (prepared: Prepared, streamed: boolean): GenerateRequest => ({
  model: prepared.request.model,
  messages: prepared.messages,
  promptTokenIds: prepared.request.prompt_token_ids,
  maxOutputTokens: prepared.request.max_output_tokens ?? undefined,
  temperature: prepared.request.temperature ?? undefined,
  topP: prepared.request.top_p ?? undefined,
  reasoningEffort: effortOf(prepared.request.reasoning),
  stream: streamed
})

/** The final object of a response the model finished: `completed`, or `incomplete` at the token budget, with usage. */
const finishedObject = (
  promptCache: PromptCache,
  orgId: string,
  prepared: Prepared,
  base: ModelResponse.ModelResponse,
  output: SessionOutput,
  status: "completed" | "incomplete"
) => {
  const counted = usageOf(promptCache, orgId, prepared, output.used, output.reasoningTokens)
  return new ModelResponse.ModelResponse({
    ...base,
    status,
    usage: counted.usage,
    metadata: {
      ...base.metadata,
      supercached_input_tokens: String(counted.cache.cached),
      supercache_write_input_tokens: String(counted.cache.written)
    },
    output: output.items,
    incomplete_details: output.truncated ? { reason: "max_output_tokens" } : null
  }, true)
}

/**
 * Logs why the model failed response `responseId`; what exactly happened (an upstream's address and answer) only in
 * the debug log, never to callers.
 */
const logModelFailure = (responseId: string, error: LanguageModelError) =>
  Effect.logWarning("model response failed").pipe(
    Effect.annotateLogs({ response_id: responseId, reason: error.message }),
    Effect.zipRight(
      error.detail === undefined
        ? Effect.void
        : Effect.logDebug("model failure detail").pipe(
          Effect.annotateLogs({ response_id: responseId, detail: error.detail })
        )
    )
  )

/** Sessions over `services`. */
export const make = ({ finish, model, promptCache }: SessionServices) =>
(orgId: string, mode: Completion.Mode, prepared: Prepared, base: ModelResponse.ModelResponse) => {
  const output = new SessionOutput(
    base.id.slice("resp_".length),
    prepared.request.max_output_tokens ?? Number.POSITIVE_INFINITY
  )
  let finished = false

  /** Stores `final` (and hands its webhook over) once; later calls do nothing. */
  const settle = (final: ModelResponse.ModelResponse) =>
    Effect.suspend(() => {
      finished = true
      return finish(mode, base, final)
    })

  return {
    /** The model's chunks for this response, token by token, until the budget stops them. */
    chunks: () => model.generate(generateRequestOf(prepared, true)).pipe(Stream.takeWhile(() => !output.stopped)),
    /**
     * The model's whole answer applied (whole pieces; the model's `answer` when it has one, else its stream
     * collected until the budget stops it).
     */
    applyAnswer: (): Effect.Effect<void, LanguageModelError> =>
      model.answer !== undefined
        ? Effect.map(model.answer(generateRequestOf(prepared, false)), (chunks) => {
          for (const chunk of chunks) output.onChunk(chunk)
        })
        : Stream.runForEach(
          model.generate(generateRequestOf(prepared, false)).pipe(Stream.takeWhile(() => !output.stopped)),
          (chunk) => Effect.sync(() => output.onChunk(chunk))
        ),
    /** Applies one model chunk within the `max_output_tokens` budget and returns its events. */
    onChunk: output.onChunk,
    /** `response.created` and `response.in_progress`. */
    head: (): Array<StreamEvent> => [
      output.event("response.created", { response: encodeResponse(base) }),
      output.event("response.in_progress", { response: encodeResponse(base) })
    ],
    /**
     * The model finished: closes the items, counts usage, stores the final object (`completed`, or `incomplete`
     * at the token budget) and returns it with the closing events.
     */
    complete: Effect.suspend(() => {
      const status = output.truncated ? "incomplete" : "completed"
      const events = output.close(status)
      const final = finishedObject(promptCache, orgId, prepared, base, output, status)
      return Effect.as(settle(final), { final, events })
    }),
    /** The model failed: stores the `failed` object (with the output so far) and logs why. */
    fail: (error: LanguageModelError) =>
      Effect.suspend(() => {
        const final = new ModelResponse.ModelResponse({
          ...base,
          status: "failed",
          output: output.items.filter((item) => item !== null),
          error: { code: error.code ?? "server_error", message: error.message }
        }, true)
        return settle(final).pipe(Effect.zipRight(logModelFailure(base.id, error)), Effect.as(final))
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
    /** An event of `type` with `fields` and the next sequence number. */
    event: output.event
  }
}
