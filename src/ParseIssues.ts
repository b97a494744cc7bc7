/**
 * Schema errors as a person reads them: a short list of `path: expected …, got …`, one line per problem, from
 * Effect's `ParseResult.ArrayFormatter`. Used for seed files (`Seed.decode`) and the command line's failures.
 *
 * Source: docs/ASSUMPTIONS.md "Errors on the command line and in logs" (errors a person can act on).
 *
 * @since 0.1.0
 */
import { ParseResult } from "effect"

/**
 * One problem of a decoded input: `path` (`organizations[0].id`; empty for the whole input) and `message`
 * (`expected string, got 5`, `unknown field`, `missing`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface Issue {
  readonly path: string
  readonly message: string
}

/**
 * A path as JSON-path-like text: keys joined by dots, indexes in brackets (`api_keys[1].org_id`).
 *
 * @since 0.1.0
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((text, key) =>
    typeof key === "number" ? `${text}[${key}]` : text === "" ? String(key) : `${text}.${String(key)}`, "")

/** Effect's wording made plain: `Expected X, actual Y` as `expected X, got Y`; arrays and structs named simply. */
const plain = (message: string): string =>
  message
    .replace(/^Expected (.*), actual (.*)$/s, "expected $1, got $2")
    .replace(/^is unexpected, expected: (.*)$/s, "unknown field (expected one of $1)")
    .replace(/^is missing$/, "missing")
    .replace(/ReadonlyArray<(.*)>/g, "an array (of $1)")
    .replace(/\(?Struct \((Encoded|Type) side\)(?: <-> Struct \((Encoded|Type) side\))?\)?/g, "an object")

/**
 * The problems of a `ParseError`, one per path and in input order. The second issue Effect reports for an optional
 * field (`expected undefined`, from the union with `undefined`) is dropped when the field has a real problem.
 *
 * @since 0.1.0
 */
export const issues = (error: ParseResult.ParseError): ReadonlyArray<Issue> => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
    path: formatPath(issue.path),
    message: plain(issue.message)
  }))
  const kept = all.filter((issue) =>
    !issue.message.startsWith("expected undefined") ||
    !all.some((other) => other !== issue && !other.message.startsWith("expected undefined") && other.path.startsWith(issue.path))
  )
  return kept.filter((issue, index) => kept.findIndex((other) => other.path === issue.path && other.message === issue.message) === index)
}

/**
 * The problems as lines: `path: message` (`<root>` for the whole input), each indented by `indent`.
 *
 * @since 0.1.0
 */
export const lines = (error: ParseResult.ParseError, indent = "  "): ReadonlyArray<string> =>
  issues(error).map((issue) => `${indent}${issue.path === "" ? "<root>" : issue.path}: ${issue.message}`)
