/**
 * The baseline of the throughput figures: a raw `node:http` server doing the work of `POST /v1/apps/find` and
 * nothing more (the practical limit of this machine): authenticate the bearer key against a `Map`, parse the JSON
 * body, find or mint the app in a `Map`, answer the App object `{id, name, created_at}` (id `app_` + UUID,
 * created_at in Unix seconds). It also answers `GET /openapi.json` with a minimal document, for the cold-start
 * baseline. Errors use the spec's envelope (401 `invalid_api_key`, 400, 404).
 *
 * Run: `node node_modules/tsx/dist/cli.mjs bench/RawServer.ts --port 0 --seed FILE`; prints
 * `listening on http://HOST:PORT/v1`. The seed file has the format of `boxkit serve --seed` (only `users` and
 * `api_keys` are read; a user-scoped key acts in its user's organization).
 *
 * Source: docs/ASSUMPTIONS.md "Benchmarks" (the throughput baseline); spec "POST {api_url}/apps/find", "App",
 * "Errors".
 *
 * @since 0.1.0
 */
import { randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { parseArgs } from "node:util"

interface SeedFile {
  readonly users?: ReadonlyArray<{ readonly id: string; readonly org_id: string }>
  readonly api_keys?: ReadonlyArray<{ readonly key: string; readonly org_id?: string; readonly user_id?: string }>
}

interface App {
  readonly id: string
  readonly name: string
  readonly created_at: number
}

const { values } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "0" },
    seed: { type: "string" }
  }
})

const seed: SeedFile = values.seed === undefined ? {} : JSON.parse(readFileSync(values.seed, "utf8"))
const userOrganization = new Map((seed.users ?? []).map((user) => [user.id, user.org_id] as const))
/** API key → organization id. */
const organizationOfKey = new Map<string, string>()
for (const apiKey of seed.api_keys ?? []) {
  const orgId = apiKey.org_id ?? (apiKey.user_id === undefined ? undefined : userOrganization.get(apiKey.user_id))
  if (orgId !== undefined) organizationOfKey.set(apiKey.key, orgId)
}
/** `orgId \0 name` → app. */
const apps = new Map<string, App>()

const openApi = JSON.stringify({
  openapi: "3.1.0",
  info: { title: "raw node:http baseline", version: "0.1.0" },
  paths: { "/v1/apps/find": { post: {} } }
})

const send = (response: ServerResponse, status: number, body: string) => {
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  response.end(body)
}

const fail = (response: ServerResponse, status: number, type: string, message: string, param: string | null, code: string | null) =>
  send(response, status, JSON.stringify({ error: { message, type, param, code } }))

const bearer = /^Bearer[ \t]+(\S+)$/i

const findApp = (request: IncomingMessage, response: ServerResponse, body: Buffer) => {
  const match = bearer.exec(request.headers.authorization ?? "")
  const orgId = match === null ? undefined : organizationOfKey.get(match[1])
  if (orgId === undefined) {
    return fail(response, 401, "authentication_error", "Missing or invalid API key.", null, "invalid_api_key")
  }
  let payload: { name?: unknown; mint_if_missing?: unknown }
  try {
    payload = JSON.parse(body.toString("utf8"))
  } catch {
    return fail(response, 400, "invalid_request_error", "The body is not valid JSON.", null, null)
  }
  const name = payload?.name
  if (typeof name !== "string" || name.length < 1 || name.length > 128) {
    return fail(response, 400, "invalid_request_error", "name must be 1 to 128 characters.", "name", null)
  }
  if (payload.mint_if_missing !== undefined && typeof payload.mint_if_missing !== "boolean") {
    return fail(response, 400, "invalid_request_error", "mint_if_missing must be a boolean.", "mint_if_missing", null)
  }
  const id = `${orgId}\u0000${name}`
  let app = apps.get(id)
  if (app === undefined) {
    if (payload.mint_if_missing !== true) {
      return fail(response, 404, "not_found_error", `No app named ${JSON.stringify(name)}.`, "name", null)
    }
    app = { id: `app_${randomUUID()}`, name, created_at: Math.floor(Date.now() / 1000) }
    apps.set(id, app)
  }
  send(response, 200, JSON.stringify(app))
}

const server = createServer((request, response) => {
  if (request.method === "GET" && request.url === "/openapi.json") return send(response, 200, openApi)
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    if (request.method === "POST" && request.url === "/v1/apps/find") return findApp(request, response, Buffer.concat(chunks))
    fail(response, 404, "not_found_error", `No route ${request.method} ${request.url}.`, null, null)
  })
})

server.listen(Number(values.port), values.host, () => {
  const address = server.address()
  if (address !== null && typeof address === "object") console.log(`listening on http://${values.host}:${address.port}/v1`)
})

const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.once("SIGTERM", stop)
process.once("SIGINT", stop)
