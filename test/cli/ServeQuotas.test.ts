/**
 * `boxkit serve`'s quota flags (docs/ASSUMPTIONS.md "Quotas (local service)"): each flag sets the quota
 * `GET /_local/state` reports, and the per-API-key idempotency bound set by `--quota-idempotency-keys` refuses a
 * request with a new key past it (429 `quota_exceeded_error` code `idempotency_keys`) while a remembered key is still
 * replayed.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ServeProcess from "../support/ServeProcess.js"

/** A create-box request the service refuses (400: no image), with an Idempotency-Key: its 400 is remembered. */
const refusedCreate = (origin: string, key: string) =>
  fetch(`${origin}/v1/boxes`, {
    method: "POST",
    headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ name: "no-image", app_id: "app_00000000-0000-4000-8000-000000000001" })
  })

describe("boxkit serve quota flags", () => {
  it("set the quotas /_local/state reports, and --quota-idempotency-keys bounds the remembered keys of an API key", async () => {
    const { child, origin } = await ServeProcess.start([
      "bin/boxkit.js",
      "serve",
      "--port",
      "0",
      "--quota-boxes", "7",
      "--quota-background-responses", "6",
      "--quota-stored-mb", "5",
      "--quota-secrets", "4",
      "--quota-egress-policies", "3",
      "--quota-apps", "9",
      "--quota-idempotency-keys", "2",
      "--quota-idempotency-mb", "1"
    ])
    try {
      const state = await (await fetch(`${origin}/_local/state`)).json()
      expect(state.quotas).toEqual({
        boxes: 7,
        background_responses: 6,
        stored_bytes: 5 * 1024 * 1024,
        secrets: 4,
        egress_policies: 3,
        apps: 9,
        idempotency_keys_per_api_key: 2,
        idempotency_bytes_per_api_key: 1024 * 1024
      })
      expect((await refusedCreate(origin, "first")).status).toBe(400)
      expect((await refusedCreate(origin, "second")).status).toBe(400)
      const third = await refusedCreate(origin, "third")
      expect(third.status).toBe(429)
      expect((await third.json()).error).toMatchObject({ type: "quota_exceeded_error", code: "idempotency_keys" })
      const replay = await refusedCreate(origin, "first")
      expect(replay.status).toBe(400)
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
    } finally {
      child.kill("SIGKILL")
    }
  }, 60_000)
})
