/**
 * The clock routes (docs/ASSUMPTIONS.md "The virtual clock"; src/Server/http/ClockRoutes.ts) on both serving paths:
 * `GET /_local/clock`, an advance that moves the clock by exactly the seconds asked, the 409 of a real clock, the 400
 * naming `seconds` for each kind of bad body, and the `/_local` guard in front of the advance.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Clocked from "./Clocked.js"

/** A POST of `body` with a `Host` header of the caller's choice (node:http, so that it can be set). */
const postWithHost = (host: string, path: string, body: string) =>
  Effect.flatMap(LocalService.baseUrl, (baseUrl) =>
    Effect.promise(() =>
      new Promise<{ status: number; json: any }>((resolve, reject) => {
        const url = new URL(baseUrl)
        const request = http.request({
          host: url.hostname,
          port: url.port,
          path,
          method: "POST",
          headers: { host, "content-type": "application/json" }
        }, (response) => {
          let text = ""
          response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
          response.on("end", () => resolve({ status: response.statusCode ?? 0, json: text === "" ? undefined : JSON.parse(text) }))
        })
        request.on("error", reject)
        request.end(body)
      })
    ))

describe.each(Clocked.servers)("the clock routes (%s)", (server) => {
  it.live("GET /_local/clock answers now, the mode and the offset; an advance moves now by the seconds asked", () =>
    Effect.gen(function*() {
      const before = yield* Clocked.readClock
      expect(before.mode).toBe("virtual")
      expect(before.offset_seconds).toBe(0)
      expect(before.now).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      const advanced = yield* Clocked.advance(90.5)
      expect(advanced.mode).toBe("virtual")
      expect(advanced.offset_seconds).toBeGreaterThanOrEqual(90.5)
      expect(Date.parse(advanced.now) - Date.parse(before.now)).toBeGreaterThanOrEqual(90_500)
      const after = yield* Clocked.readClock
      expect(after.offset_seconds).toBe(advanced.offset_seconds)
      const zero = yield* Clocked.advance(0)
      expect(zero.offset_seconds).toBe(advanced.offset_seconds)
    }).pipe(Effect.provide(Clocked.service(server, "memory"))))

  it.live("without --clock virtual the clock is real: GET says so, an advance is a 409 envelope", () =>
    Effect.gen(function*() {
      const clock = yield* Clocked.readClock
      expect(clock).toMatchObject({ mode: "real", offset_seconds: 0 })
      const refused = yield* Clocked.request("/_local/clock/advance", { body: { seconds: 60 } })
      expect(refused.status).toBe(409)
      expect(refused.json.error).toMatchObject({ type: "conflict_error", code: "clock_is_real" })
      expect(refused.json.error.message).toContain("--clock virtual")
      expect((yield* Clocked.readClock).offset_seconds).toBe(0)
    }).pipe(Effect.provide(Clocked.service(server, "memory", { clock: "real" }))))

  it.live("a body without a valid seconds is a 400 naming seconds, and the clock does not move", () =>
    Effect.gen(function*() {
      const bodies = [{}, { seconds: -1 }, { seconds: "60" }, { seconds: null }, { seconds: 1e12 }, "not json", [60]]
      for (const body of bodies) {
        const answer = yield* Clocked.request("/_local/clock/advance", { body })
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.json.error).toMatchObject({ type: "invalid_request_error", param: "seconds" })
      }
      expect((yield* Clocked.readClock).offset_seconds).toBe(0)
    }).pipe(Effect.provide(Clocked.service(server, "memory"))))

  it.live("the advance is behind the /_local guard: a foreign Host is refused and the clock does not move", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ seconds: 3600 })
      const foreign = yield* postWithHost("attacker.example", "/_local/clock/advance", body)
      expect(foreign.status).toBe(403)
      expect(foreign.json.error.type).toBe("permission_error")
      expect((yield* Clocked.readClock).offset_seconds).toBe(0)
      const own = yield* postWithHost("localhost", "/_local/clock/advance", body)
      expect(own.status).toBe(200)
    }).pipe(Effect.provide(Clocked.service(server, "memory"))))
})
