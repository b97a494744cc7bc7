/**
 * Test support: records every span and log line of an effect (client and an embedded service alike), so tests can
 * read span attributes and prove that secrets never appear.
 */
import { Cause, Context, Effect, FiberRef, FiberRefs, HashMap, Inspectable, List, Logger, LogLevel, Option, Tracer } from "effect"

/**
 * A log line as recorded: level, message, annotations, log span names, the rendered cause, and `spanId`, the id of
 * the tracer span current when it was logged (undefined outside any span), to tell which operation logged it.
 */
export interface LogLine {
  readonly level: string
  readonly message: string
  readonly annotations: Readonly<Record<string, unknown>>
  readonly spans: ReadonlyArray<string>
  readonly cause: string
  readonly spanId: string | undefined
}

/** A recorder of spans and logs. */
export interface Recorder {
  readonly spans: ReadonlyArray<Tracer.Span>
  readonly logs: ReadonlyArray<LogLine>
  /** Runs `effect` with the recording tracer and logger, logging from `minimum` up (default `Debug`). */
  readonly record: <A, E, R>(effect: Effect.Effect<A, E, R>, minimum?: LogLevel.LogLevel) => Effect.Effect<A, E, R>
  /**
   * Every recorded span and log line, rendered as text: spans as an exporter sends them (name, attributes, events,
   * status with `Cause.pretty` of a failure), log lines with message, annotations and rendered cause.
   */
  readonly text: () => string
}

/** A fresh recorder that wraps the tracer in context. */
export const make = Effect.map(Effect.tracer, (base): Recorder => {
  const spans: Array<Tracer.Span> = []
  const logs: Array<LogLine> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = base.span(name, parent, context, links, startTime, kind, options)
      spans.push(span)
      return span
    },
    context: base.context
  })
  const logger = Logger.make<unknown, void>(({ annotations, cause, context, logLevel, message, spans: logSpans }) => {
    const current = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
    logs.push({
      level: logLevel.label,
      message: Array.isArray(message) ? message.map((part) => Inspectable.toStringUnknown(part)).join(" ") : Inspectable.toStringUnknown(message),
      annotations: Object.fromEntries(HashMap.toEntries(annotations)),
      spans: List.toArray(logSpans).map((span) => span.label),
      cause: Cause.isEmpty(cause) ? "" : Cause.pretty(cause, { renderErrorCause: true }),
      spanId: Option.isSome(current) ? current.value.spanId : undefined
    })
  })
  // What an exporter (e.g. OpenTelemetry) sends of a span: name, attributes, events, and the status with the
  // failure rendered by `Cause.pretty` (error causes included).
  const render = (span: Tracer.Span) =>
    JSON.stringify({
      name: span.name,
      attributes: Object.fromEntries(span.attributes),
      events: (span as unknown as { events?: unknown }).events,
      status: span.status._tag === "Ended"
        ? span.status.exit._tag === "Success" ? "ok" : Cause.pretty(span.status.exit.cause, { renderErrorCause: true })
        : "open"
    }, (_, value) => typeof value === "bigint" ? String(value) : value)
  return {
    spans,
    logs,
    record: (effect, minimum = LogLevel.Debug) =>
      effect.pipe(
        Effect.withTracer(tracer),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(minimum)
      ),
    text: () => [...spans.map(render), ...logs.map((line) => JSON.stringify(line))].join("\n")
  }
})

/** The spans named `name`. */
export const named = (recorder: Recorder, name: string) => recorder.spans.filter((span) => span.name === name)

/**
 * The log lines logged within each of `spans`: in it or in a span under it (the parents followed up from the span
 * current at the line), keyed by span id; a span without lines maps to an empty list.
 */
export const loggedWithin = (
  recorder: Recorder,
  spans: ReadonlyArray<Tracer.Span>
): ReadonlyMap<string, ReadonlyArray<LogLine>> => {
  const lines = new Map<string, Array<LogLine>>(spans.map((span) => [span.spanId, []]))
  const byId = new Map<string, Tracer.AnySpan>(recorder.spans.map((span) => [span.spanId, span]))
  for (const line of recorder.logs) {
    let at = line.spanId === undefined ? undefined : byId.get(line.spanId)
    while (at !== undefined && !lines.has(at.spanId)) {
      at = at._tag === "Span" && Option.isSome(at.parent) ? at.parent.value : undefined
    }
    if (at !== undefined) lines.get(at.spanId)!.push(line)
  }
  return lines
}
