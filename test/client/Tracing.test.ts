/**
 * Operation spans of the client (`Tracing.fn`): made when a tracer other than Effect's built-in one is installed (or
 * the mode is `always`), skipped under the built-in tracer (they would be invisible) or with mode `never`; the
 * operation's result is the same either way; `Tracing.annotate` writes to the operation's span only.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Tracer } from "effect"
import * as Tracing from "../../src/Client/Tracing.js"

/** An operation that reports the span it runs in and annotates it. */
const operation = Tracing.fn("Test.operation")(function*(value: number) {
  yield* Tracing.annotate({ "test.value": value })
  const span = yield* Effect.option(Effect.currentSpan)
  return { value: value * 2, span: Option.getOrUndefined(span) }
})

/** A recording tracer over the built-in one: any tracer other than the built-in one counts as "installed". */
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

describe("Tracing.fn", () => {
  it.effect("under Effect's built-in tracer no span is made (mode auto), and the result is the same", () =>
    Effect.gen(function*() {
      const result = yield* operation(21)
      expect(result.value).toBe(42)
      expect(result.span).toBeUndefined()
    }))

  it.effect("with another tracer installed, the operation is a span named after it, carrying its annotations", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recording
      const result = yield* Effect.withTracer(operation(21), tracer)
      expect(result.value).toBe(42)
      expect(result.span?.name).toBe("Test.operation")
      expect(spans.map((span) => span.name)).toEqual(["Test.operation"])
      expect(spans[0].attributes.get("test.value")).toBe(21)
      expect(spans[0].status._tag).toBe("Ended")
    }))

  it.effect("mode always makes spans under the built-in tracer; mode never makes none under any tracer", () =>
    Effect.gen(function*() {
      const always = yield* Tracing.withMode(operation(1), "always")
      expect(always.span?.name).toBe("Test.operation")
      expect(always.span?.attributes.get("test.value")).toBe(1)
      const { spans, tracer } = yield* recording
      const never = yield* Effect.withTracer(Tracing.withMode(operation(1), "never"), tracer)
      expect(never.span).toBeUndefined()
      expect(spans).toEqual([])
    }))

  it.effect("with spans off, annotate writes nothing, not even to a caller's own span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* recording
      yield* Effect.withTracer(
        Effect.withSpan(Tracing.withMode(Tracing.annotate({ "test.value": 1 }), "never"), "caller"),
        tracer
      )
      expect(spans.map((span) => span.name)).toEqual(["caller"])
      expect(spans[0].attributes.has("test.value")).toBe(false)
    }))
})
