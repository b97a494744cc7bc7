/**
 * Remembered idempotent answers are bounded, as a key holder who sends a new `Idempotency-Key` with every failing
 * create would meet the bounds: per API key, at most `idempotencyKeys` keys and `idempotencyBytes` bytes of answers
 * are remembered at once (a 4xx answer is remembered too, spec "Errors" rule 3), and past either a request with a new
 * key is refused with 429 `quota_exceeded_error` code `idempotency_keys` without running; an answer that would pass
 * the byte bound, or whose body is over 1 MiB, is not remembered at all (its key stays unsettled: a retry runs again).
 * On every store, with the organization's stored bytes: IdempotencyStores.test.ts.
 *
 * Source: docs/ASSUMPTIONS.md "Quotas"; spec "Limits / Idempotency rules", "Errors" rules 1 and 3.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { maxRememberedAnswerBytes } from "../../src/Server/pipeline/Idempotency.js"
import { defaultQuotas } from "../../src/Server/Quotas.js"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"

/** A create box that fails its own checks (400: the name is not a string), with `key`. */
const failingCreate = (key: string, apiKey = "sk_acme_org") =>
  C.post("/v1/boxes", { name: 42, image: { base: "debian" } }, apiKey, { "idempotency-key": key })

describe("remembered idempotent answers are bounded per API key", () => {
  it.effect("keys on failing creates: past the key quota a new key is refused and runs nothing; replays still answer", () =>
    C.withServiceOn(Harness.fast, { quotas: { ...defaultQuotas, idempotencyKeys: 5 }, idempotencyRetention: Duration.minutes(1) })(Effect.gen(function*() {
      for (let index = 0; index < 5; index++) expect((yield* failingCreate(`fail-${index}`)).status).toBe(400)
      const refused = yield* failingCreate("fail-5")
      C.expectError(refused, 429, "quota_exceeded_error", { code: "idempotency_keys" })
      expect(refused.headers["idempotent-replayed"]).toBeUndefined()
      // A remembered key is still replayed; a request without a key still runs; another API key has its own.
      const replay = yield* failingCreate("fail-0")
      expect(replay.status).toBe(400)
      expect(replay.headers["idempotent-replayed"]).toBe("true")
      expect((yield* C.post("/v1/boxes", { name: 42, image: { base: "debian" } })).status).toBe(400)
      expect((yield* failingCreate("fail-5", "sk_acme_ada")).status).toBe(400)
      expect((yield* C.state).idempotency_keys).toBe(6)
      // Remembered keys expire (after a minute here; 24 hours by default); then new keys are taken again.
      yield* TestClock.adjust("2 minutes")
      expect((yield* failingCreate("fail-6")).status).toBe(400)
    })))

  it.effect("bytes of remembered answers: an answer past the byte bound is not recorded; the bound is never passed", () =>
    C.withServiceOn(Harness.fast, { quotas: { ...defaultQuotas, idempotencyBytes: 4096 } })(Effect.gen(function*() {
      const answers: Array<C.RawResponse> = []
      for (let index = 0; index < 40; index++) answers.push(yield* failingCreate(`bytes-${index}`))
      for (const answer of answers) expect(answer.status).toBe(400)
      // Each remembered 400 answer is a few hundred bytes: 4 KiB holds a handful, and the rest are not recorded.
      const kept = Math.floor(4096 / Buffer.byteLength(answers[0].text))
      expect(kept).toBeGreaterThan(1)
      expect(kept).toBeLessThan(40)
      expect((yield* C.state).idempotency_keys).toBe(kept)
      expect((yield* failingCreate("bytes-0")).headers["idempotent-replayed"]).toBe("true")
      expect((yield* failingCreate(`bytes-${kept}`)).headers["idempotent-replayed"]).toBeUndefined()
    })))

  it.effect("an answer over the remembered answer bound (1 MiB by default) is not remembered: a retry runs again", () =>
    C.withServiceOn(Harness.fast, { quotas: { ...defaultQuotas, idempotencyAnswerBytes: 256 } })(Effect.gen(function*() {
      expect(maxRememberedAnswerBytes).toBe(1024 * 1024)
      const body = { model: "boxkit-local", input: "y".repeat(512) }
      const first = yield* C.post("/v1/responses", body, "sk_acme_org", { "idempotency-key": "large" })
      expect(first.status).toBe(200)
      expect(Buffer.byteLength(first.text)).toBeGreaterThan(256)
      const again = yield* C.post("/v1/responses", body, "sk_acme_org", { "idempotency-key": "large" })
      expect(again.status).toBe(200)
      expect(again.headers["idempotent-replayed"]).toBeUndefined()
      expect(again.json.id).not.toBe(first.json.id)
      // A small answer with a key is remembered and replayed.
      const failing = yield* failingCreate("small")
      expect(Buffer.byteLength(failing.text)).toBeLessThanOrEqual(256)
      const replayed = yield* failingCreate("small")
      expect(replayed.headers["idempotent-replayed"]).toBe("true")
      expect(replayed.text).toBe(failing.text)
    })))
})
