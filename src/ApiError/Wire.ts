/**
 * The errors on the wire: the typed error of an envelope and the envelope of a typed error, `Retry-After`, and the
 * contract's schema of each error class at its HTTP status. Part of `boxkit/ApiError` (ApiError.ts).
 *
 * Source: spec section "Errors" (envelope fields, status table, rules 1-5).
 *
 * @since 0.1.0
 */
import { HttpApiSchema } from "@effect/platform"
import { Duration, Option, Schema, SchemaAST as AST } from "effect"
import { JsonValue } from "../Domain/Json.js"
import { type AnyApiError, apiErrorClasses, BillingError, type ErrorEnvelope, typeOf, UnknownApiError } from "./Errors.js"

/** The constructor of each typed error class, by its envelope `type`. */
const constructors: Record<string, (fields: any) => AnyApiError> = Object.fromEntries(
  apiErrorClasses.map((errorClass) => [errorClass.type, (fields: any) => new errorClass(fields)])
)

/**
 * Builds the typed error of an envelope: the class is chosen by `type`, with the HTTP `status` and the parsed
 * `Retry-After` duration. Unknown types give {@link UnknownApiError}.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fromEnvelope = (
  envelope: ErrorEnvelope,
  status: number,
  retryAfter: Option.Option<Duration.Duration>
): AnyApiError => {
  const body = envelope.error
  const fields = {
    message: body.message,
    param: body.param,
    code: body.code,
    status,
    retryAfter: Option.getOrUndefined(retryAfter),
    ...(body.billing_url !== undefined && body.type === BillingError.type ? { billing_url: body.billing_url } : {})
  }
  const make = constructors[body.type]
  return make !== undefined ? make(fields) : new UnknownApiError({ ...fields, type: body.type })
}

/** The envelope of a typed error, as the service writes it. @since 0.1.0 @category Utils */
export const toEnvelope = (error: AnyApiError): ErrorEnvelope => ({
  error: {
    message: error.message,
    type: typeOf(error),
    param: error.param,
    code: error.code,
    ...(error instanceof BillingError && error.billing_url !== undefined ? { billing_url: error.billing_url } : {})
  }
})

/**
 * Parses a `Retry-After` header value: delta-seconds (`"3"`) or an HTTP date, relative to `nowMillis`.
 * A date in the past gives zero; an unparseable value gives None.
 *
 * @since 0.1.0
 * @category Utils
 */
export const parseRetryAfter = (value: string | undefined, nowMillis: number): Option.Option<Duration.Duration> => {
  if (value === undefined) return Option.none()
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Option.some(Duration.seconds(Number(trimmed)))
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return Option.none()
  return Option.some(Duration.millis(Math.max(0, date - nowMillis)))
}

/**
 * The contract's schema of one error class at one HTTP status: the envelope on the wire, the typed class in code.
 * `type` on the wire is the class's literal type, so several classes at one status are told apart by it.
 *
 * @since 0.1.0
 * @category Schemas
 */
export const atStatus = <Self extends AnyClass>(errorClass: Self, status: number) => {
  const schema = atStatusSchema(errorClass, status)
  classesByAst.set(schema.ast, errorClass)
  return schema
}

/** The error class of each schema made by {@link atStatus}, by its AST (an endpoint's error union keeps them). */
const classesByAst = new WeakMap<AST.AST, AnyClass>()

/**
 * The error classes an error schema of the contract lists (an endpoint's `errorSchema`: one {@link atStatus} schema
 * or a union of them); members that are not such schemas are left out.
 *
 * @since 0.1.0
 * @category Utils
 */
export const classesOf = (schema: Schema.Schema.Any): ReadonlyArray<AnyClass> => {
  const members = AST.isUnion(schema.ast) ? schema.ast.types : [schema.ast]
  const classes = new Set<AnyClass>()
  for (const member of members) {
    const errorClass = classesByAst.get(member)
    if (errorClass !== undefined) classes.add(errorClass)
  }
  return [...classes]
}

/** `billing_url` on the wire: the URL of the page for adding credits. */
const BillingUrl = Schema.String.annotations({ jsonSchema: { type: "string", format: "uri" } })

/** The envelope's `error` object for `errorClass` (with `billing_url` for the billing error); other members allowed. */
const envelopeError = (errorClass: AnyClass) => {
  const fields = {
    message: Schema.String,
    type: Schema.Literal(errorClass.type),
    param: Schema.NullOr(Schema.String),
    code: Schema.NullOr(Schema.String)
  }
  const others = { key: Schema.String, value: JsonValue }
  return errorClass === BillingError
    ? Schema.Struct({ ...fields, billing_url: BillingUrl }, others)
    : Schema.Struct(fields, others)
}

/**
 * The envelope as the contract sends it (what the OpenAPI document describes): `param` and `code` always present
 * (null when there is none), `code` a string, and on 402 `billing_url`; other members allowed.
 */
const atStatusSchema = <Self extends AnyClass>(errorClass: Self, status: number) =>
  Schema.transform(
    Schema.Struct({
      error: envelopeError(errorClass)
    }),
    Schema.typeSchema(errorClass as unknown as Schema.Schema<InstanceType<Self>>),
    {
      strict: false,
      decode: (envelope) => fromEnvelope(envelope as ErrorEnvelope, status, Option.none()),
      encode: (error) => {
        const envelope = toEnvelope(error as AnyApiError)
        const code = envelope.error.code
        return typeof code === "number" ? { error: { ...envelope.error, code: String(code) } } : envelope
      }
    }
  ).annotations(HttpApiSchema.annotations({ status }))

type AnyClass = (typeof apiErrorClasses)[number]
