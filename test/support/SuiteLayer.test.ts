/**
 * test/support/SuiteLayer.ts: a suite over a layer leaves `@effect/vitest`'s shared `it` as it was, so the tests after
 * it (in this file, and in the files a worker runs after it with `isolate: false`) run without that layer.
 */
import { describe, effect, expect, it, scoped } from "@effect/vitest"
import { Context, Effect, Layer, Option, TestClock } from "effect"
import { layer } from "./SuiteLayer.js"

class Answer extends Context.Tag("test/SuiteLayer/Answer")<Answer, number>() {}

layer(Layer.succeed(Answer, 42))("a suite over a layer", (it) => {
  it.effect("its tests get the layer's services and TestClock", () =>
    Effect.gen(function*() {
      expect(yield* Answer).toBe(42)
      yield* TestClock.adjust("1 hour")
    }))
  it.scoped("and a Scope per test", () => Effect.map(Answer, (answer) => expect(answer).toBe(42)))
})

describe("after a suite over a layer", () => {
  it("@effect/vitest's it keeps its own effect and scoped", () => {
    expect(it.effect).toBe(effect)
    expect(it.scoped).toBe(scoped)
  })

  it.effect("it.effect runs without the layer's services, on a fresh TestClock", () =>
    Effect.gen(function*() {
      expect(Option.isNone(yield* Effect.serviceOption(Answer))).toBe(true)
      expect(yield* TestClock.currentTimeMillis).toBe(0)
    }))
})
