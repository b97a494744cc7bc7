/**
 * What the OpenAPI document says of each operation beyond its schemas: its summary, description and body limit, the
 * headers of its answers (`Retry-After`, `Idempotent-Replayed`), the event-stream form of an answer, and the document
 * without the decode error no serving path sends. Used by the contract (Api.ts) through `OpenApi` annotations.
 *
 * Source: spec "Errors" rules 1-3; issue 12 (the OpenAPI document); docs/ASSUMPTIONS.md "The OpenAPI document".
 *
 * @since 0.1.0
 */

/**
 * What the OpenAPI document says of an operation, its body limit (default {@link defaultMaxBodyBytes}), and, for an
 * operation whose 200 may also be a stream of server-sent events, what the stream carries.
 */
export interface OperationDocs {
  readonly summary: string
  readonly description: string
  readonly maxBodyBytes?: number
  readonly eventStream?: string
}

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
 * answers (`Retry-After`, `Idempotent-Replayed`) and a `text/event-stream` form of its 200.
 */
export const answerHeaders = (idempotent: boolean, eventStream: string | undefined) => (operation: Record<string, any>) => {
  const responses: Record<string, any> = {}
  for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
    let headers = response.headers
    if (status === "429" || status === "503") headers = { ...headers, ...retryAfterHeader }
    if (idempotent && Number(status) < 500) headers = { ...headers, ...replayedHeader }
    let content = response.content
    if (status === "200" && eventStream !== undefined) {
      content = { ...content, "text/event-stream": { schema: { type: "string", description: eventStream } } }
    }
    responses[status] = { ...response, ...(headers ? { headers } : {}), ...(content ? { content } : {}) }
  }
  return { ...operation, responses }
}

/** `bytes` as the document writes a size: MiB, KiB or bytes. */
export const byteSize = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`

/**
 * The document without `HttpApiDecodeError`, which `HttpApi.make` adds to every contract at 400 but this service never
 * sends: both serving paths answer a decode failure with the `invalid_request_error` envelope naming the field
 * (ErrorResponse.ts), which every 400 already lists.
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
