/**
 * The model behind the local service's Responses area. The embedded default is a deterministic local model: the same
 * prompt gives the same text, streamed one token at a time (tokens of the o200k tokenizer from `gpt-tokenizer`).
 *
 * Source: spec "What the service does" (an asynchronous text-generation API); docs/ASSUMPTIONS.md (the local model).
 *
 * @since 0.1.0
 */
import { Context, Data, Layer, Stream } from "effect"
import { decode, encode } from "gpt-tokenizer"

/** One message of the prompt, as plain text. `role` is `system`, `developer`, `user` or `assistant`. */
export interface PromptMessage {
  readonly role: string
  readonly text: string
}

/**
 * What the model is asked: the prompt messages (instructions first, as a system message), or the pre-tokenized prompt
 * `promptTokenIds` forwarded verbatim; `maxOutputTokens` bounds the output (tokens).
 */
export interface GenerateRequest {
  readonly model: string
  readonly messages: ReadonlyArray<PromptMessage>
  readonly promptTokenIds: ReadonlyArray<number> | undefined
  readonly maxOutputTokens: number | undefined
  readonly temperature: number | undefined
  readonly topP: number | undefined
}

/** The model failed (an upstream answered an error, or could not be reached). */
export class LanguageModelError extends Data.TaggedError("LanguageModelError")<{ readonly message: string }> {}

/** A text generator: a stream of text pieces, one per output token. */
export class LanguageModel extends Context.Tag("boxkit/server/LanguageModel")<LanguageModel, {
  readonly generate: (request: GenerateRequest) => Stream.Stream<string, LanguageModelError>
}>() {}

/** Counts tokens of a text with the o200k tokenizer. */
export const countTokens = (text: string): number => encode(text).length

/** Tokenizes a text with the o200k tokenizer. */
export const tokenize = (text: string): Array<number> => encode(text)

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

const hash = (text: string): number => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 16777619) >>> 0
  }
  return h
}

/** The deterministic reply of the local model to a request (before any token limit). */
export const localReply = (request: GenerateRequest): string => {
  const prompt = request.promptTokenIds !== undefined
    ? decode(request.promptTokenIds.filter((id) => id < 200000))
    : request.messages.filter((message) => message.role === "user").map((message) => message.text).join("\n")
  const seed = hash(`${request.model}\u0000${prompt}\u0000${request.messages.map((m) => m.role + m.text).join("\u0000")}`)
  const quoted = prompt.replace(/\s+/g, " ").trim().slice(0, 80)
  const first = sentences[seed % sentences.length]
  const second = sentences[(seed >>> 8) % sentences.length]
  return `You said: "${quoted}". ${first} ${second === first ? sentences[(seed + 1) % sentences.length] : second}`
}

/** The deterministic local model: {@link localReply}, streamed one token at a time. */
export const localLayer = Layer.succeed(LanguageModel, {
  generate: (request) =>
    Stream.suspend(() => Stream.fromIterable(encode(localReply(request)).map((token) => decode([token]))))
})
