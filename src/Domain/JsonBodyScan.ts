/**
 * The byte scanner the request pipeline runs on a JSON body before it is parsed: nesting depth, the byte caps of
 * top-level members, the top-level members and the member a byte offset is in. Re-exported by Json.ts.
 *
 * Source: docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 */

/**
 * The deepest nesting of arrays and objects a request body may have (docs/ASSUMPTIONS.md "Request body
 * limits"): deeper JSON is a 400 naming the top-level field it is in, before it is parsed or decoded.
 */
export const maxDepth = 64

/**
 * The caps of an operation's top-level body members, by member name: a number is the most bytes of JSON text a
 * member's value may have, counted as {@link checkBody} counts (whitespace between tokens not counted, strings as
 * written); a {@link StringLengthCap} bounds a member that is a string by its length. Declared next to the schemas
 * that bound the members (e.g. `ModelResponse.createRequestCaps`); a member without a cap is bounded only by the
 * operation's body limit. docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category JSON
 */
export interface MemberCaps {
  readonly [member: string]: number | StringLengthCap
}

/**
 * The cap of a member whose schema bounds it, when it is a string, to `maxLength` UTF-16 code units
 * (`Schema.maxLength`, `String.length`), but whose longest valid text, escaped, is past the body limit (`input`): the
 * units are counted in the string's JSON text as the parse would decode them (an escape is one unit, a 4-byte UTF-8
 * character two), without decoding it. A member that is not a string has no cap.
 *
 * @since 0.1.0
 * @category JSON
 */
export interface StringLengthCap {
  readonly maxLength: number
}

/**
 * The smallest cap a member is given, in bytes (4 KiB): a cap only keeps large values from being parsed, so a small
 * value of the wrong type is still judged (and named) by the schema, and any double written out in full (at most
 * about 1,100 characters) fits. docs/ASSUMPTIONS.md "Request body limits".
 *
 * @since 0.1.0
 * @category JSON
 */
export const memberCapFloor = 4 * 1024

/** The most bytes one UTF-16 code unit of a JSON string can take as written: the escape `\uXXXX`. */
const escapedUnitBytes = 6

/**
 * The cap of a string member of at most `maxLength` UTF-16 code units (`Schema.maxLength`), or `null`: every unit
 * escaped as `\uXXXX`, plus the quotes, at least {@link memberCapFloor}. No valid value goes over it, however escaped.
 *
 * @since 0.1.0
 * @category JSON
 */
export const stringCap = (maxLength: number): number => Math.max(memberCapFloor, 2 + escapedUnitBytes * maxLength)

/**
 * The cap of an object member of at most `pairs` string members, keys of at most `keyLength` UTF-16 code units and
 * values of at most `valueLength` (`metadata`): braces, every key and value fully escaped, colons and commas.
 *
 * @since 0.1.0
 * @category JSON
 */
export const stringMapCap = (pairs: number, keyLength: number, valueLength: number): number =>
  Math.max(
    memberCapFloor,
    2 + pairs * (2 + escapedUnitBytes * keyLength + 1 + 2 + escapedUnitBytes * valueLength) + Math.max(0, pairs - 1)
  )

/**
 * The cap of a boolean, number, short literal or `null` member: {@link memberCapFloor}.
 *
 * @since 0.1.0
 * @category JSON
 */
export const scalarCap = memberCapFloor

/** A top-level member name longer than this, in bytes as written, is not read (no member of the API is near it). */
const maxNameBytes = 1024

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/**
 * The index of the quote that closes a JSON string whose text starts at `from`, or -1 when `text` ends first. The
 * quotes are found by the native search, so a long string costs no per-byte step here.
 */
const closingQuote = (text: Buffer, from: number): number => {
  let at = from
  while (true) {
    const quote = text.indexOf(0x22, at)
    if (quote < 0) return -1
    let backslashes = 0
    while (quote - backslashes - 1 >= from && text[quote - backslashes - 1] === 0x5c) backslashes++
    if (backslashes % 2 === 0) return quote
    at = quote + 1
  }
}

/** The member name written at `text[start, end)` (quotes included), with its escapes read; null when too long. */
const nameAt = (text: Buffer, start: number, end: number): string | null => {
  if (end - start > maxNameBytes + 2) return null
  if (!text.subarray(start, end).includes(0x5c)) return text.toString("utf8", start + 1, end - 1)
  try {
    const name: unknown = JSON.parse(text.toString("utf8", start, end))
    return typeof name === "string" ? name : null
  } catch {
    return text.toString("utf8", start + 1, end - 1)
  }
}

/**
 * One top-level member as {@link topLevelMembers} finds it: its `name`, its value's text `text[start, end)` (from the
 * byte after the colon to the comma or brace that ends it, whitespace included) and `bytes`, the value's bytes as a
 * cap counts them.
 */
export interface TopLevelMember {
  readonly name: string | null
  readonly start: number
  readonly end: number
  readonly bytes: number
}

