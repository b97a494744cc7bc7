/**
 * Test support of the hostile-network suites: a local service with 30% injected faults (429, 503 with and without
 * Retry-After, and connections reset after the operation committed), a client with small retry delays, what each
 * call went through (its attempts, the error of each retried attempt, whether its answer was replayed), and the
 * figures they report (attempts per call, time, faults, replayed answers).
 */
import { expect } from "@effect/vitest"
import { Duration, Effect, LogLevel, Schedule } from "effect"
import { AppId } from "../../src/Domain/Ids.js"
import type { RetrySettings } from "../../src/Client/BoxkitConfig.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import type { LocalServiceSettings } from "../../src/Server/LocalServiceConfig.js"
import * as Harness from "../support/Harness.js"
import * as Capture from "./Capture.js"

/** Logical calls per phase. */
export const calls = 500
/** Calls in flight at once. */
export const concurrency = 25
/** The example seed's app. */
export const appId = AppId.make("app_00000000-0000-4000-8000-000000000001")

/** 30% of /v1 requests faulted; Retry-After 0 s so that the test runs in seconds. */
export const faults = FaultInjection.settings({
  rates: { "429": 0.08, "503": 0.08, "503-no-retry-after": 0.06, "reset-after-commit": 0.08 },
  retryAfter: Duration.zero,
  seed: 2026
})
/** Service settings: the faults and a 5 ms boot. */
export const settings: Partial<LocalServiceSettings> = { faults, bootDelay: Duration.millis(5) }
/** Client retry settings: small delays, enough attempts for 30% faults. */
export const retry: Partial<RetrySettings> = {
  maxAttempts: 25,
  backoffBase: Duration.millis(1),
  backoffCap: Duration.millis(20),
  attemptTimeout: Duration.seconds(5),
  deadline: Duration.seconds(20)
}

/** `GET /_local/state` of the service in context. */
export const state = Effect.map(Harness.fetchRaw("/_local/state"), (response) => response.json)

/** Polls `/_local/state` (never faulted) every 100 ms until `done` holds. */
export const stateWhen = (done: (state: any) => boolean) =>
  state.pipe(
    Effect.repeat(Schedule.spaced("100 millis").pipe(Schedule.whileInput((s: any) => !done(s)), Schedule.passthrough)),
    Effect.timeout("20 seconds")
  )

/** Attempts per call, from the `boxkit.attempts` attribute of the spans named `name`. */
export const attemptsOf = (recorder: Capture.Recorder, name: string) =>
  Capture.named(recorder, name).map((span) => Number(span.attributes.get("boxkit.attempts")))

/**
 * One logical call as the client saw it: its attempts, the error tag of each attempt it retried (from its
 * "boxkit retrying" debug log lines, in order), and whether its answer carried `Idempotent-Replayed: true`.
 */
export interface CallRecord {
  readonly attempts: number
  readonly retried: ReadonlyArray<string>
  readonly replayed: boolean
}

/** The calls of the spans named `name` (`boxkit.attempts`, `boxkit.replayed`, the retry log lines within each). */
export const callsOf = (recorder: Capture.Recorder, name: string): ReadonlyArray<CallRecord> => {
  const spans = Capture.named(recorder, name)
  const lines = Capture.loggedWithin(recorder, spans)
  return spans.map((span) => ({
    attempts: Number(span.attributes.get("boxkit.attempts")),
    retried: lines.get(span.spanId)!.filter((line) => line.message === "boxkit retrying").map((line) =>
      String(line.annotations.error)
    ),
    replayed: span.attributes.get("boxkit.replayed") === true
  }))
}

/**
 * Errors after which the client does not know whether the service carried the attempt out: the connection closed
 * after the request was sent (`TransportError`, e.g. a reset after commit) or the attempt ran past its timeout
 * (`TimeoutError`: on a loaded machine the service may still finish it and remember its answer).
 */
const lostAnswers: ReadonlySet<string> = new Set(["TransportError", "TimeoutError"])

/**
 * Checks what the spec promises of the `calls` of one phase, whatever the timing: every call ended with an answer
 * after retrying each failed attempt once (its retried errors are its attempts but the last); an answer replayed
 * (`Idempotent-Replayed: true`: spec "Errors" rule 3) only for a call an earlier attempt of which lost its answer
 * (spec "Limits", idempotency rules: only a retry of a request that ran gets the remembered answer), and some were;
 * and the service saw every attempt that was answered and at most every attempt made (`requests`: the `/v1` requests
 * it counted in the phase; an attempt that timed out or lost its connection may never have reached it). Returns the
 * replayed answers, the attempts whose answer was lost (resets and timeouts) and those that timed out, for the report.
 */
export const expectReplaysAfterLostAnswers = (calls: ReadonlyArray<CallRecord>, requests: number) => {
  for (const call of calls) expect(call.retried).toHaveLength(call.attempts - 1)
  const replayed = calls.filter((call) => call.replayed)
  expect(replayed.length).toBeGreaterThan(0)
  for (const call of replayed) {
    const after = `a replayed answer after ${call.attempts} attempts, retried after [${call.retried.join(", ")}]`
    expect(call.retried.some((error) => lostAnswers.has(error)), after).toBe(true)
  }
  const attempts = calls.reduce((sum, call) => sum + call.attempts, 0)
  const lost = calls.reduce((sum, call) => sum + call.retried.filter((error) => lostAnswers.has(error)).length, 0)
  expect(requests).toBeLessThanOrEqual(attempts)
  expect(requests).toBeGreaterThanOrEqual(attempts - lost)
  const timedOut = calls.reduce((sum, call) => sum + call.retried.filter((error) => error === "TimeoutError").length, 0)
  return { replayed: replayed.length, lost, timedOut }
}

/** How many calls took 1, 2, ... attempts. */
export const distribution = (attempts: ReadonlyArray<number>) => {
  const counts: Record<number, number> = {}
  for (const n of attempts) counts[n] = (counts[n] ?? 0) + 1
  return counts
}

/** Prints the figures of one phase, for a person reading the run's output (nothing asserts them). */
export const report = (
  label: string,
  attempts: ReadonlyArray<number>,
  millis: number,
  faultsReport: any,
  replays: { readonly replayed: number; readonly lost: number; readonly timedOut: number }
) =>
  console.log(
    `[hostile network] ${label}: ${attempts.length} calls in ${millis} ms; attempts per call ${
      JSON.stringify(distribution(attempts))
    } (mean ${(attempts.reduce((a, b) => a + b, 0) / attempts.length).toFixed(3)}, max ${Math.max(...attempts)}); ` +
      `requests ${faultsReport.requests}, injected ${JSON.stringify(faultsReport.injected)}; replayed answers ` +
      `${replays.replayed} after ${replays.lost} lost answers (${replays.timedOut} attempts timed out)`
  )

/**
 * Runs `program` against a faulty service with a client, recording spans and logs (from Debug up: the client's
 * "boxkit retrying" lines say which error each retried attempt had).
 */
export const run = <A, E>(variant: Harness.Variant, program: (recorder: Capture.Recorder) => Effect.Effect<A, E, any>) =>
  Effect.gen(function*() {
    const recorder = yield* Capture.make
    return yield* recorder.record(
      Effect.provide(program(recorder), Harness.serviceWithClientOn(variant, "sk_acme_org", settings, retry)),
      LogLevel.Debug
    )
  }) as Effect.Effect<A, E>

