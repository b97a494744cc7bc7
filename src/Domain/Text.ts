/**
 * The one rule for text fields: what a name or a value may contain so that every store (memory, SQLite, PostgreSQL)
 * keeps exactly what was sent and gives one answer for one input. A NUL is refused by PostgreSQL's text columns and
 * cuts SQLite's C strings short; a lone surrogate half has no UTF-8 encoding (a store would write U+FFFD in its
 * place); a line break other than `\n` (U+2028, U+2029, U+0085) changes how a name reads in logs and terminals.
 *
 * Two kinds of text (docs/ASSUMPTIONS.md "Text fields"):
 * - a line of text ({@link isTextLine}: names): well-formed Unicode, no control characters (C0, DEL, C1: NUL, tab,
 *   `\n`, `\r`, ...) and no line or paragraph separator (U+2028, U+2029). Spec: box name "No control characters",
 *   policy name "No tabs, line breaks or other control characters".
 * - free text ({@link isFreeText}: secret values, which may be PEM keys with line breaks): well-formed Unicode and no
 *   NUL; tabs and line breaks are kept.
 *
 * Source: spec "Create a box" (name), "PATCH {base_url}/egress-policies/{policy_id}" (name), "Resources and their
 * fields / App" and "Secret"; docs/ASSUMPTIONS.md "Text fields".
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Control characters (C0 including NUL, tab and `\n`; DEL; C1 including U+0085) and U+2028, U+2029. */
const lineBreakOrControl = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

/** A surrogate half not paired with its other half (matched as a single code point in `u` mode). */
const loneSurrogate = /[\ud800-\udfff]/u

/**
 * True when `text` is well-formed Unicode: no lone surrogate half (UTF-16 code unit U+D800 to U+DFFF without its
 * pair), so it has an exact UTF-8 encoding.
 *
 * @since 0.1.0
 * @category text
 */
export const isWellFormed = (text: string): boolean => !loneSurrogate.test(text)

/**
 * True when `text` has a control character (C0, DEL or C1: NUL, tab, `\n`, `\r`, U+0085, ...) or a line or paragraph
 * separator (U+2028, U+2029).
 *
 * @since 0.1.0
 * @category text
 */
export const hasLineBreakOrControl = (text: string): boolean => lineBreakOrControl.test(text)

/**
 * True when `text` is a line of text: well-formed, without control characters or line breaks (see the module).
 *
 * @since 0.1.0
 * @category text
 */
export const isTextLine = (text: string): boolean => isWellFormed(text) && !hasLineBreakOrControl(text)

/**
 * True when `text` is free text: well-formed and without NUL (tabs and line breaks allowed).
 *
 * @since 0.1.0
 * @category text
 */
export const isFreeText = (text: string): boolean => isWellFormed(text) && !text.includes("\u0000")

/**
 * What is wrong with `text` as a line of text, as a message naming `field`; undefined when nothing is.
 *
 * @since 0.1.0
 * @category text
 */
export const textLineProblem = (field: string, text: string): string | undefined =>
  !isWellFormed(text)
    ? `${field} must be well-formed Unicode text (it has an unpaired surrogate)`
    : hasLineBreakOrControl(text)
    ? `${field} must not contain tabs, line breaks (including U+2028, U+2029) or other control characters`
    : undefined

/**
 * What is wrong with `text` as free text, as a message naming `field`; undefined when nothing is.
 *
 * @since 0.1.0
 * @category text
 */
export const freeTextProblem = (field: string, text: string): string | undefined =>
  !isWellFormed(text)
    ? `${field} must be well-formed Unicode text (it has an unpaired surrogate)`
    : text.includes("\u0000")
    ? `${field} must not contain the NUL character`
    : undefined

/**
 * The JSON Schema pattern of a line of text: no control character and no U+2028, U+2029 (unpaired surrogates cannot
 * be written in a pattern every JSON Schema tool reads; the descriptions say it).
 *
 * @since 0.1.0
 * @category text
 */
export const textLinePattern = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$"

/**
 * The JSON Schema pattern of free text: no NUL (unpaired surrogates: see {@link textLinePattern}).
 *
 * @since 0.1.0
 * @category text
 */
export const freeTextPattern = "^[^\\u0000]*$"

/**
 * A line of text (see the module): a string whose decoding fails, naming `field`, when it has a control character,
 * a line break or an unpaired surrogate. Encodes as itself.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextLine = (field: string) =>
  Schema.String.pipe(
    Schema.filter((text) => textLineProblem(field, text) ?? true, {
      jsonSchema: { pattern: textLinePattern }
    })
  )

/**
 * Free text (see the module): a string whose decoding fails, naming `field`, when it has a NUL or an unpaired
 * surrogate. Tabs and line breaks are kept. Encodes as itself.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FreeText = (field: string) =>
  Schema.String.pipe(
    Schema.filter((text) => freeTextProblem(field, text) ?? true, { jsonSchema: { pattern: freeTextPattern } })
  )