interface ScanOptions {
  /** Arrays and objects nested deeper than this stop the scan (`tooDeep`). */
  readonly limit: number
  /** The members with a cap: a member's value over its cap stops the scan (`overCap`). */
  readonly caps?: MemberCaps | undefined
  /** Called with each member once its value has ended. */
  readonly onMember?: ((member: TopLevelMember) => void) | undefined
}

interface Scan {
  /** The member the scan stopped in (null: not in a member's value, or its name was not read). */
  readonly field: string | null
  readonly depth: number
  /** `overCap`: `field` over its cap in bytes; `overLength`: `field` is a string over its {@link StringLengthCap}. */
  readonly stop: "end" | "tooDeep" | "overCap" | "overLength"
  /** The cap of `field` (bytes, or UTF-16 code units for `overLength`) when the scan stopped over it. */
  readonly cap: number
}

/**
 * True when the JSON string text `text[start, end)` (between its quotes) decodes to more than `maxLength` UTF-16 code
 * units: an escape is one unit (`\uXXXX` too), a UTF-8 sequence one, or two when it takes 4 bytes. Stops as soon as
 * the count passes `maxLength`.
 */
const longerThan = (text: Buffer, start: number, end: number, maxLength: number): boolean => {
  let units = 0
  for (let index = start; index < end; index++) {
    const byte = text[index]!
    if (byte === 0x5c) {
      index += text[index + 1] === 0x75 ? 5 : 1
      units++
    } else if (byte < 0x80 || byte >= 0xc0) {
      units += byte >= 0xf0 ? 2 : 1
    }
    if (units > maxLength) return true
  }
  return false
}

/** What a byte is to the scanner outside strings: see {@link byteKinds}. */
const enum Kind {
  Plain = 0,
  Quote = 1,
  Whitespace = 2,
  Comma = 3,
  Colon = 4,
  Open = 5,
  Close = 6
}

/** The {@link Kind} of every byte value: one table read per byte instead of a chain of comparisons. */
const byteKinds = (() => {
  const kinds = new Uint8Array(256)
  kinds[0x22] = Kind.Quote
  for (const whitespace of [0x20, 0x0a, 0x0d, 0x09]) kinds[whitespace] = Kind.Whitespace
  kinds[0x2c] = Kind.Comma
  kinds[0x3a] = Kind.Colon
  kinds[0x7b] = kinds[0x5b] = Kind.Open
  kinds[0x7d] = kinds[0x5d] = Kind.Close
  return kinds
})()

/**
 * One pass over JSON text (strings and their escapes skipped by the native search), following the top-level member
 * it is in: the member's name once its colon is read, the nesting depth, and the bytes of the member's value as a
 * cap counts them (every byte but whitespace between tokens; a string as written, escapes included). Stops at the
 * end, when arrays and objects nest deeper than `limit`, or as soon as a member goes over its cap (so an oversized
 * member costs at most its cap to scan). The text is not required to be valid JSON. The one scanner behind
 * {@link tooDeep}, {@link memberAt}, {@link checkBody} and {@link topLevelMembers}. Its state is in local variables
 * only: the loop runs once per byte outside strings.
 */
const scanTopLevel = (text: Buffer, options: ScanOptions): Scan => {
  const { caps, limit, onMember } = options
  const length = text.length
  let depth = 0
  let inObject = false
  let expectingName = false
  let nameStart = -1
  let nameEnd = -1
  // The current member's value starts at `valueStart` (-1: not in a member's value) and holds `skipped` bytes of
  // whitespace; it goes over its cap at byte `overAt` (cap + valueStart + skipped; infinite without a cap).
  let valueStart = -1
  let skipped = 0
  let cap = Number.POSITIVE_INFINITY
  let overAt = Number.POSITIVE_INFINITY
  // The current member's StringLengthCap (infinite: none).
  let maxLength = Number.POSITIVE_INFINITY
  let stop: Scan["stop"] = "end"
  scan: for (let index = 0; index < length; index++) {
    const byte = text[index]!
    const kind = byteKinds[byte]
    if (kind === Kind.Plain) {
      if (index < overAt) continue
      stop = "overCap"
      break
    }
    switch (kind) {
      case Kind.Quote: {
        // In a member with a cap, the closing quote is looked for only as far as the cap allows.
        const bounded = overAt < length
        const close = closingQuote(bounded ? text.subarray(0, overAt) : text, index + 1)
        if (close < 0 && bounded) {
          stop = "overCap"
          break scan
        }
        const stringEnd = close < 0 ? length : close + 1
        // A member with a StringLengthCap whose value is this string (its first token).
        const isValue = index - valueStart === skipped
        if (maxLength < length && isValue && longerThan(text, index + 1, stringEnd - 1, maxLength)) {
          cap = maxLength
          stop = "overLength"
          break scan
        }
        if (expectingName && depth === 1 && valueStart < 0) {
          nameStart = index
          nameEnd = stringEnd
          expectingName = false
        }
        index = stringEnd - 1
        break
      }
      case Kind.Whitespace:
        if (valueStart >= 0) {
          skipped++
          overAt++
        }
        break
      case Kind.Colon:
        if (depth === 1 && valueStart < 0) {
          valueStart = index + 1
          skipped = 0
          const found = caps === undefined ? cap : capOf(caps, memberName(text, nameStart, nameEnd))
          cap = typeof found === "number" ? found : Number.POSITIVE_INFINITY
          maxLength = typeof found === "number" ? Number.POSITIVE_INFINITY : found.maxLength
          overAt = valueStart + cap
          continue
        }
        break
      case Kind.Open:
        depth++
        if (depth === 1) inObject = expectingName = byte === 0x7b
        if (depth > limit) {
          stop = "tooDeep"
          break scan
        }
        break
      case Kind.Comma:
      case Kind.Close:
        if (depth === 1) {
          if (valueStart >= 0) {
            const bytes = index - valueStart - skipped
            if (onMember !== undefined) {
              onMember({ name: memberName(text, nameStart, nameEnd), start: valueStart, end: index, bytes })
            }
            valueStart = -1
            nameStart = -1
            cap = overAt = maxLength = Number.POSITIVE_INFINITY
          }
          expectingName = byte === 0x2c && inObject
          if (byte === 0x2c) continue
        }
        if (byte !== 0x2c) depth--
        break
    }
    if (index >= overAt) {
      stop = "overCap"
      break
    }
  }
  return { field: valueStart >= 0 ? memberName(text, nameStart, nameEnd) : null, depth, stop, cap }
}

