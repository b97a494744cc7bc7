/**
 * Spans of the client toolkit, made only when someone can see them. Every operation (`Apps.find`, `Boxes.create`, ...)
 * is a span with the attributes `Transport.call` adds (`boxkit.attempts`, `boxkit.outcome`, ...) when a tracer other
 * than Effect's built-in one is installed (e.g. `@effect/opentelemetry`, or any `Effect.withTracer`). Effect's
 * built-in tracer exports nothing, and nothing else runs inside these spans, so under it they are skipped: a span
 * costs about as much CPU as the HTTP exchange itself (docs/decisions/0002-what-the-fast-paths-save.md). Set {@link currentMode} to `"always"` to
 * make them anyway (e.g. for `Cause.pretty` to name the operation), or `"never"` to drop them under any tracer.
 *
 * Source: BENCHMARKS.md section 2 (client overhead: per-call spans, cheap or configurable).
 *
 * @since 0.1.0
 */
import { Context, Effect, type Fiber, FiberRef, Tracer } from "effect"
import { dual } from "effect/Function"
import { globalValue } from "effect/GlobalValue"
import type { YieldWrap } from "effect/Utils"

/**
 * When operation spans are made: `auto` (a tracer other than Effect's built-in one is installed), always, never.
 *
 * @since 0.1.0
 * @category Models
 */
export type SpanMode = "auto" | "always" | "never"

/** The span mode of the current fiber (default `auto`). @since 0.1.0 @category Fiber refs */
export const currentMode: FiberRef.FiberRef<SpanMode> = globalValue(
  Symbol.for("boxkit/Tracing/currentMode"),
  () => FiberRef.unsafeMake<SpanMode>("auto")
)

/** Runs `self` with span mode `mode`, e.g. `Tracing.withMode(program, "always")`. @since 0.1.0 @category Combinators */
export const withMode: {
  (mode: SpanMode): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, mode: SpanMode): Effect.Effect<A, E, R>
} = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, mode: SpanMode) => Effect.locally(self, currentMode, mode))

/** Effect's built-in tracer (the default service), which exports nothing. */
const builtInTracer: Tracer.Tracer = Effect.runSync(Effect.tracer)

/**
 * True when operation spans are made on `fiber` (its mode, its tracer, and tracing enabled).
 *
 * @since 0.1.0
 * @category Utils
 */
export const spansOn = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean => {
  const mode = fiber.getFiberRef(currentMode)
  if (mode === "never" || !fiber.getFiberRef(FiberRef.currentTracerEnabled)) return false
  return mode === "always" || fiber.currentTracer !== builtInTracer
}

/**
 * Like `Effect.fn(name)(body)`: a function whose calls run `body` in a span named `name`, when {@link spansOn}; else
 * as `Effect.fnUntraced(body)`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fn = (name: string) =>
<Eff extends YieldWrap<Effect.Effect<any, any, any>>, AEff, Args extends Array<any>>(
  body: (...args: Args) => Generator<Eff, AEff, never>
): (...args: Args) => Effect.Effect<
  AEff,
  [Eff] extends [never] ? never : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer E, infer _R>>] ? E : never,
  [Eff] extends [never] ? never : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer _E, infer R>>] ? R : never
> => {
  const traced = Effect.fn(name, { captureStackTrace: false })(body)
  const untraced = Effect.fnUntraced(body)
  return (...args) => Effect.withFiberRuntime((fiber) => spansOn(fiber) ? traced(...args) : untraced(...args))
}

/**
 * The span `fiber` runs in, when spans are on and it runs in one (the operation's span).
 *
 * @since 0.1.0
 * @category Utils
 */
export const spanOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Tracer.Span | undefined => {
  if (!spansOn(fiber)) return undefined
  const span = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
  return span._tag === "Some" && span.value._tag === "Span" ? span.value : undefined
}

/**
 * Sets `attributes` on the current operation span; nothing when there is none (no cost beyond the check).
 *
 * @since 0.1.0
 * @category Combinators
 */
export const annotate = (attributes: Readonly<Record<string, unknown>>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const span = spanOf(fiber)
    if (span !== undefined) for (const key in attributes) span.attribute(key, attributes[key])
    return Effect.void
  })
