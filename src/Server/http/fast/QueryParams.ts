/**
 * Query parameters as `HttpApiBuilder` hands them to an endpoint's query schema: a single value wrapped in an array
 * where the schema wants several (`?tag=a` for a `tag: Array<string>` field). A copy of `HttpApiBuilder`'s
 * `normalizeUrlParams`, which is not in its public types; test/server/QueryParams.test.ts compares the two.
 *
 * Source: @effect/platform 0.97 `HttpApiBuilder`; docs/decisions/0001-two-serving-paths.md (public APIs only).
 *
 * @since 0.1.0
 */
import { Schema, type SchemaAST } from "effect"

/** True when the value at `key` (or the whole AST without a key) is one string, not several. */
const isSingleStringType = (ast: SchemaAST.AST, key?: PropertyKey): boolean => {
  switch (ast._tag) {
    case "StringKeyword":
    case "Literal":
    case "TemplateLiteral":
    case "Enums":
      return true
    case "TypeLiteral": {
      if (key === undefined) return false
      const property = ast.propertySignatures.find((signature) => signature.name === key)
      return property !== undefined
        ? isSingleStringType(property.type, key)
        : ast.indexSignatures.some((index) =>
          Schema.is(Schema.make(index.parameter))(key) && isSingleStringType(index.type)
        )
    }
    case "Union":
      return ast.types.some((type) => isSingleStringType(type, key))
    case "Suspend":
      return isSingleStringType(ast.f(), key)
    case "Refinement":
    case "Transformation":
      return isSingleStringType(ast.from, key)
  }
  return false
}

/**
 * The query `params` shaped for the query schema `ast`: values of keys that are not a single string become arrays.
 *
 * @since 0.1.0
 */
export const normalize = (
  params: Readonly<Record<string, string | Array<string>>>,
  ast: SchemaAST.AST
): Readonly<Record<string, string | Array<string>>> => {
  const out: Record<string, string | Array<string>> = {}
  for (const key in params) {
    const value = params[key]!
    out[key] = Array.isArray(value) || isSingleStringType(ast, key) ? value : [value]
  }
  return out
}
