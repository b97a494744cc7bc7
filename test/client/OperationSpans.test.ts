/**
 * Every client operation is an `Effect.fn` span (Effect's own, docs/decisions/0006-client-own-code-or-stock.md), also
 * under Effect's built-in tracer: a failed call's `Cause.pretty` names the operation it failed in, and a caller's
 * `Effect.currentSpan` inside the call chain sees it. `Effect.withTracerEnabled(false)` (Effect's switch) makes no
 * span under any tracer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Tracer } from "effect"
import { Apps } from "../../src/Client/Apps.js"
import * as BoxkitTesting from "../../src/testing.js"

/** A recording tracer over the built-in one. */
const recording = Effect.map(Effect.tracer, (base) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (...args) => {
      const span = base.span(...args)
      spans.push(span)
      return span
    },
    context: base.context
  })
  return { spans, tracer }
})

const service = BoxkitTesting.layer()

describe("operation spans", () => {
  it.live("under the built-in tracer a failed call names its operation span in Cause.pretty", () =>
    Effect.gen(function*() {
      const apps = yield* Apps
      const exit = yield* Effect.exit(apps.find("no-such-app-for-spans"))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(Cause.pretty(exit.cause)).toContain("Apps.find")
    }).pipe(Effect.provide(Layer.fresh(service))))

  it.live("under a tracer, the operation is a span with the call's attributes; withTracerEnabled(false) makes none", () =>
    Effect.gen(function*() {
      const apps = yield* Apps
      const { spans, tracer } = yield* recording
      yield* Effect.withTracer(apps.find("spans-app", { mintIfMissing: true }), tracer)
      const find = spans.filter((span) => span.name === "Apps.find")
      expect(find).toHaveLength(1)
      expect(find[0].attributes.get("boxkit.attempts")).toBe(1)
      expect(find[0].attributes.get("boxkit.outcome")).toBe("success")
      spans.length = 0
      yield* Effect.withTracer(Effect.withTracerEnabled(apps.find("spans-app"), false), tracer)
      expect(spans.filter((span) => span.name === "Apps.find")).toEqual([])
    }).pipe(Effect.provide(Layer.fresh(service))))
})
