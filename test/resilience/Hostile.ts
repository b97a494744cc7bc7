/**
 * Test support of the hostile-network suites: a local service with 30% injected faults (429, 503 with and without
 * Retry-After, and connections reset after the operation committed), a client with small retry delays, and the
 * figures they report (attempts per call, time, faults, replayed answers).
 */
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

/** How many calls took 1, 2, ... attempts. */
export const distribution = (attempts: ReadonlyArray<number>) => {
  const counts: Record<number, number> = {}
  for (const n of attempts) counts[n] = (counts[n] ?? 0) + 1
  return counts
}

/** Prints the figures of one phase, for a person reading the run's output (nothing asserts them). */
export const report = (label: string, attempts: ReadonlyArray<number>, millis: number, faultsReport: any, replayed: number) =>
  console.log(
    `[hostile network] ${label}: ${attempts.length} calls in ${millis} ms; attempts per call ${
      JSON.stringify(distribution(attempts))
    } (mean ${(attempts.reduce((a, b) => a + b, 0) / attempts.length).toFixed(3)}, max ${Math.max(...attempts)}); ` +
      `requests ${faultsReport.requests}, injected ${JSON.stringify(faultsReport.injected)}; replayed answers ${replayed}`
  )

/** Runs `program` against a faulty service with a client, recording spans (logs from Info up). */
export const run = <A, E>(variant: Harness.Variant, program: (recorder: Capture.Recorder) => Effect.Effect<A, E, any>) =>
  Effect.gen(function*() {
    const recorder = yield* Capture.make
    return yield* recorder.record(
      Effect.provide(program(recorder), Harness.serviceWithClientOn(variant, "sk_acme_org", settings, retry)),
      LogLevel.Info
    )
  }) as Effect.Effect<A, E>