const memberName = (text: Buffer, nameStart: number, nameEnd: number): string | null =>
  nameStart < 0 ? null : nameAt(text, nameStart, nameEnd)

const capOf = (caps: MemberCaps, name: string | null): number | StringLengthCap =>
  name !== null && Object.hasOwn(caps, name) ? caps[name]! : Number.POSITIVE_INFINITY

/**
 * Where JSON text nests arrays and objects deeper than `limit`: the top-level member it happens in (`field`; null for
 * a top-level array or when no member name was read), or undefined when it does not. Scans the bytes once (strings
 * and their escapes skipped); the text is not required to be valid JSON.
 */
export const tooDeep = (bytes: Uint8Array, limit: number = maxDepth): { readonly field: string | null } | undefined => {
  const scan = scanTopLevel(asBuffer(bytes), { limit })
  return scan.stop === "tooDeep" ? { field: scan.field } : undefined
}

/**
 * What a JSON request body is refused for before it is parsed: arrays and objects nested deeper than `limit`
 * (`TooDeep`, in top-level member `field`; null for a top-level array or when no member name was read), a top-level
 * member named in `caps` whose value goes over its byte cap (`OverCap`: `field` and its `cap` in bytes), or a string
 * member longer than its {@link StringLengthCap} (`OverLength`: `field` and its `cap` in UTF-16 code units);
 * undefined when none. One scan of the bytes, stopped at the first; it allocates nothing in proportion to the body,
 * and an oversized member costs at most its cap to scan. The text is not required to be valid JSON: a body that
 * passes is still parsed and decoded. A member sent twice is measured each time. docs/ASSUMPTIONS.md "Request body
 * limits".
 *
 * @since 0.1.0
 * @category JSON
 */
export const checkBody = (
  bytes: Uint8Array,
  caps: MemberCaps | undefined = undefined,
  limit: number = maxDepth
):
  | { readonly _tag: "TooDeep"; readonly field: string | null }
  | { readonly _tag: "OverCap" | "OverLength"; readonly field: string; readonly cap: number }
  | undefined =>
{
  const scan = scanTopLevel(asBuffer(bytes), { limit, caps })
  if (scan.stop === "tooDeep") return { _tag: "TooDeep", field: scan.field }
  if (scan.stop === "end" || scan.field === null) return undefined
  return { _tag: scan.stop === "overCap" ? "OverCap" : "OverLength", field: scan.field, cap: scan.cap }
}

/**
 * The top-level members of a JSON object text, in the order written (a member sent twice is listed twice), as the
 * scanner behind {@link checkBody} delimits them: each member's name, the byte range of its value's text and the
 * value's bytes as a cap counts them. Empty for a text that is not an object; the text is not required to be valid
 * JSON (what is listed is then what the scanner saw).
 *
 * @since 0.1.0
 * @category JSON
 */
export const topLevelMembers = (bytes: Uint8Array): ReadonlyArray<TopLevelMember> => {
  const members: Array<TopLevelMember> = []
  scanTopLevel(asBuffer(bytes), { limit: Number.POSITIVE_INFINITY, onMember: (member) => members.push(member) })
  return members
}

/**
 * The top-level member of a JSON object text that byte `offset` falls in: its name (`field`), or null when the offset
 * is not inside a member's value (in a member name, between members, or the text is not an object). Scans the bytes
 * before `offset` once, as {@link tooDeep} does; the text is not required to be valid JSON. Used to name the field of
 * a body that is not valid UTF-8 (docs/ASSUMPTIONS.md "Text fields").
 *
 * @since 0.1.0
 * @category JSON
 */
export const memberAt = (bytes: Uint8Array, offset: number): { readonly field: string | null } => {
  const scan = scanTopLevel(asBuffer(bytes).subarray(0, Math.max(0, Math.min(offset, bytes.length))), {
    limit: Number.POSITIVE_INFINITY
  })
  return { field: scan.field }
}
