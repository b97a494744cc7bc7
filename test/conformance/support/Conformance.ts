/**
 * Support for the conformance suites: the real local service on port 0 (built inside the test so its Clock is the
 * test's TestClock), raw HTTP requests over node:http (with a keep-alive agent), requests held in flight by a body
 * that has not finished arriving, the inspected state, and envelope assertions.
 */
import type { HttpServer } from "@effect/platform"
import { expect } from "@effect/vitest"
import { Effect, Layer, Schema, TestClock } from "effect"
import * as http from "node:http"
import * as LocalService from "../../../src/Server/LocalService.js"
import type { LocalServiceSettings } from "../../../src/Server/LocalServiceConfig.js"
import type * as Routes from "../../../src/Server/http/Routes.js"
import * as Seed from "../../../src/Server/state/Seed.js"
import * as Harness from "../../support/Harness.js"

/** The example seed's app. */
export const appId = "app_00000000-0000-4000-8000-000000000001"
/** The example seed's saved policy (an empty document). */
export const policyId = "ep_00000000-0000-4000-8000-000000000001"
/** A well-formed box id that no box has. */
export const unknownBoxId = "sb_00000000-0000-4000-8000-00000000dead"

/** The example seed with `extra` merged in (arrays appended). */
export const seedWith = (extra: Partial<Seed.SeedInput>): Seed.Seed =>
  Schema.decodeUnknownSync(Seed.Seed)({
    organizations: [...(Harness.seed.organizations as Array<unknown>), ...(extra.organizations ?? [])],
    users: [...Harness.seed.users, ...(extra.users ?? [])],
    api_keys: [...Harness.seed.api_keys, ...(extra.api_keys ?? [])],
    secrets: [...Harness.seed.secrets, ...(extra.secrets ?? [])],
    egress_policies: [...Harness.seed.egress_policies, ...(extra.egress_policies ?? [])],
    apps: [...Harness.seed.apps, ...(extra.apps ?? [])]
  })

/**
 * Runs `program` against a fresh local service on the serving path and store of `on`, built inside the current test
 * so it shares the test's Clock (a TestClock under `it.effect`). The TestClock is first set to the wall-clock time,
 * so the example seed's organizations (created 2026-01-01) are not new.
 */
export const withServiceOn = (
  on: Harness.Variant,
  settings: Partial<LocalServiceSettings> = {},
  seed: Seed.Seed = Harness.seed
) =>
<A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.zipRight(
    TestClock.setTime(Date.now()),
    Effect.provide(Effect.ensuring(program, abortHeld), Harness.serviceOn(on, settings, seed))
  )

/** Requests opened by {@link hold} and not answered yet: aborted when a test ends, so the server can close. */
const openHeld = new Set<http.ClientRequest>()

const abortHeld = Effect.sync(() => {
  for (const request of openHeld) request.destroy()
  openHeld.clear()
})

/** The services of the running local service (for `inspectState`, Admission, ...). */
export type Services = Layer.Layer.Success<ReturnType<typeof LocalService.layerNode>>

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

/** A raw request against the service in context. */
export type Send = Effect.Effect<RawResponse, never, HttpServer.HttpServer>

/** An answer as seen on the wire. */
export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly json: any
}

/** Options of a raw request. `body` is sent as is; `chunked` sends it without Content-Length. */
export interface RawOptions {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string | Uint8Array
  readonly chunked?: boolean
}

const origin = Effect.map(LocalService.baseUrl, (baseUrl) => new URL(baseUrl.replace(/\/v1$/, "")))

const collect = (response: http.IncomingMessage): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    response.on("data", (chunk: Buffer) => chunks.push(chunk))
    response.on("error", reject)
    response.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      let json: any = undefined
      try {
        json = text === "" ? undefined : JSON.parse(text)
      } catch {
        json = undefined
      }
      resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json })
    })
  })

