/**
 * The model behind the local service's Responses area, as a service with two implementations: the deterministic
 * local model here ({@link localLayer}) and an adapter to any OpenAI-compatible upstream (`UpstreamModel.ts`).
 *
 * A model answers a {@link GenerateRequest} with a stream of {@link ModelChunk}s: text and reasoning pieces with the
 * number of output tokens each one took, and a `Length` marker when the model itself stopped at its token limit; and
 * optionally with its whole answer at once (`answer`), for requests that are not streamed. The Responses engine turns
 * them into output items, streaming events and usage. The local model answers a streamed request token by token and
 * any other in whole pieces (each counted with the tokenizer once).
 *
 * Source: spec "What the service does" (an asynchronous text-generation API), "POST {api_url}/responses" (input
 * kinds, the instruction text as a system message, the pre-tokenized prompt forwarded verbatim); docs/ASSUMPTIONS.md
 * (the local model).
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer, Stream } from "effect"
import * as Tokenizer from "./Tokenizer.js"

/**
 * One part of a prompt message: text, an image (`url`: an http(s) URL or a `data:` URL, from `input_image.image_url`),
 * or an inline PDF (`data`: the `data:application/pdf;base64,...` URL from `input_file.file_data`).
 *
 * @since 0.1.0
 * @category Models
 */
export type PromptPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly url: string }
  | { readonly type: "file"; readonly filename: string; readonly data: string }

/** One message of the prompt. `role` is `system`, `developer`, `user` or `assistant`. @since 0.1.0 @category Models */
export interface PromptMessage {
  readonly role: "system" | "developer" | "user" | "assistant"
  readonly parts: ReadonlyArray<PromptPart>
}

/**
 * A message of `role` with one text part: `{ role, parts: [{ type: "text", text }] }`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const textMessage = (role: PromptMessage["role"], text: string): PromptMessage => ({
  role,
  parts: [{ type: "text", text }]
})

/**
 * The text of a message: its text parts, with `[image]` and `[file NAME]` standing for the other parts.
 *
 * @since 0.1.0
 * @category Utils
 */
export const messageText = (message: PromptMessage): string =>
  message.parts.map((part) =>
    part.type === "text" ? part.text : part.type === "image" ? "[image]" : `[file ${part.filename}]`
  ).join("\n")

/**
 * What the model is asked: the prompt `messages` (the instruction text first, as a system message), or the
 * pre-tokenized prompt `promptTokenIds` forwarded verbatim (the messages are then ignored); `maxOutputTokens` bounds the
 * output in tokens (reasoning included); `temperature` (0 to 2), `topP` (0 to 1); `reasoningEffort` from
 * `reasoning.effort` when the request sets one; `stream`: true when the caller streams the answer (Server-Sent Events),
 * so pieces should be small; otherwise (false or omitted) a model may answer in whole pieces.
 *
 * @since 0.1.0
 * @category Models
 */
export interface GenerateRequest {
  readonly model: string
  readonly messages: ReadonlyArray<PromptMessage>
  readonly promptTokenIds: ReadonlyArray<number> | undefined
  readonly maxOutputTokens: number | undefined
  readonly temperature: number | undefined
  readonly topP: number | undefined
  readonly reasoningEffort: string | undefined
  readonly stream?: boolean | undefined
}

/**
 * One piece of a model's answer: `Text` (answer text) or `Reasoning` (reasoning text) with the number of output
 * `tokens` it took (at least 0), or `Length`: the model stopped because it reached its output-token limit.
 *
 * @since 0.1.0
 * @category Models
 */
export type ModelChunk =
  | { readonly _tag: "Text"; readonly text: string; readonly tokens: number }
  | { readonly _tag: "Reasoning"; readonly text: string; readonly tokens: number }
  | { readonly _tag: "Length" }

/**
 * The model failed: an upstream answered an error or could not be reached. `message` says why.
 *
 * @since 0.1.0
 * @category Errors
 */
