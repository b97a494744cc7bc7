/**
 * What the OpenAPI document says, derived from the contract (docs/ASSUMPTIONS.md "The OpenAPI document"): every
 * operation names its bearer security requirement, a summary and its body limit; the clipboard takes text/plain or
 * image/*; no JSON Schema `$id` is repeated; the error envelope has `param` and `code` always, `billing_url` a URI on
 * 402; `Retry-After`, `Idempotent-Replayed` and the model response's event stream are declared; the name and key rules
 * the service enforces are in the schemas, request bodies take members they do not name, `JsonValue` is an open object,
 * every integer is within ±(2^53 - 1), the rules across fields are stated in JSON Schema (size ranges, `no_network`
 * with ingress ports, the completion window of a background request, a policy name's length after trimming) and the
 * rest are named after "Also refused".
 */
import { Ajv2020 } from "ajv/dist/2020.js"
import { describe, expect, it } from "vitest"
import { openApiDocument } from "../../src/Contract/Api.js"

const document = openApiDocument() as any
const operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation }))
)

describe("the OpenAPI document", () => {
  it("every operation requires the bearer key and has a summary and its body limit", () => {
    expect(operations.length).toBe(20)
    for (const { name, operation } of operations) {
      expect({ name, security: operation.security }).toEqual({ name, security: [{ bearer: [] }] })
      expect(operation.summary, name).toMatch(/\S/)
      expect(operation.description, name).toMatch(/Request body: at most \d+ (KiB|MiB)\.$/)
    }
    expect(document.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" })
  })

  it("the clipboard body is text/plain or an image/* type", () => {
    const body = document.paths["/v1/boxes/{box_id}/clipboard"].put.requestBody.content
    expect(Object.keys(body).sort()).toEqual(["image/*", "text/plain"])
  })

  it("has no JSON Schema $id (repeated ids make validators skip or refuse schemas)", () => {
    expect(JSON.stringify(document)).not.toMatch(/"\$id"/)
  })

  it("lists at 400 only the invalid_request_error envelope (the service never sends HttpApiDecodeError)", () => {
    expect(JSON.stringify(document)).not.toMatch(/HttpApiDecodeError/)
    for (const { name, operation } of operations) {
      expect(operation.responses["400"].content["application/json"].schema, name).toEqual({
        $ref: "#/components/schemas/InvalidRequestError"
      })
    }
  })

  it("the error envelope: param and code always there, code a string, billing_url a required URI on 402", () => {
    const billing = document.components.schemas.BillingError.properties.error
    expect(billing.required).toEqual(expect.arrayContaining(["message", "type", "param", "code", "billing_url"]))
    expect(billing.properties.code).toEqual({ anyOf: [{ type: "string" }, { type: "null" }] })
    expect(billing.properties.billing_url).toEqual({ type: "string", format: "uri" })
    expect(document.components.schemas.NotFoundError.properties.error.required).toEqual(
      expect.arrayContaining(["param", "code"])
    )
  })

  it("declares Retry-After on 429 and 503, Idempotent-Replayed on idempotent operations, and the event stream", () => {
    for (const { name, operation } of operations) {
      for (const status of ["429", "503"]) {
        expect(Object.keys(operation.responses[status].headers ?? {}), `${name} ${status}`).toContain("Retry-After")
      }
    }
    for (const [path, status] of [["/v1/boxes", "201"], ["/v1/boxes/{box_id}/upgrade", "200"], ["/v1/responses", "202"]]) {
      expect(Object.keys(document.paths[path].post.responses[status].headers)).toContain("Idempotent-Replayed")
    }
    expect(document.paths["/v1/apps/find"].post.responses["200"].headers).toBeUndefined()
    expect(Object.keys(document.paths["/v1/responses"].post.responses["200"].content).sort()).toEqual([
      "application/json",
      "text/event-stream"
    ])
  })

  it("states the rules the service checks across fields: one image kind, no reserved metadata key, no streamed background", () => {
    const box = document.paths["/v1/boxes"].post.requestBody.content["application/json"].schema
    expect(box.properties.image.allOf).toEqual([
      { oneOf: [{ required: ["base"] }, { required: ["oci"] }, { required: ["dockerfile"] }] }
    ])
    const response = document.paths["/v1/responses"].post.requestBody.content["application/json"].schema
    expect(JSON.stringify(response.allOf)).toContain("supercached_input_tokens")
    expect(response.allOf[1]).toEqual({
      not: { required: ["background", "stream"], properties: { background: { const: true }, stream: { const: true } } }
    })
    const port = document.paths["/v1/boxes/{box_id}/listeners/{guest_port}"].delete.parameters
      .find((parameter: any) => parameter.name === "guest_port")
    expect(port.schema).toEqual({ type: "integer", minimum: 1, maximum: 65535 })
    expect(document.components.schemas.DateTime).toEqual({ type: "string", format: "date-time" })
    expect(document.components.schemas.Secret.properties.created_at).toEqual({ $ref: "#/components/schemas/DateTime" })
  })

  it("states the rules of box names, secret names and Idempotency-Key", () => {
    const create = document.paths["/v1/boxes"].post
    const name = create.requestBody.content["application/json"].schema.properties.name
    expect(name).toMatchObject({ minLength: 1, maxLength: 128 })
    const pattern = new RegExp(name.pattern, "u")
    expect(["box", " 🙂 "].map((value) => pattern.test(value))).toEqual([true, true])
    expect(["   ", "a\u0007b"].map((value) => pattern.test(value))).toEqual([false, false])
    const key = create.parameters.find((parameter: any) => parameter.name === "idempotency-key")
    expect(key.schema.maxLength).toBe(255)
    const secret = document.paths["/v1/secrets/{name}"].get.parameters[0].schema
    expect(new RegExp(secret.pattern).test("  GITHUB_TOKEN ")).toBe(true)
    expect(new RegExp(secret.pattern).test("_leading")).toBe(false)
  })

  it("states the text rule of names (no line breaks, U+2028 and U+2029 included) and secret values (no NUL)", () => {
    const body = (path: string, method: string) => document.paths[path][method].requestBody.content["application/json"].schema
    const names = [
      body("/v1/boxes", "post").properties.name,
      body("/v1/apps/find", "post").properties.name,
      body("/v1/egress-policies", "post").properties.name,
      body("/v1/egress-policies/{policy_id}", "patch").properties.name
    ]
    for (const name of names) {
      const pattern = new RegExp(name.pattern, "u")
      expect(["box", " 🙂 "].map((value) => pattern.test(value))).toEqual([true, true])
      expect(["a\u2028b", "a\u2029b", "a\u0000b", "a\u0085b"].some((value) => pattern.test(value))).toBe(false)
    }
    const value = new RegExp(body("/v1/secrets", "post").properties.value.pattern, "u")
    expect(["-----BEGIN-----\nAAAA\n", "\ttabbed"].every((text) => value.test(text))).toBe(true)
    expect(value.test("a\u0000b")).toBe(false)
  })

  const ajv = new Ajv2020({ strict: false })
  const bodyOf = (path: string, method: string) => {
    const validate = ajv.compile({
      ...document.paths[path][method].requestBody.content["application/json"].schema,
      components: document.components
    })
    return (value: unknown) => validate(value) as boolean
  }

  it("request bodies take members they do not name; JsonValue is an open object; integers stay within ±(2^53 - 1)", () => {
    for (const { name, operation } of operations) {
      expect(JSON.stringify(operation.requestBody ?? {}), name).not.toContain(`"additionalProperties":false`)
      if (operation.requestBody?.content["application/json"] !== undefined) {
        expect(operation.requestBody.description, name).toMatch(/without a `Content-Type`.*members the schema does not name are ignored/)
      }
    }
    expect(document.components.schemas.JsonValue.anyOf).toContainEqual({ type: "object", additionalProperties: true })
    expect(JSON.stringify(document)).not.toContain("#/components/schemas/Int")
    const box = bodyOf("/v1/apps/find", "post")
    expect([box({ name: "demo", unnamed: 1 }), box({ name: "demo", mint_if_missing: "yes" })]).toEqual([true, false])
    const response = bodyOf("/v1/responses", "post")
    const maxOutput = (value: number) => response({ model: "m", input: "x", max_output_tokens: value })
    expect([maxOutput(Number.MAX_SAFE_INTEGER), maxOutput(2 ** 53)]).toEqual([true, false])
  })

  it("states the memory and disk range of each size, no_network with ingress ports and inline secrets in JSON Schema", () => {
    const create = bodyOf("/v1/boxes", "post")
    const box = (extra: Record<string, unknown>) =>
      create({ name: "b", app_id: "app_1", image: { base: "debian" }, ...extra })
    expect([
      box({ size: "s", memory_limit_gib: 2 }),
      box({ memory_limit_gib: 2 }),
      box({ size: "m", memory_limit_gib: 128, state_disk_limit_gib: 512 }),
      box({ size: "m", state_disk_limit_gib: 513 }),
      box({ size: "l", memory_limit_gib: 256, state_disk_limit_gib: 1024 }),
      box({ size: "l", memory_limit_gib: 8 })
    ]).toEqual([true, false, true, false, true, false])
    expect([
      box({ egress_policy: { no_network: true }, ingress_ports: [{ guest_port: 80 }] }),
      box({ egress_policy: { no_network: true }, ingress_ports: [] }),
      box({ egress_policy: { no_network: false }, ingress_ports: [{ guest_port: 80 }] })
    ]).toEqual([false, true, true])
    const secrets = (rules: unknown) => box({ egress_policy: { rules } })
    expect([
      secrets([{ host: "api.github.com", secret: "TOKEN" }]),
      secrets({ deep: [{ deeper: { secrets: ["A"] } }] }),
      secrets(JSON.parse('[{"__proto__": {"secret": "A"}}]')),
      secrets([{ host: "api.github.com" }]),
      box({ egress_policy: { allowlist: ["secret.example.com"], secret: "not in rules" } })
    ]).toEqual([false, false, false, true, true])
  })

  it("states the completion window of a background request and a policy name's length after trimming", () => {
    const response = bodyOf("/v1/responses", "post")
    const window = (background: boolean, completion_window: string) =>
      response({ model: "m", input: "x", background, metadata: { completion_window } })
    expect([window(true, "asap"), window(false, "asap"), window(true, "flex"), window(true, "soon")]).toEqual([
      false,
      true,
      true,
      false
    ])
    for (const [path, method] of [["/v1/egress-policies", "post"], ["/v1/egress-policies/{policy_id}", "patch"]]) {
      const body = bodyOf(path, method)
      const name = (value: string) => body({ name: value, document: {} })
      expect([name(`  ${"p".repeat(128)}\u3000`), name("p".repeat(129)), name("a b"), name("   ")]).toEqual([
        true,
        false,
        true,
        false
      ])
    }
  })

  it("names after \"Also refused\" the rules JSON Schema cannot state, with the param of their 400", () => {
    const description = (path: string, method: string) => document.paths[path][method].description as string
    expect(description("/v1/boxes", "post")).toMatch(/Also refused .*a `guest_port` listed twice \[`ingress_ports\[\*\]\.guest_port`\]/)
    expect(description("/v1/boxes/{box_id}/exec/{exec_id}/resize", "post")).toContain("[`exec_request_id`]")
    expect(description("/v1/responses", "post")).toContain("[`x-completion-window`]")
    expect(description("/v1/responses", "post")).toContain("[`Idempotency-Key`]")
    expect(description("/v1/egress-policies/{policy_id}", "patch")).toContain("invisible")
    expect(description("/v1/apps/find", "post")).not.toContain("Also refused")
  })
})