const open = (url: URL, path: string, options: RawOptions, declaredLength?: number) => {
  const body = options.body === undefined ? undefined : typeof options.body === "string"
    ? Buffer.from(options.body, "utf8")
    : Buffer.from(options.body)
  const headers: Record<string, string | number> = { ...options.headers }
  if (!options.chunked && (body !== undefined || declaredLength !== undefined)) {
    headers["content-length"] = declaredLength ?? body!.byteLength
  }
  const request = http.request({
    host: url.hostname,
    port: url.port,
    path,
    method: options.method ?? "GET",
    headers,
    agent
  })
  const answer = new Promise<RawResponse>((resolve, reject) => {
    request.on("response", (response) => collect(response).then(resolve, reject))
    request.on("error", reject)
  })
  return { request, body, answer }
}

/**
 * How long (real time) a request may go unanswered before it counts as a hang: status 0. Generous, below the tests'
 * 30 s limit: on a loaded machine two dozen requests at once against PostgreSQL can take several seconds to answer,
 * and only a request that never answers is a hang.
 */
export const answerTimeoutMillis = 25_000

/**
 * Sends one request to the service in context; `path` is relative to the origin (e.g. `/v1/boxes`). A request left
 * unanswered for {@link answerTimeoutMillis} (real time) is aborted and answers status 0, so a hang fails the test
 * that sent it instead of freezing the suite.
 */
export const request = (path: string, options: RawOptions = {}): Send =>
  Effect.flatMap(origin, (url) =>
    Effect.promise(() => {
      const { answer, body, request } = open(url, path, options)
      request.end(body)
      let timer: ReturnType<typeof setTimeout> | undefined
      const hang = new Promise<RawResponse>((resolve) => {
        timer = setTimeout(() => {
          request.destroy()
          resolve({ status: 0, headers: {}, text: `no answer within ${answerTimeoutMillis} ms`, json: undefined })
        }, answerTimeoutMillis)
      })
      return Promise.race([answer.catch((error) => ({ status: 0, headers: {}, text: String(error), json: undefined })), hang])
        .finally(() => clearTimeout(timer))
    }))

/** Headers with a bearer key and a JSON content type, plus `extra`. */
export const auth = (key = "sk_acme_org", extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
  ...extra
})

/** POSTs JSON with the bearer `key`. */
export const post = (path: string, body: unknown, key = "sk_acme_org", extra: Record<string, string> = {}) =>
  request(path, { method: "POST", headers: auth(key, extra), body: body === undefined ? undefined : JSON.stringify(body) })

/** GETs with the bearer `key`. */
export const get = (path: string, key = "sk_acme_org", extra: Record<string, string> = {}) =>
  request(path, { method: "GET", headers: auth(key, extra) })

/**
 * A request held in flight: its headers and the first byte of its body are sent, the rest waits for `finish`.
 * `answer` completes when the service answers (which it may do early, e.g. with a 429).
 */
export interface HeldRequest {
  readonly finish: Effect.Effect<RawResponse>
  readonly answer: Promise<RawResponse>
  readonly abort: Effect.Effect<void>
}

/** Opens a request whose JSON `body` arrives only when `finish` runs (the first byte goes now). */
export const hold = (path: string, body: unknown, key = "sk_acme_org", extra: Record<string, string> = {}) =>
  Effect.flatMap(origin, (url) =>
    Effect.sync((): HeldRequest => {
      const bytes = Buffer.from(JSON.stringify(body), "utf8")
      const { answer, request } = open(url, path, { method: "POST", headers: auth(key, extra) }, bytes.byteLength)
      openHeld.add(request)
      answer.then(() => openHeld.delete(request), () => openHeld.delete(request))
      request.flushHeaders()
      request.write(bytes.subarray(0, 1))
      return {
        answer,
        finish: Effect.promise(() => {
          request.end(bytes.subarray(1))
          return answer
        }),
        abort: Effect.sync(() => void request.destroy())
      }
    }))

/** The service's inspected state (`GET /_local/state`), read in process. */
export const state = Effect.map(LocalService.inspectState, (value) => JSON.parse(JSON.stringify(value)) as any)

/** Waits (on real time, polling every 2 ms, at most 5 s) until `condition` holds of the inspected state. */
export const awaitState = (condition: (state: any) => boolean) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (true) {
      const current = yield* state
      if (condition(current)) return current
      if (Date.now() - started > 5000) return yield* Effect.dieMessage("state condition not reached within 5 s")
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
    }
  })

