/**
 * The client's check of an input against its schema before any I/O: a violation is the spec's
 * `invalid_request_error`, naming the field, without a request sent.
 *
 * Source: spec "Errors" (`invalid_request_error`, `param`); docs/ASSUMPTIONS.md "Client".
 *
 * @since 0.1.0
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import * as ApiError from "../ApiError.js"

/** The validator of each schema `validate` has seen (made once: making one re-derives the schema's type AST). */
const validators = new WeakMap<Schema.Schema.Any, (value: unknown) => Either.Either<any, ParseResult.ParseError>>()

/**
 * Checks an input against its schema before any I/O; a violation is an `InvalidRequestError` naming the field.
 *
 * @since 0.1.0
 * @category Utils
 */
export const validate = <A, I>(schema: Schema.Schema<A, I>, value: A): Effect.Effect<A, ApiError.InvalidRequestError> => {
  let validator = validators.get(schema)
  if (validator === undefined) {
    validator = Schema.validateEither(schema)
    validators.set(schema, validator)
  }
  const checked = validator(value) as Either.Either<A, ParseResult.ParseError>
  if (Either.isRight(checked)) return Effect.succeed(checked.right)
  const error = checked.left
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const param = issue?.path.length ? issue.path.map(String).join(".") : null
  return Effect.fail(
    new ApiError.InvalidRequestError({
      message: `Invalid ${param ?? "request"}: ${issue?.message ?? error.message} (checked by the client)`,
      param,
      code: null,
      status: 400
    })
  )
}