export class LanguageModelError extends Data.TaggedError("LanguageModelError")<{
  /** What callers are told: generic, never an upstream's body or address. */
  readonly message: string
  /** A stable code for callers (`upstream_unreachable`, `upstream_timeout`, `upstream_error`, `upstream_bad_answer`). */
  readonly code?: string | undefined
  /** What happened exactly, for the service's debug log only. */
  readonly detail?: string | undefined
}> {}

/**
 * A text generator: a stream of {@link ModelChunk}s for one request (`generate`), and optionally the whole answer at
 * once (`answer`: the same chunks as one array, for callers that do not stream; when absent, callers collect
 * `generate`).
 *
 * @since 0.1.0
 * @category Services
 */
export class LanguageModel extends Context.Tag("boxkit/server/LanguageModel")<LanguageModel, {
  readonly generate: (request: GenerateRequest) => Stream.Stream<ModelChunk, LanguageModelError>
  readonly answer?: ((request: GenerateRequest) => Effect.Effect<ReadonlyArray<ModelChunk>, LanguageModelError>) | undefined
}>() {}

/**
 * Counts the tokens of a text with the o200k tokenizer (`gpt-tokenizer`). Needs `Tokenizer.load`.
 *
 * @since 0.1.0
 * @category Tokenizer
 */
export const countTokens = Tokenizer.countTokens

/** Tokenizes a text with the o200k tokenizer. Needs `Tokenizer.load`. @since 0.1.0 @category Tokenizer */
export const tokenize = Tokenizer.encode

/**
 * Decodes token ids with the o200k tokenizer; ids outside its vocabulary are skipped; each call stands alone (see
 * `Tokenizer.decodeKnown`). Needs `Tokenizer.load`.
 *
 * @since 0.1.0
 * @category Tokenizer
 */
export const decodeKnown = Tokenizer.decodeKnown

/**
 * Splits token ids into text pieces on character boundaries: each piece is the decoded text of one or more tokens
 * (several when a character spans tokens) with its token count.
 *
 * @since 0.1.0
 * @category Tokenizer
 */
export const tokenPieces = (ids: ReadonlyArray<number>): Array<{ readonly text: string; readonly tokens: number }> => {
  const pieces: Array<{ text: string; tokens: number }> = []
  let pending: Array<number> = []
  for (const id of ids) {
    pending.push(id)
    const text = decodeKnown(pending)
    if (!text.endsWith("\uFFFD")) {
      pieces.push({ text, tokens: pending.length })
      pending = []
    }
  }
  if (pending.length > 0) pieces.push({ text: decodeKnown(pending), tokens: pending.length })
  return pieces
}

const sentences = [
  "Boxes boot in well under a second and can be paused, resumed and checkpointed.",
  "An app groups the boxes of one workload, so a listener allowlist can name it once.",
  "Egress policies state what a box may connect to and what happens to its HTTPS requests.",
  "Secrets never leave the service; egress rules add them to matching requests.",
  "Idempotency keys make a retried creation return the box that was already made.",
  "A background response is answered with an acceptance and completed later.",
  "Completion webhooks are retried in rounds, so receivers de-duplicate by response id.",
  "Results can expire ten minutes after their first successful delivery."
]

const fnv = (h: number, text: string): number => {
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 16777619) >>> 0
  }
  return h
}

/** True when a reasoning effort asks for reasoning (anything but `none` and `minimal`). @since 0.1.0 @category Utils */
export const reasons = (effort: string | undefined): boolean =>
  effort !== undefined && effort !== "none" && effort !== "minimal"

/**
 * The parts of the local model's answer text: the quote of the prompt (`You said: "..."."`) and the two sentences picked
 * by a hash of the whole prompt; the text is `quote first second`, joined by spaces.
 */
interface ReplyParts {
  readonly reasoning: string | null
  readonly quote: string
  readonly first: string
  readonly second: string
}

