/**
 * The o200k encoding of `gpt-tokenizer`, the only part of that package the local service uses. In the published
 * package this module is an esbuild bundle of itself (scripts/build.mjs), so an install carries the one encoding
 * instead of the whole package with every encoding (docs/ASSUMPTIONS.md "The package"); in a checkout it imports
 * the package.
 * Only Tokenizer.ts loads it, on first use.
 *
 * Source: docs/ASSUMPTIONS.md "The package" (install footprint); docs/ASSUMPTIONS.md (the tokenizer).
 *
 * @since 0.1.0
 */
import { decoder } from "gpt-tokenizer/BytePairEncodingCore"
import * as o200k from "gpt-tokenizer/encoding/o200k_base"

/** Tokenizes a text. */
export const encode: (text: string) => Array<number> = (text) => o200k.encode(text)

/** Decodes token ids (the module-wide UTF-8 decoder below is shared between calls, in streaming mode). */
export const decode: (ids: Iterable<number>) => string = o200k.decode

/** The number of token ids of the encoding. */
export const vocabularySize: number = o200k.vocabularySize

/** The UTF-8 decoder `decode` shares between calls. */
export const sharedDecoder: { decode: (input?: Uint8Array) => string } = decoder
