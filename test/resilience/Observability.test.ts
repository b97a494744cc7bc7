/**
 * Observability: every client operation is a span with status, attempts and replayed; retries are logged at debug
 * with the error type; and the API key, secret values and webhook tokens never appear in any span, log line or error
 * message, on the client or in the embedded service (both run under the recording tracer and logger).
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Redacted } from "effect"
import { AppId } from "../../src/Domain/Ids.js"
import { Boxes } from "../../src/Client/Boxes.js"
import { Responses } from "../../src/Client/Responses.js"
import { Secrets } from "../../src/Client/Secrets.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as Harness from "../support/Harness.js"
import * as Capture from "./Capture.js"

const appId = AppId.make("app_00000000-0000-4000-8000-000000000001")
const secretValue = "hunter2-observability-value"
const webhookToken = "whk_observability_token_42"
const forbidden = ["sk_acme_org", "sk_not_a_real_key_zz", secretValue, webhookToken, "s3cr3t", "Bearer "]

const faults = FaultInjection.settings({
  rates: { "429": 0.2, "503-no-retry-after": 0.1, "reset-after-commit": 0.1 },
  retryAfter: Duration.zero,
  seed: 11
})
const retry = { maxAttempts: 30, backoffBase: Duration.millis(1), backoffCap: Duration.millis(5) }

describe.each(Harness.variants({ stockClient: true }))("spans, logs and redaction ($name)", (variant) => {
  it.live("operations are spans with attempts, status and replayed; retries are debug logs; no secret leaks", () =>
    Effect.gen(function*() {
      const recorder = yield* Capture.make
      const failures: Array<string> = []
      yield* recorder.record(
        Effect.gen(function*() {
          const boxes = yield* Boxes
          const secrets = yield* Secrets
          const responses = yield* Responses
          yield* Effect.forEach(
            Array.from({ length: 30 }, (_, i) => i),
            (i) => boxes.create({ name: `observed-${i}`, app_id: appId, image: { base: "debian" } }),
            { concurrency: 5 }
          )
          yield* secrets.create("OBSERVED_SECRET", Redacted.make(secretValue))
          yield* secrets.retrieve("OBSERVED_SECRET")
          yield* secrets.retrieve("GITHUB_TOKEN")
          const submitted = yield* responses.submit({
            model: "boxkit-local",
            input: "observed",
            metadata: { completion_webhook: "http://127.0.0.1:9/hook", webhook_token: webhookToken }
          })
          yield* responses.awaitCompletion(submitted.value.id, { interval: Duration.millis(10) })
          // Failures: a 404, and an invalid key (401), whose messages are kept to be checked too.
          const missing = yield* Effect.exit(boxes.retrieve("sb_00000000-0000-4000-8000-00000000dead" as any))
          if (Exit.isFailure(missing)) failures.push(Cause.pretty(missing.cause))
        }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", { faults }, retry)))
      )
      const invalid = yield* recorder.record(
        Effect.flatMap(Boxes, (boxes) => Effect.exit(boxes.create({ name: "x", app_id: appId, image: { base: "debian" } })))
          .pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_not_a_real_key_zz")))
      )
      expect(Exit.isFailure(invalid)).toBe(true)
      if (Exit.isFailure(invalid)) {
        failures.push(Cause.pretty(invalid.cause))
        expect(Cause.squash(invalid.cause)).toMatchObject({ _tag: "AuthenticationError", code: "invalid_api_key" })
      }

      // Spans: one per operation, with the attributes.
      const creates = Capture.named(recorder, "Boxes.create")
      expect(creates.length).toBe(31)
      const succeeded = creates.filter((span) => span.attributes.get("boxkit.outcome") === "success")
      expect(succeeded).toHaveLength(30)
      for (const span of succeeded) {
        expect(span.attributes.get("boxkit.attempts")).toBeGreaterThanOrEqual(1)
        expect(span.attributes.get("boxkit.status")).toBe("creating")
        expect(typeof span.attributes.get("boxkit.replayed")).toBe("boolean")
        expect(span.attributes.get("boxkit.safe_to_repeat")).toBe(true)
      }
      expect(succeeded.some((span) => (span.attributes.get("boxkit.attempts") as number) > 1)).toBe(true)
      const refused = creates.find((span) => span.attributes.get("boxkit.outcome") === "failure")!
      expect(Object.fromEntries(refused.attributes)).toMatchObject({
        "boxkit.attempts": 1,
        "boxkit.error": "AuthenticationError",
        "boxkit.error_type": "authentication_error",
        "boxkit.http_status": "401",
        "boxkit.code": "invalid_api_key"
      })
      for (const name of ["Secrets.create", "Secrets.retrieve", "Responses.submit", "Responses.retrieve", "Boxes.retrieve"]) {
        expect(Capture.named(recorder, name).length, name).toBeGreaterThan(0)
        expect(Capture.named(recorder, name).every((span) => span.attributes.has("boxkit.attempts")), name).toBe(true)
      }
      expect(Capture.named(recorder, "Responses.submit")[0].attributes.get("boxkit.status")).toBe("queued")

      // Retries are logged at debug level with the error type; giving up too.
      const retries = recorder.logs.filter((line) => line.message === "boxkit retrying")
      expect(retries.length).toBeGreaterThan(0)
      expect(retries.every((line) => line.level === "DEBUG")).toBe(true)
      const types = new Set(retries.map((line) => String(line.annotations.error_type ?? line.annotations.error)))
      expect(types).toContain("rate_limit_error")
      expect(types).toContain("server_error")
      expect(types).toContain("TransportError")
      expect(retries[0].annotations).toHaveProperty("attempt")
      expect(retries[0].annotations).toHaveProperty("wait")
      const gaveUp = recorder.logs.filter((line) => line.message === "boxkit not retrying")
      expect(gaveUp.some((line) => line.annotations.reason === "not-retryable" && line.annotations.status === "401")).toBe(true)

      // Nothing secret anywhere: spans (names, attributes, events, exits), log lines, error messages.
      const everything = [recorder.text(), ...failures].join("\n")
      expect(everything.length).toBeGreaterThan(10_000)
      for (const secret of forbidden) expect(everything, secret).not.toContain(secret)
    }))
})
