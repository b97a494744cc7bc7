/**
 * Schemas of free-form JSON: a field the API passes through or leaves open (model response items, policy rules,
 * extra envelope fields), and the empty object some operations answer.
 *
 * Source: spec "Model responses" (open objects), "Egress policies" (documents); docs/ASSUMPTIONS.md "The OpenAPI document".
 *
 * @since 0.1.0
 */
import { Either, ParseResult, Schema, SchemaAST } from "effect"

/**
 * Any JSON value. In the OpenAPI document it is the component `JsonValue` (one of object, array, string, number,
 * boolean, null), referenced wherever a field is open, instead of a JSON Schema `$id` repeated at every use.
 */
export const JsonValue = Schema.Unknown.annotations({
  identifier: "JsonValue",
  jsonSchema: {
    anyOf: [
      { type: "object" },
      { type: "array", items: {} },
      { type: "string" },
      { type: "number" },
      { type: "boolean" },
      { type: "null" }
    ]
  }
})

/**
 * Copies the own members of `input` (an object, not an array) through `parseKey` and `parseValue`, every key kept as
 * an own member: `__proto__` too, which an assignment `output[key] = value` would turn into the object's prototype
 * instead (that is how `Schema.Record` loses it).
 */
const ownMembers = (
  parseKey: (key: unknown, options: SchemaAST.ParseOptions) => Either.Either<unknown, ParseResult.ParseIssue>,
  parseValue: (value: unknown, options: SchemaAST.ParseOptions) => Either.Either<unknown, ParseResult.ParseIssue>
) =>
(input: unknown, options: SchemaAST.ParseOptions, ast: SchemaAST.AST) => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return Either.left(new ParseResult.Type(ast, input))
  }
  const output: Record<string, unknown> = {}
  const issues: Array<ParseResult.ParseIssue> = []
  for (const key of Object.keys(input)) {
    const parsedKey = parseKey(key, options)
    const parsed = Either.isLeft(parsedKey) ? parsedKey : parseValue((input as Record<string, unknown>)[key], options)
    if (Either.isLeft(parsed)) {
      issues.push(new ParseResult.Pointer(key, input, parsed.left))
      if (options.errors !== "all") break
    } else {
      const name = String(parsedKey.pipe(Either.getOrElse(() => key)))
      if (name === "__proto__") {
        Object.defineProperty(output, name, { value: parsed.right, enumerable: true, writable: true, configurable: true })
      } else {
        output[name] = parsed.right
      }
    }
  }
  return issues.length === 0
    ? Either.right(output)
    : Either.left(new ParseResult.Composite(ast, input, issues as [ParseResult.ParseIssue], output))
}

/**
 * A JSON object whose members are all `value`, with keys that are `key` (a string schema, `Schema.String` by default),
 * decoded and encoded member by member, every member kept: `__proto__`, `constructor` and `prototype` are ordinary
 * keys, never dropped and never the object's prototype (docs/ASSUMPTIONS.md "Text fields"). In JSON Schema (the
 * OpenAPI document) and arbitraries it is `Schema.Record({ key, value })`. `key` and `value` must decode
 * synchronously. Fails with a `ParseIssue` pointing at the first bad member (every bad member with `errors: "all"`),
 * or at the input when it is not an object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ObjectOf = <Value extends Schema.Schema.Any>(
  value: Value,
  key: Schema.Schema<string, string, never> = Schema.String
) => {
  const record = Schema.Record({ key, value })
  return Schema.declare(
    [key, value],
    {
      decode: (name, member) => ownMembers(ParseResult.decodeUnknownEither(name), ParseResult.decodeUnknownEither(member)),
      encode: (name, member) => ownMembers(ParseResult.encodeUnknownEither(name), ParseResult.encodeUnknownEither(member))
    },
    {
      // JSON Schema (the OpenAPI document) describes it as the Record it stands for, and error messages name it so.
      [SchemaAST.SurrogateAnnotationId]: record.ast,
      title: String(record.ast),
      arbitrary: (name, member) => (fc) => fc.dictionary(name(fc), member(fc)),
      pretty: (_name, member) => (members) =>
        `{ ${Object.keys(members).map((name) => `${JSON.stringify(name)}: ${member(members[name] as never)}`).join(", ")} }`,
      equivalence: (_name, member) => (left, right) => {
        const names = Object.keys(left)
        return names.length === Object.keys(right).length &&
          names.every((name) => Object.hasOwn(right, name) && member(left[name] as never, right[name] as never))
      }
    }
  ) as unknown as Schema.Schema<
    { readonly [key: string]: Schema.Schema.Type<Value> },
    { readonly [key: string]: Schema.Schema.Encoded<Value> },
    Schema.Schema.Context<Value>
  >
}

/**
 * `schema` (a struct with an index signature whose members are `value`), with a `__proto__` member kept as an own
 * member of the result (decoded and encoded with `value`) instead of becoming its prototype: without this, a member
 * `"__proto__": {"role": "system"}` gives the decoded object an inherited `role` it was not sent with, and the member
 * is lost (docs/ASSUMPTIONS.md "Text fields"). Everything else is `schema`'s: JSON Schema, messages, arbitraries.
 * `schema` and `value` must decode synchronously. Fails with `schema`'s issues, or one pointing at `__proto__`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const KeepingProtoMember = <S extends Schema.Schema.Any, Value extends Schema.Schema.Any>(
  schema: S,
  value: Value
) => {
  const run = (
    parseSchema: (input: unknown, options: SchemaAST.ParseOptions) => Either.Either<unknown, ParseResult.ParseIssue>,
    parseValue: (input: unknown, options: SchemaAST.ParseOptions) => Either.Either<unknown, ParseResult.ParseIssue>
  ): ParseResult.DeclarationDecodeUnknown<any, never> =>
  (input, options, ast) => {
    if (typeof input !== "object" || input === null || !Object.hasOwn(input, "__proto__")) {
      return parseSchema(input, options)
    }
    // A computed `__proto__` in a pattern reads the own member; the rest is every other own member.
    const { ["__proto__"]: member, ...rest } = input as Record<string, unknown>
    const parsed = parseSchema(rest, options)
    if (Either.isLeft(parsed)) return parsed
    const parsedMember = parseValue(member, options)
    if (Either.isLeft(parsedMember)) {
      return Either.left(new ParseResult.Composite(ast, input, new ParseResult.Pointer("__proto__", input, parsedMember.left)))
    }
    return Either.right(Object.defineProperty(parsed.right as object, "__proto__", {
      value: parsedMember.right,
      enumerable: true,
      writable: true,
      configurable: true
    }))
  }
  return Schema.declare(
    [schema, value],
    {
      decode: (inner, member) => run(ParseResult.decodeUnknownEither(inner), ParseResult.decodeUnknownEither(member)),
      encode: (inner, member) => run(ParseResult.encodeUnknownEither(inner), ParseResult.encodeUnknownEither(member))
    },
    {
      [SchemaAST.SurrogateAnnotationId]: schema.ast,
      title: String(schema.ast),
      arbitrary: (inner) => inner,
      pretty: (inner) => inner,
      equivalence: (inner) => inner
    }
  ) as unknown as Schema.Schema<Schema.Schema.Type<S>, Schema.Schema.Encoded<S>, Schema.Schema.Context<S>>
}

/** A JSON object with any members, every member kept (see {@link ObjectOf}). */
export const JsonObject = ObjectOf(JsonValue)

