/**
 * The o200k tokenizer of the local service (`gpt-tokenizer`'s o200k encoding, TokenizerTables.ts), loaded on first use.
 *
 * The tokenizer's tables are most of the service's code and slow and heavy to load (docs/decisions/0002-what-the-fast-paths-save.md), yet only the
 * Responses area needs them. So they are not imported at start: {@link load} imports
 * them once (the Responses engine runs it before it counts or cuts any text) and the synchronous functions here use
 * them afterwards. `boxkit serve` therefore starts without them and a service that never answers a response never
 * loads them; the first response pays the load once.
 *
 * Source: BENCHMARKS.md sections 4 and 5 (cold start, memory); spec "POST {api_url}/responses" (usage in tokens);
 * docs/ASSUMPTIONS.md (the tokenizer).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"

interface Library {
  readonly encode: (text: string) => Array<number>
  readonly decode: (ids: Iterable<number>) => string
  readonly vocabularySize: number
  /** The UTF-8 decoder `decode` shares between calls (the same module instance as the package's own). */
  readonly sharedDecoder: { decode: (input?: Uint8Array) => string }
}

let library: Library | undefined
let loading: Promise<Library> | undefined

const importLibrary = (): Promise<Library> =>
  import("./TokenizerTables.js").then((tables) => {
    library = tables
    return library
  })

/**
 * Loads the tokenizer once (later runs do nothing). Every function of this module needs it to have run; the
 * Responses engine and the local model run it before they use them. Never fails.
 */
export const load: Effect.Effect<void> = Effect.suspend(() =>
  library !== undefined ? Effect.void : Effect.asVoid(Effect.promise(() => loading ??= importLibrary()))
)

/** True once {@link load} has finished. */
export const isLoaded = (): boolean => library !== undefined

const loaded = (): Library => {
  if (library === undefined) throw new Error("The tokenizer is not loaded: run Tokenizer.load first.")
  return library
}

/** Tokenizes a text with the o200k tokenizer. Needs `Tokenizer.load` (the Responses engine runs it). */
export const encode = (text: string): Array<number> => loaded().encode(text)

/** Counts the tokens of a text with the o200k tokenizer. Needs `Tokenizer.load` (the Responses engine runs it). */
export const countTokens = (text: string): number => loaded().encode(text).length

/**
 * `gpt-tokenizer`'s `decode` with its shared UTF-8 decoder flushed before and after: the library decodes in streaming
 * mode with one module-wide `TextDecoder`, so the bytes of a character cut at the end of one call would otherwise
 * come out at the start of the next, unrelated call (as `\uFFFD`). Flushed, each call stands alone and a character
 * cut at its end is one `\uFFFD`.
 */
const decodeAlone = (tokenizer: Library, ids: ReadonlyArray<number>): string => {
  tokenizer.sharedDecoder.decode()
  const text = tokenizer.decode(ids)
  return text + tokenizer.sharedDecoder.decode()
}

/**
 * Decodes token ids with the o200k tokenizer; ids outside its vocabulary are skipped. Each call stands alone: a
 * character whose tokens are cut at the end comes out as one `\uFFFD`. Needs `Tokenizer.load` (the Responses engine runs it).
 */
export const decodeKnown = (ids: Iterable<number>): string => {
  const tokenizer = loaded()
  const known: Array<number> = []
  for (const id of ids) if (id < tokenizer.vocabularySize) known.push(id)
  try {
    return decodeAlone(tokenizer, known)
  } catch {
    return known.flatMap((id) => {
      try {
        return [decodeAlone(tokenizer, [id])]
      } catch {
        return []
      }
    }).join("")
  }
}
