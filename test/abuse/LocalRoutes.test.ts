/**
 * `/_local` as a web page in the developer's browser would try it (docs/ASSUMPTIONS.md "Local service"): a foreign
 * `Origin`, a DNS-rebound `Host`, a simple `text/plain` POST. Each is refused; the service's own requests still work.
 * Runs on both serving paths.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Harness from "../support/Harness.js"

/** A raw request (node:http, so that `Host` can be set as a browser after DNS rebinding would send it). */
const raw = (origin: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
  Effect.promise(() =>
    new Promise<{ status: number; json: any }>((resolve, reject) => {
      const url = new URL(origin)
      const request = http.request({
        host: url.hostname,
        port: url.port,
        path,
        method: options.method ?? "GET",
        headers: options.headers ?? {}
      }, (response) => {
        let text = ""
        response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, json: text === "" ? undefined : JSON.parse(text) }))
      })
      request.on("error", reject)
      request.end(options.body)
    })
  )

const origin = Effect.map(LocalService.baseUrl, (baseUrl) => baseUrl.replace(/\/v1$/, ""))
const runtimeBody = JSON.stringify({ guest_schema_version: 9 })

describe.each(Harness.variants())("the /_local routes against a web page ($name)", (variant) => {
  it.live("a simple cross-origin POST (text/plain, a foreign Origin) cannot change the runtime version", () =>
    Effect.gen(function*() {
      const service = yield* origin
      const attack = yield* raw(service, "/_local/runtime", {
        method: "POST",
        headers: { "content-type": "text/plain", origin: "http://evil.example" },
        body: runtimeBody
      })
      expect(attack.status).toBe(403)
      expect(attack.json.error.type).toBe("permission_error")
      // Without an Origin (a script on the developer's machine) a text/plain body is still refused.
      const plain = yield* raw(service, "/_local/runtime", { method: "POST", headers: { "content-type": "text/plain" }, body: runtimeBody })
      expect(plain.status).toBe(400)
      expect(plain.json.error.param).toBe("Content-Type")
      const state = yield* raw(service, "/_local/state")
      expect(state.json.guest_schema_version).toBe(1)
    }).pipe(Effect.provide(Harness.serviceOn(variant))))

  it.live("a page whose name was rebound to 127.0.0.1 (a foreign Host) cannot read the state", () =>
    Effect.gen(function*() {
      const service = yield* origin
      const rebound = yield* raw(service, "/_local/state", { headers: { host: `attacker.example:${new URL(service).port}` } })
      expect(rebound.status).toBe(403)
      expect(rebound.json.boxes).toBeUndefined()
      const foreignOrigin = yield* raw(service, "/_local/state", { headers: { origin: "http://attacker.example" } })
      expect(foreignOrigin.status).toBe(403)
    }).pipe(Effect.provide(Harness.serviceOn(variant))))

  it.live("the service's own requests work: loopback Host names, its own Origin, JSON bodies", () =>
    Effect.gen(function*() {
      const service = yield* origin
      const port = new URL(service).port
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `boxkit.localhost:${port}`]) {
        expect((yield* raw(service, "/_local/state", { headers: { host } })).status, host).toBe(200)
      }
      const own = yield* raw(service, "/_local/runtime", {
        method: "POST",
        headers: { "content-type": "application/json", origin: service },
        body: runtimeBody
      })
      expect(own.status).toBe(200)
      expect((yield* raw(service, "/_local/state", { headers: { origin: service } })).json.guest_schema_version).toBe(9)
    }).pipe(Effect.provide(Harness.serviceOn(variant))))
})
