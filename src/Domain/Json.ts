/**
 * Schemas of free-form JSON: a field the API passes through or leaves open (model response items, policy rules,
 * extra envelope fields), and the empty object some operations answer. The byte scanner the request pipeline runs
 * on a JSON body before it is parsed is JsonBodyScan.ts, re-exported here.
 *
 * Source: spec "Model responses" (open objects), "Egress policies" (documents); docs/ASSUMPTIONS.md "The OpenAPI
 * document", "Request body limits".
 *
 * @since 0.1.0
 */
import { Either, ParseResult, Schema, SchemaAST } from "effect"

export * from "./JsonBodyScan.js"

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
