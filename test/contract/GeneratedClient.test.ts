/**
 * A TypeScript client generated from the OpenAPI document by third-party tools (docs/ASSUMPTIONS.md "The OpenAPI
 * document"): `openapi-typescript` writes the types, `openapi-fetch` calls the local service with them. The generated
 * program type-checks (strict) and calls a handful of operations, a clipboard write (text/plain) and a streamed model
 * response included.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Harness from "../support/Harness.js"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

const node = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ status: number | null; output: string }>((resolve) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.on("close", (status) => resolve({ status, output }))
  })

/** The program a third party would write against the generated types. */
const program = `import createClient from "openapi-fetch"
import type { paths } from "./schema.js"

/** The 200 of POST /v1/responses in each of its forms: the JSON object and the event stream are separate types. */
type Answers = paths["/v1/responses"]["post"]["responses"][200]["content"]
type ModelResponse = Answers["application/json"]
type EventStream = Answers["text/event-stream"]
const streamIsNotTheObject: EventStream extends ModelResponse ? false : true = true

export const run = async (origin: string) => {
  // A client of the JSON answers: the event-stream form of POST /v1/responses 200 is not in its types.
  const client = createClient<paths, "application/json">({
    baseUrl: origin,
    headers: { authorization: "Bearer sk_acme_org" }
  })
  const streams = createClient<paths, "text/event-stream">({
    baseUrl: origin,
    headers: { authorization: "Bearer sk_acme_org" }
  })
  const app = await client.POST("/v1/apps/find", { body: { name: "generated", mint_if_missing: true } })
  if (app.data === undefined) throw new Error("apps.find: " + JSON.stringify(app.error))
  const created = await client.POST("/v1/boxes", {
    params: { header: { "idempotency-key": "generated-1" } },
    body: { name: "generated", app_id: app.data.id, image: { base: "debian" } }
  })
  if (created.data === undefined) throw new Error("boxes.create: " + JSON.stringify(created.error))
  const boxId: string = created.data.box_id
  let status = created.data.status
  while (status !== "running") {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const box = await client.GET("/v1/boxes/{box_id}", { params: { path: { box_id: boxId } } })
    if (box.data === undefined) throw new Error("boxes.retrieve: " + JSON.stringify(box.error))
    status = box.data.status
  }
  const clipboard = await client.PUT("/v1/boxes/{box_id}/clipboard", {
    params: { path: { box_id: boxId } },
    body: "copied text",
    bodySerializer: (body) => body,
    headers: { "content-type": "text/plain" }
  })
  const missing = await client.GET("/v1/secrets/{name}", { params: { path: { name: "NO_SUCH_SECRET" } } })
  const streamed = await streams.POST("/v1/responses", {
    body: { model: "boxkit-local", input: "stream me", stream: true },
    parseAs: "stream"
  })
  const stream: ReadableStream<Uint8Array> | null | undefined = streamed.data
  const events = stream === undefined || stream === null ? "" : await new Response(stream).text()
  // A JsonValue field takes any JSON object (open object in the document, not Record<string, never>).
  const foreground = await client.POST("/v1/responses", {
    body: { model: "boxkit-local", input: "hello", reasoning: { effort: "low" }, text: { format: { type: "text" } } }
  })
  if (foreground.data === undefined) throw new Error("responses.create: " + JSON.stringify(foreground.error))
  // The JSON client's 200 is the Model response object only: no string (event stream) in the union.
  const answer: ModelResponse = foreground.data
  // @ts-expect-error the JSON client's answer is never the event stream's text
  const text: EventStream = foreground.data
  void text
  const read = await client.GET("/v1/responses/{response_id}", { params: { path: { response_id: foreground.data.id } } })
  const terminated = await client.POST("/v1/boxes/{box_id}/terminate", { params: { path: { box_id: boxId } } })
  return {
    status,
    clipboard: clipboard.response.status,
    missing: missing.error?.error.type,
    streamIsNotTheObject,
    object: answer.object,
    streamType: streamed.response.headers.get("content-type"),
    events,
    read: read.data?.status,
    terminated: terminated.data?.status
  }
}
`

describe("a client generated with openapi-typescript and openapi-fetch", () => {
  it.scopedLive("type-checks and calls the service: boxes, clipboard, errors and a streamed response", () =>
    Effect.gen(function*() {
      const cache = join(checkout, "node_modules", ".cache")
      mkdirSync(cache, { recursive: true })
      const dir = mkdtempSync(join(cache, "boxkit-generated-client-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      writeFileSync(join(dir, "openapi.json"), LocalService.openApiJson())
      const generated = yield* Effect.promise(() =>
        node([join(checkout, "node_modules/openapi-typescript/bin/cli.js"), "openapi.json", "-o", "schema.d.ts"], dir)
      )
      expect(generated.status, generated.output).toBe(0)
      writeFileSync(join(dir, "client.ts"), program)
      writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          lib: ["ES2022", "DOM"],
          noEmit: true,
          skipLibCheck: true
        },
        files: ["client.ts"]
      }))
      const checked = yield* Effect.promise(() => node([join(checkout, "node_modules/typescript/bin/tsc"), "-p", "."], dir))
      expect(checked.output).toBe("")
      expect(checked.status).toBe(0)

      const context = yield* Layer.build(
        LocalService.layerNode(Harness.seed, {}).pipe(Layer.provide(NodeHttpClient.layerUndici))
      )
      const origin = (yield* Effect.provide(LocalService.baseUrl, context)).replace(/\/v1$/, "")
      const client = yield* Effect.promise(() => import(pathToFileURL(join(dir, "client.ts")).href))
      const result: any = yield* Effect.promise(() => client.run(origin))
      expect(result).toMatchObject({
        status: "running",
        clipboard: 200,
        missing: "not_found_error",
        read: "completed",
        streamIsNotTheObject: true,
        object: "response",
        terminated: "terminated"
      })
      expect(result.streamType).toMatch(/^text\/event-stream/)
      expect(result.events).toContain("response.completed")
    }), 120_000)
})
