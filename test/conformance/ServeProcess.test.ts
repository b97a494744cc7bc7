/**
 * `boxkit serve` as a process (spec: Errors 503 and rule 2): started with `--port 0` it prints the real port; on
 * SIGTERM it drains: new requests get 503 server_error with Retry-After, the request in flight finishes with its
 * answer kept, then the process exits.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as Harness from "../support/Harness.js"
import * as ServeProcess from "../support/ServeProcess.js"

interface Answer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly json: any
}

const send = (url: URL, path: string, options: { method?: string; body?: string; key?: string } = {}) =>
  new Promise<Answer>((resolve, reject) => {
    const request = http.request({
      host: url.hostname,
      port: url.port,
      path,
      method: options.method ?? "GET",
      headers: { authorization: `Bearer ${options.key ?? "sk_acme_org"}`, "content-type": "application/json" }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resolve({ status: response.statusCode ?? 0, headers: response.headers, json: text === "" ? undefined : JSON.parse(text) })
      })
    })
    request.on("error", reject)
    request.end(options.body)
  })

const waitFor = async (condition: () => Promise<boolean>, what: string) => {
  const started = Date.now()
  while (!(await condition())) {
    if (Date.now() - started > 10_000) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * `boxkit serve` as users run it: `node bin/boxkit.js`, the bundle of the sources in this one process (vitest's global
 * setup builds it; bin/boxkit.js rebuilds it when a source is newer), so SIGTERM reaches the service itself. About
 * 0.7 s of CPU to start, where tsx's command over src/bin.ts took about 6 s and relayed the signal to a child.
 */
const start = (server: Harness.Variant["server"]) =>
  ServeProcess.start(["bin/boxkit.js", "serve", "--port", "0", "--server", server])
    .then((started) => ({ ...started, url: new URL(started.origin) }))

describe.each(Harness.variants())("boxkit serve ($name)", (variant) => {
  it.live(`prints the real port for --port 0 and drains on SIGTERM (--server ${variant.server})`, () =>
    Effect.promise(async () => {
      const { child, stderr, url } = await start(variant.server)
      try {
        expect(Number(url.port)).toBeGreaterThan(0)
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
        // A create-box request whose body has not finished arriving is in flight.
        const body = Buffer.from(JSON.stringify({
          name: "kept",
          app_id: "app_00000000-0000-4000-8000-000000000001",
          image: { base: "debian" }
        }))
        let heldAnswer: Promise<Answer> | undefined
        const held = http.request({
          host: url.hostname,
          port: url.port,
          path: "/v1/boxes",
          method: "POST",
          headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "content-length": body.byteLength }
        })
        heldAnswer = new Promise((resolve, reject) => {
          held.on("response", (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (chunk: Buffer) => chunks.push(chunk))
            response.on("end", () =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, json: JSON.parse(Buffer.concat(chunks).toString()) }))
          })
          held.on("error", reject)
        })
        held.flushHeaders()
        held.write(body.subarray(0, 1))
        await waitFor(async () => (await send(url, "/_local/state")).json.in_flight === 1, "the request in flight")
        child.kill("SIGTERM")
        await waitFor(async () => (await send(url, "/_local/state")).json.draining === true, "draining")
        const refused = await send(url, "/v1/secrets/GITHUB_TOKEN")
        expect(refused.status).toBe(503)
        expect(refused.json.error).toMatchObject({ type: "server_error" })
        expect(refused.headers["retry-after"]).toMatch(/^\d+$/)
        held.end(body.subarray(1))
        const answered = await heldAnswer
        expect(answered.status).toBe(201)
        expect(answered.json.box_id).toMatch(/^sb_/)
        expect(await exited).toBe(0)
        expect(stderr()).toMatch(/draining/)
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL")
      }
    }), 90_000)
})