const replyParts = (request: GenerateRequest): ReplyParts => {
  let seed = fnv(2166136261, request.model)
  let prompt: string
  if (request.promptTokenIds !== undefined) {
    for (const id of request.promptTokenIds) {
      seed = Math.imul(seed ^ id, 16777619) >>> 0
    }
    prompt = decodeKnown(request.promptTokenIds.slice(0, 64))
  } else {
    // Hashed piece by piece (the same value as over the joined text): a large prompt is not copied.
    for (const message of request.messages) seed = fnv(fnv(fnv(fnv(seed, "\u0000"), message.role), "\u0000"), messageText(message))
    prompt = request.messages.filter((message) => message.role === "user").map(messageText).join("\n")
  }
  // Only the start is quoted: a large prompt is not rewritten whole. Leading blanks do not count against the start.
  const quoted = prompt.trimStart().slice(0, 4096).replace(/\s+/g, " ").trim().slice(0, 80)
  const first = sentences[seed % sentences.length]
  let second = sentences[(seed >>> 8) % sentences.length]
  if (second === first) second = sentences[(seed + 1) % sentences.length]
  const words = quoted === "" ? 0 : quoted.split(" ").length
  const reasoning = reasons(request.reasoningEffort)
    ? `The prompt has ${words} words and ${request.messages.length} messages; answer with two facts about boxes.`
    : null
  return { reasoning, quote: `You said: "${quoted}".`, first, second }
}

/**
 * The deterministic answer of the local model, before any token limit: `text` quotes the user's words (or the start of
 * the pre-tokenized prompt, decoded) and adds two sentences picked by a hash of the whole prompt; `reasoning` is a
 * short deterministic reasoning text when `reasoningEffort` asks for reasoning, else null. Needs `Tokenizer.load`.
 *
 * @since 0.1.0
 * @category Local model
 */
export const localReply = (request: GenerateRequest): { readonly reasoning: string | null; readonly text: string } => {
  const parts = replyParts(request)
  return { reasoning: parts.reasoning, text: `${parts.quote} ${parts.first} ${parts.second}` }
}

/**
 * The tokens of each fixed sentence with the space before it, counted once. The quote always ends in `".` and each
 * sentence starts with a space and a capital letter, so the tokenizer's pre-split cuts the text at those spaces:
 * the text's count is the quote's plus the sentences' (test/responses/EngineEquivalence.test.ts checks it).
 */
const sentenceTokens = new Map<string, number>()

const tokensOfSentence = (sentence: string): number => {
  let tokens = sentenceTokens.get(sentence)
  if (tokens === undefined) sentenceTokens.set(sentence, tokens = countTokens(` ${sentence}`))
  return tokens
}

/**
 * The chunks of the local model's answer: reasoning first, then text. Streamed (`stream` true): pieces of one token
 * (several only where a character spans tokens). Otherwise: the whole reasoning and the whole text, the reasoning counted
 * with the tokenizer once and the text as its quote plus the fixed sentences' counts, each counted once per process
 * (the same texts and token totals as the pieces).
 *
 * @since 0.1.0
 * @category Local model
 */
export const localChunks = (request: GenerateRequest): Array<ModelChunk> => {
  const parts = replyParts(request)
  const text = `${parts.quote} ${parts.first} ${parts.second}`
  const chunks: Array<ModelChunk> = []
  if (request.stream === true) {
    if (parts.reasoning !== null) {
      for (const piece of tokenPieces(tokenize(parts.reasoning))) chunks.push({ _tag: "Reasoning", ...piece })
    }
    for (const piece of tokenPieces(tokenize(text))) chunks.push({ _tag: "Text", ...piece })
    return chunks
  }
  if (parts.reasoning !== null) chunks.push({ _tag: "Reasoning", text: parts.reasoning, tokens: countTokens(parts.reasoning) })
  const tokens = countTokens(parts.quote) + tokensOfSentence(parts.first) + tokensOfSentence(parts.second)
  chunks.push({ _tag: "Text", text, tokens })
  return chunks
}

/**
 * The deterministic local model: {@link localChunks} of {@link localReply} (the tokenizer loaded first). It never
 * stops early on its own; the engine applies `max_output_tokens`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const localLayer = Layer.succeed(LanguageModel, {
  generate: (request) => Stream.unwrap(Effect.as(Tokenizer.load, Stream.suspend(() => Stream.fromIterable(localChunks(request))))),
  answer: (request) => Effect.zipRight(Tokenizer.load, Effect.sync(() => localChunks(request)))
})
