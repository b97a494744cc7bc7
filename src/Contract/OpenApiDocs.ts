/**
 * What the OpenAPI document says of each operation beyond its schemas: its summary, description and body limit, the
 * headers of its answers (`Retry-After`, `Idempotent-Replayed`), the event-stream form of an answer, and the document
 * without the decode error no serving path sends, and the rules of request bodies the domain schemas' own JSON Schema
 * does not carry. Used by the contract (Api.ts) through `OpenApi` annotations.
 *
 * Source: spec "Errors" rules 1-3; docs/ASSUMPTIONS.md "The OpenAPI document".
 *
 * @since 0.1.0
 */

/**
 * A rule the service checks that JSON Schema cannot state (it depends on another part of the request, on what is
 * stored, or on bytes rather than characters): `param` is the `param` of the 400 `invalid_request_error` that refuses
 * it (`*` stands for any index or text), `rule` says it in words. The operation's description lists them after
 * "Also refused". Source: docs/ASSUMPTIONS.md "The OpenAPI document".
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export interface StatedRefusal {
  readonly param: string
  readonly rule: string
}

/**
 * What the OpenAPI document says of an operation, its body limit (default {@link defaultMaxBodyBytes}), for an
 * operation whose 200 may also be a stream of server-sent events what the stream carries, the rules across fields of
 * its JSON body that JSON Schema can state (`bodyRules`, added to the body schema's `allOf`; `bodyProperties`, merged
 * into the named properties), and those it cannot (`alsoRefused`).
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export interface OperationDocs {
  readonly summary: string
  readonly description: string
  readonly maxBodyBytes?: number
  readonly eventStream?: string
  readonly bodyRules?: ReadonlyArray<Record<string, unknown>>
  readonly bodyProperties?: Record<string, Record<string, unknown>>
  readonly alsoRefused?: ReadonlyArray<StatedRefusal>
}

/**
 * The description's "Also refused" sentence of an operation: each rule in words with its `param` in backticks and
 * brackets, the form the contract test reads back; empty when the operation has none.
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const alsoRefusedText = (refusals: ReadonlyArray<StatedRefusal> | undefined): string =>
  refusals === undefined || refusals.length === 0
    ? ""
    : ` Also refused (400 \`invalid_request_error\`, \`param\` in brackets): ${
      refusals.map((refusal) => `${refusal.rule} [\`${refusal.param}\`]`).join("; ")
    }.`

/**
 * The largest integer JSON carries exactly (2^53 - 1): the service refuses an integer beyond ±this (a JSON parser
 * would round it), and the document bounds every integer by it. Source: docs/ASSUMPTIONS.md "The OpenAPI document".
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const largestExactInteger = Number.MAX_SAFE_INTEGER

/** `Retry-After` on 429 and 503 answers (spec: Errors rules 1, 2). */
const retryAfterHeader = {
  "Retry-After": {
    description: "Seconds to wait before retrying (spec: Errors rules 1 and 2).",
    schema: { type: "integer", minimum: 0 }
  }
}

/** `Idempotent-Replayed: true` on a replayed answer of an operation that honours `Idempotency-Key` (Errors rule 3). */
const replayedHeader = {
  "Idempotent-Replayed": {
    description: "`true` when this is the remembered answer of an earlier request with the same Idempotency-Key.",
    schema: { type: "string", enum: ["true"] }
  }
}

/**
 * What the schemas of an endpoint cannot say, added to its operation in the OpenAPI document: the headers of its
 * answers (`Retry-After`, `Idempotent-Replayed`), a `text/event-stream` form of its 200, and the rules of `docs`
 * across the fields of its JSON body (`bodyRules`, `bodyProperties`).
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const answerHeaders = (idempotent: boolean, docs: OperationDocs) => (operation: Record<string, any>) => {
  const eventStream = docs.eventStream
  const responses: Record<string, any> = {}
  for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
    let headers = response.headers
    if (status === "429" || status === "503") headers = { ...headers, ...retryAfterHeader }
    if (idempotent && Number(status) < 500) headers = { ...headers, ...replayedHeader }
    let content = response.content
    if (status === "200" && eventStream !== undefined) {
      content = {
        ...content,
        "text/event-stream": { schema: { type: "string", contentMediaType: "text/event-stream", description: eventStream } }
      }
    }
    responses[status] = { ...response, ...(headers ? { headers } : {}), ...(content ? { content } : {}) }
  }
  return { ...operation, responses, ...withBodyRules(operation.requestBody, docs) }
}

/** The request body of an operation with the rules of `docs` added to its JSON schema. */
const withBodyRules = (requestBody: Record<string, any> | undefined, docs: OperationDocs) => {
  const json = requestBody?.content?.["application/json"]
  if (json === undefined || (docs.bodyRules === undefined && docs.bodyProperties === undefined)) return {}
  const schema: Record<string, any> = { ...json.schema }
  if (docs.bodyProperties !== undefined) {
    schema.properties = { ...schema.properties }
    for (const [name, extra] of Object.entries(docs.bodyProperties)) {
      schema.properties[name] = { ...schema.properties[name], ...extra }
    }
  }
  if (docs.bodyRules !== undefined) schema.allOf = [...(schema.allOf ?? []), ...docs.bodyRules]
  return {
    requestBody: { ...requestBody, content: { ...requestBody!.content, "application/json": { ...json, schema } } }
  }
}