/** Asserts an error envelope with this status, `type`, and (when given) `code` and `param`. */
export const expectError = (
  response: RawResponse,
  status: number,
  type: string,
  expected: { readonly code?: string | null; readonly param?: string | null; readonly message?: RegExp } = {}
) => {
  expect({ status: response.status, type: response.json?.error?.type }).toEqual({ status, type })
  expect(typeof response.json.error.message).toBe("string")
  if ("code" in expected) expect(response.json.error.code).toBe(expected.code)
  if ("param" in expected) expect(response.json.error.param).toBe(expected.param)
  if (expected.message !== undefined) expect(response.json.error.message).toMatch(expected.message)
}

/** A valid create-box body, with `overrides` merged in. */
export const boxBody = (overrides: Record<string, unknown> = {}) => ({
  name: "box",
  app_id: appId,
  image: { base: "debian" },
  ...overrides
})

/** Creates a box (201 expected) and returns its id. */
export const createBox = (overrides: Record<string, unknown> = {}, key = "sk_acme_org") =>
  Effect.map(post("/v1/boxes", boxBody(overrides), key), (response) => {
    expect(response.status, response.text).toBe(201)
    return response.json.box_id as string
  })

/** Creates a box and lets its boot finish (advances the TestClock by the boot delay). */
export const runningBox = (overrides: Record<string, unknown> = {}, key = "sk_acme_org") =>
  Effect.gen(function*() {
    const boxId = yield* createBox(overrides, key)
    yield* TestClock.adjust("200 millis")
    return boxId
  })

/** The inspected record of one box. */
export const boxState = (boxId: string) =>
  Effect.map(state, (current) => current.boxes.find((box: any) => box.id === boxId))

/** Values for the path parameters of the contract's routes. */
export interface PathValues {
  readonly box_id?: string
  readonly name?: string
  readonly policy_id?: string
  readonly exec_id?: string
  readonly guest_port?: string
  readonly response_id?: string
}

/** The concrete path of a route of the contract, its parameters filled in from `values` (else sample values). */
export const pathOf = (route: Routes.Route, values: PathValues = {}): string => {
  const defaults: Record<string, string> = {
    box_id: unknownBoxId,
    name: "GITHUB_TOKEN",
    policy_id: policyId,
    exec_id: "exec_1",
    guest_port: "8080",
    response_id: "resp_00000000000000000000000000000000"
  }
  const pieces = route.pattern.source.replace(/^\^/, "").replace(/\$$/, "").split("[^/]+")
  return pieces.map((piece, index) => {
    const literal = piece.replace(/\\(.)/g, "$1")
    if (index === pieces.length - 1) return literal
    const parameter = route.pathParameters[index]
    return literal + ((values as Record<string, string | undefined>)[parameter] ?? defaults[parameter])
  }).join("")
}

/** A body that every route of the contract accepts in shape (the route decides what it reads). */
export const sampleBody = (route: Routes.Route): string | undefined => {
  switch (route.name) {
    case "apps.find":
      return JSON.stringify({ name: "demo" })
    case "secrets.create":
      return JSON.stringify({ name: "SAMPLE", value: "sample-value" })
    case "egressPolicies.create":
      return JSON.stringify({ name: "p", document: {} })
    case "egressPolicies.rename":
      return JSON.stringify({ name: "renamed" })
    case "boxes.create":
      return JSON.stringify(boxBody())
    case "exec.resize":
      return JSON.stringify({ cols: 80, rows: 24 })
    case "listeners.publish":
      return JSON.stringify({ guest_port: 9000 })
    case "listeners.addDomain":
      return JSON.stringify({ hostname: "app.example.com" })
    case "clipboard.write":
      return "text"
    case "responses.create":
      return JSON.stringify({ model: "boxkit-local", input: "hi" })
    default:
      return undefined
  }
}

/** Sends a route's sample request with `headers` (Content-Type added to match the sample body). */
export const sendRoute = (route: Routes.Route, headers: Record<string, string>, values: PathValues = {}) => {
  const body = sampleBody(route)
  return request(pathOf(route, values), {
    method: route.method,
    headers: {
      ...(body === undefined ? {} : { "content-type": route.name === "clipboard.write" ? "text/plain" : "application/json" }),
      ...headers
    },
    body
  })
}
