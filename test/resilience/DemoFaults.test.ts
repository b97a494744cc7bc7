/**
 * The demo survives a hostile service: `boxkit demo`'s program, over real HTTP against the local service with the
 * fault mix `429=0.1,503=0.08,503-no-retry-after=0.05,reset-after-commit=0.07` (7% of requests run and then lose their
 * answer), three runs with three seeds, each printing every step. A reset that lands on create egress policy (no
 * Idempotency-Key; the demo marks it `safeToRepeat`) or on unpublish (the repeat finds the port gone) must not end
 * the run.
 *
 * Seed 7 is the seed of that failed run; seed 27 draws a reset for the demo's create egress policy (its fourth call);
 * 2026 is a third sequence. The fault mix is the one `boxkit serve --faults` was given when a run failed; `retry-after=0` and a client with
 * short backoff and 12 attempts keep each run to a few seconds and make running out of attempts (every one of 12
 * attempts faulted: 0.3^12) negligible, so what is under test is how each call treats a lost answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import * as DemoProgram from "../../src/Cli/DemoProgram.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as Harness from "../support/Harness.js"

const faultMix = "429=0.1,503=0.08,503-no-retry-after=0.05,reset-after-commit=0.07,retry-after=0"

/** The demo's steps, in the order it prints them. */
const steps = [
  "find-or-mint app",
  "create secret",
  "read secret",
  "create egress policy",
  "rename egress policy",
  "create box",
  "wait until running",
  "clipboard text",
  "clipboard PNG",
  "resize exec",
  "unpublish port",
  "upgrade",
  "foreground response",
  "background response",
  "completion webhook received",
  "terminate box"
]

const retry = { maxAttempts: 12, backoffBase: Duration.millis(5), backoffCap: Duration.millis(50) }

/** Runs the demo's program against a service with the fault mix drawn from `seed`; its printed lines and the faults. */
const runDemo = (variant: Harness.Variant, seed: number) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const console = yield* Effect.console
    const capturing = { ...console, log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void lines.push(args.join(" "))) }
    yield* DemoProgram.program.pipe(Effect.withConsole(capturing))
    const state = (yield* Harness.fetchRaw("/_local/state")).json
    return { lines, faults: state.faults as { readonly requests: number; readonly injected: Record<string, number> } }
  }).pipe(
    Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", {
      faults: { ...Either.getOrThrow(FaultInjection.parse(faultMix)), seed }
    }, retry))
  )

describe.each(Harness.variants({ stockClient: true }))("boxkit demo against a service with faults ($name)", (variant) => {
  for (const seed of [7, 27, 2026]) {
    it.live(`completes every step with the fault mix, seed ${seed}`, () =>
      Effect.gen(function*() {
        const { faults, lines } = yield* runDemo(variant, seed)
        expect(lines.map((line) => /^ok\s+\d+ ms {2}([^:]+):/.exec(line)?.[1])).toEqual(steps)
        // The mix did hit the run: more requests than calls, and answers lost after the request ran.
        expect(faults.injected["reset-after-commit"]).toBeGreaterThan(0)
        expect(faults.injected["429"] + faults.injected["503"] + faults.injected["503-no-retry-after"]).toBeGreaterThan(0)
      }), 60_000)
  }
})