/**
 * A JSON schema with every `additionalProperties: false` removed, at any depth: request bodies accept members they
 * do not name (docs/ASSUMPTIONS.md "The OpenAPI document").
 */
const openObjects = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(openObjects)
  if (schema === null || typeof schema !== "object") return schema
  const result: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "additionalProperties" && value === false) continue
    result[key] = openObjects(value)
  }
  return result
}

const integerReference = "#/components/schemas/Int"

/**
 * The reference to {@link secretMention}, for rules that refuse a value using secrets (an inline egress policy's
 * `rules` at box creation).
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const secretMentionReference = "#/components/schemas/SecretMention"

/**
 * A JSON value with a member named `secret` or `secrets` at any depth, as JSON Schema says it (a member that
 * mentions one: `not` every member free of them). The rule `EgressPolicy.usesSecrets` checks; docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const secretMention = {
  description: "A JSON value with a member named `secret` or `secrets` at any depth (a value that uses secrets).",
  anyOf: [
    {
      type: "object",
      anyOf: [{ required: ["secret"], properties: { secret: {} } }, { required: ["secrets"], properties: { secrets: {} } }]
    },
    { type: "object", not: { additionalProperties: { not: { $ref: secretMentionReference } } } },
    { type: "array", items: {}, contains: { $ref: secretMentionReference } }
  ]
}

/** What every JSON request body's description says of its media type and of members its schema does not name. */
const jsonBodyDescription = "A JSON object, sent with `Content-Type: application/json` or without a `Content-Type` " +
  "(read as JSON either way); members the schema does not name are ignored."

/**
 * A JSON schema with each reference to the `Int` component replaced by an integer within ±(2^53 - 1), its own bounds
 * (siblings of the reference) kept: written in place, since tools that resolve a reference by copying the target over
 * its siblings (Prism) would otherwise lose a field's own bounds to the component's.
 */
const boundedIntegers = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(boundedIntegers)
  if (schema === null || typeof schema !== "object") return schema
  const result: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) result[key] = boundedIntegers(value)
  if (result.$ref !== integerReference) return result
  const { $ref: _reference, ...siblings } = result
  return { type: "integer", minimum: -largestExactInteger, maximum: largestExactInteger, ...siblings }
}

/**
 * The document's schemas as the service checks them: request bodies open to unknown members, `JsonValue`'s object
 * an open object (a generated client types it `Record<string, unknown>`, not `Record<string, never>`), and every
 * integer within ±(2^53 - 1). Source: docs/ASSUMPTIONS.md "The OpenAPI document".
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const withStatedSchemas = (document: Record<string, any>): Record<string, any> => {
  const paths: Record<string, any> = {}
  for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
    paths[path] = {}
    for (const [method, operation] of Object.entries(methods)) {
      const content = operation.requestBody?.content?.["application/json"]
      paths[path][method] = content === undefined ? operation : {
        ...operation,
        requestBody: {
          ...operation.requestBody,
          description: jsonBodyDescription,
          content: { ...operation.requestBody.content, "application/json": openObjects(content) }
        }
      }
    }
  }
  const { Int: _integer, ...schemas } = document.components.schemas
  schemas.SecretMention = secretMention
  if (schemas.JsonValue !== undefined) {
    schemas.JsonValue = {
      ...schemas.JsonValue,
      anyOf: schemas.JsonValue.anyOf.map((member: Record<string, unknown>) =>
        member.type === "object" ? { type: "object", additionalProperties: true } : member
      )
    }
  }
  return boundedIntegers({ ...document, paths, components: { ...document.components, schemas } }) as Record<string, any>
}

/**
 * `bytes` as the document writes a size: MiB, KiB or bytes.
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const byteSize = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`

/**
 * The document without `HttpApiDecodeError`, which `HttpApi.make` adds to every contract at 400 but this service never
 * sends: both serving paths answer a decode failure with the `invalid_request_error` envelope naming the field
 * (ErrorResponse.ts), which every 400 already lists.
 *
 * @since 0.1.0
 * @category OpenAPI
 */
export const withoutDecodeError = (document: Record<string, any>): Record<string, any> => {
  const reference = "#/components/schemas/HttpApiDecodeError"
  const paths: Record<string, any> = {}
  for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
    paths[path] = {}
    for (const [method, operation] of Object.entries(methods)) {
      const responses: Record<string, any> = { ...operation.responses }
      const content = responses["400"]?.content?.["application/json"]
      const members: Array<{ $ref?: string }> | undefined = content?.schema?.anyOf
      if (members !== undefined) {
        const kept = members.filter((member) => member.$ref !== reference)
        const schema = kept.length === 1 ? kept[0] : { ...content.schema, anyOf: kept }
        responses["400"] = {
          ...responses["400"],
          description: "The request was rejected; the message and param name the field or rule.",
          content: { "application/json": { ...content, schema } }
        }
      }
      paths[path][method] = { ...operation, responses }
    }
  }
  const { HttpApiDecodeError: _decodeError, Issue: _issue, PropertyKey: _propertyKey, ...schemas } = document.components.schemas
  return { ...document, paths, components: { ...document.components, schemas } }
}