/** The empty object `{}` (answered by clipboard write and exec resize): no members. */
export const EmptyObject = Schema.Struct({}).annotations({
  identifier: "EmptyObject",
  jsonSchema: { type: "object", additionalProperties: false }
})

/**
 * A date and time as the API writes it: an ISO 8601 / RFC 3339 string, e.g. `2026-01-01T00:00:00.000Z` (`format:
 * date-time` in the OpenAPI document). Decoded as the string.
 */
export const DateTimeString = Schema.String.annotations({
  identifier: "DateTime",
  jsonSchema: { type: "string", format: "date-time" }
})

/**
 * The deepest nesting of arrays and objects a request body may have (docs/ASSUMPTIONS.md "Request body
 * limits"): deeper JSON is a 400 naming the top-level field it is in, before it is parsed or decoded.
 */
export const maxDepth = 64

/**
 * One pass over JSON text up to byte `end`, strings and their escapes skipped, following the top-level member it is
 * in: that member's name (`field`, null between members or in a member name), the nesting `depth` where it stopped,
 * and whether it stopped early because arrays and objects nested deeper than `limit`. The text is not required to be
 * valid JSON. The one scanner behind {@link tooDeep} and {@link memberAt}.
 */
const scanTopLevel = (
  bytes: Uint8Array,
  end: number,
  limit: number
): { readonly field: string | null; readonly depth: number; readonly tooDeep: boolean } => {
  let depth = 0
  let inString = false
  let stringStart = -1
  let lastString: string | null = null
  let field: string | null = null
  for (let index = 0; index < end; index++) {
    const byte = bytes[index]
    if (inString) {
      if (byte === 0x5c) index++ // a backslash escapes the next byte
      else if (byte === 0x22) {
        inString = false
        if (depth === 1) lastString = Buffer.from(bytes.subarray(stringStart, index)).toString("utf8")
      }
      continue
    }
    if (byte === 0x22) {
      inString = true
      stringStart = index + 1
    } else if (byte === 0x3a) {
      if (depth === 1) field = lastString
    } else if (byte === 0x7b || byte === 0x5b) {
      depth++
      if (depth > limit) return { field, depth, tooDeep: true }
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--
      if (depth === 1) lastString = null
      if (depth === 0) field = null
    } else if (byte === 0x2c && depth === 1) {
      field = null
    }
  }
  return { field, depth, tooDeep: false }
}

/**
 * Where JSON text nests arrays and objects deeper than `limit`: the top-level member it happens in (`field`; null for
 * a top-level array or when no member name was read), or undefined when it does not. Scans the bytes once (strings
 * and their escapes skipped); the text is not required to be valid JSON.
 */
export const tooDeep = (bytes: Uint8Array, limit: number = maxDepth): { readonly field: string | null } | undefined => {
  const scan = scanTopLevel(bytes, bytes.length, limit)
  return scan.tooDeep ? { field: scan.field } : undefined
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
  const scan = scanTopLevel(bytes, Math.min(offset, bytes.length), Number.POSITIVE_INFINITY)
  // Inside a string at depth 1 before its colon: a member name, not a value.
  return { field: scan.depth >= 1 ? scan.field : null }
}
