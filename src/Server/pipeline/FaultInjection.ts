/**
 * Fault injection for the local service (`boxkit serve --faults SPEC [--faults-seed N]`): a hostile network on
 * purpose, to prove that clients survive it.
 *
 * For every `/v1` request one fault is drawn from a seeded generator (the same seed draws the same sequence, in
 * order of arrival), then:
 * - `latency` (if set) delays the request before anything else happens;
 * - `429`: answers 429 `rate_limit_error` (code `rate_limited`) with `Retry-After`; the request never runs;
 * - `503`: answers 503 `server_error` with `Retry-After`; the request never runs;
 * - `503-no-retry-after`: answers 503 `server_error` without `Retry-After`; the request never runs;
 * - `reset-after-commit`: the request runs to the end (its effects and its idempotency record are committed), then
 *   the connection is destroyed instead of writing the answer, so the client sees a transport error.
 *
 * Every `/v1` request whose connection the client closed before the answer was written (an aborted or timed-out
 * client attempt) is counted as a client abort (with or without faults configured); a request still waiting out
 * `latency` then stops without running (the request pipeline runs uninterruptibly; a handler is interrupted at its
 * next suspension, as `@effect/platform`'s router does). Counts are shown under `faults` in `GET /_local/state`.
 *
 * With no fault configured (every fraction zero, no latency) nothing of this module runs per request beyond two
 * counter increments: both serving paths serve `/v1` without {@link FaultInjection.wrap}.
 *
 * SPEC is a comma list of `KIND=FRACTION` (a decimal 0 to 1, or a percentage such as `10%`), `latency=DURATION`
 * and `retry-after=DURATION` (`20ms`, `1.5s`, `0`; a bare number for retry-after is seconds, as in the header),
 * e.g. `429=0.1,503=0.1,503-no-retry-after=0.05,reset-after-commit=0.05,latency=20ms`.
 *
 * Source: docs/ASSUMPTIONS.md "Fault injection" (a client proved against a hostile network); spec "Errors" rules 1-2 (429 and 503 with
 * `Retry-After`: the request never started) and "Create a box" (a lost answer after the operation committed).
 *
 * @since 0.1.0
 */
import { type HttpApp, HttpServerRequest } from "@effect/platform"
import { Context, Duration, Effect, Either, Layer, Random, Schema } from "effect"
import { IncomingMessage } from "node:http"
import * as ApiError from "../../ApiError.js"
import * as ErrorResponse from "../http/ErrorResponse.js"
import { type FaultKind, faultKinds, type FaultSettings, LocalServiceConfig, noFaults } from "../LocalServiceConfig.js"

/** A `--faults` SPEC that cannot be read; `message` says which entry and why. */
export class FaultSpecError extends Schema.TaggedError<FaultSpecError>()("FaultSpecError", {
  spec: Schema.String,
  message: Schema.String
}) {}

/**
 * Fault settings from parts: `rates` (missing kinds are zero), `latency`, `retryAfter` and `seed` default to
 * {@link noFaults}'. Throws when a rate is outside 0 to 1 or the rates add up to more than 1.
 */
export const settings = (options: {
  readonly rates?: Partial<Record<FaultKind, number>>
  readonly latency?: Duration.DurationInput
  readonly retryAfter?: Duration.DurationInput
  readonly seed?: number
}): FaultSettings => {
  const rates = { ...noFaults.rates, ...options.rates }
  const problem = checkRates(rates)
  if (problem !== undefined) throw new Error(problem)
  return {
    rates,
    latency: options.latency === undefined ? noFaults.latency : Duration.decode(options.latency),
    retryAfter: options.retryAfter === undefined ? noFaults.retryAfter : Duration.decode(options.retryAfter),
    seed: options.seed ?? noFaults.seed
  }
}

const checkRates = (rates: Readonly<Record<FaultKind, number>>): string | undefined => {
  for (const kind of faultKinds) {
    const rate = rates[kind]
    if (!Number.isFinite(rate) || rate < 0 || rate > 1) return `the fraction of ${kind} must be between 0 and 1`
  }
  const total = faultKinds.reduce((sum, kind) => sum + rates[kind], 0)
  return total > 1 + 1e-9 ? `the fractions add up to ${total}, more than 1` : undefined
}

const parseFraction = (text: string): number | undefined => {
  const percent = /^(\d+(?:\.\d+)?)%$/.exec(text)
  if (percent !== null) return Number(percent[1]) / 100
  return /^(?:\d+(?:\.\d*)?|\.\d+)$/.test(text) ? Number(text) : undefined
}

const parseDuration = (text: string, bareUnit: "seconds" | undefined): Duration.Duration | undefined => {
  const match = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(text)
  if (match === null) return undefined
  const value = Number(match[1])
  if (match[2] === "ms") return Duration.millis(value)
  if (match[2] === "s") return Duration.millis(value * 1000)
  if (bareUnit === "seconds") return Duration.millis(value * 1000)
  return value === 0 ? Duration.zero : undefined
}

/**
 * Reads a `--faults` SPEC (see the module docs) over `base` (default {@link noFaults}); an empty SPEC is `base`.
 * Fails with {@link FaultSpecError} on an unknown key, a malformed value, a fraction outside 0 to 1, or fractions
 * adding up to more than 1.
 */
export const parse = (spec: string, base: FaultSettings = noFaults): Either.Either<FaultSettings, FaultSpecError> => {
  const fail = (message: string) => Either.left(new FaultSpecError({ spec, message: `--faults ${spec}: ${message}` }))
  const rates: Record<FaultKind, number> = { ...base.rates }
  let latency = base.latency
  let retryAfter = base.retryAfter
  for (const raw of spec.split(",")) {
    const entry = raw.trim()
    if (entry === "") continue
    const equals = entry.indexOf("=")
    if (equals < 0) return fail(`entry "${entry}" is not KEY=VALUE`)
    const key = entry.slice(0, equals).trim()
    const value = entry.slice(equals + 1).trim()
    if ((faultKinds as ReadonlyArray<string>).includes(key)) {
      const fraction = parseFraction(value)
      if (fraction === undefined || fraction > 1) {
        return fail(`the fraction of ${key} must be a number from 0 to 1 or a percentage, not "${value}"`)
      }
      rates[key as FaultKind] = fraction
    } else if (key === "latency") {
      const duration = parseDuration(value, undefined)
      if (duration === undefined) return fail(`latency must be a duration such as 20ms or 1s, not "${value}"`)
      latency = duration
    } else if (key === "retry-after") {
      const duration = parseDuration(value, "seconds")
      if (duration === undefined) return fail(`retry-after must be seconds or a duration such as 500ms, not "${value}"`)
      retryAfter = duration
    } else {
      return fail(`unknown key "${key}"; known: ${[...faultKinds, "latency", "retry-after"].join(", ")}`)
    }
  }
  const problem = checkRates(rates)
  if (problem !== undefined) return fail(problem)
  return Either.right({ rates, latency, retryAfter, seed: base.seed })
}

/** A one-line description of fault settings, e.g. `429=10%, reset-after-commit=5%, latency 20ms (seed 7)`. */
export const describe = (faults: FaultSettings): string => {
  const parts = faultKinds.filter((kind) => faults.rates[kind] > 0).map((kind) =>
    `${kind}=${Number((faults.rates[kind] * 100).toFixed(4))}%`
  )
  if (Duration.toMillis(faults.latency) > 0) parts.push(`latency ${Duration.format(faults.latency)}`)
  if (parts.length === 0) return "none"
  return `${parts.join(", ")}; Retry-After ${Duration.format(faults.retryAfter)} (seed ${faults.seed})`
}

/** The counts shown under `faults` in `GET /_local/state`, and the settings in force. */
export interface FaultReport {
  /** `/v1` requests seen. */
  readonly requests: number
  /** Faults injected, per kind. */
  readonly injected: Readonly<Record<FaultKind, number>>
  /** Requests delayed by `latency`. */
  readonly delayed: number
  /** Requests whose connection the client closed before the answer was written (aborted or timed-out attempts). */
  readonly client_aborts: number
  readonly settings: {
    readonly rates: Readonly<Record<FaultKind, number>>
    readonly latency_ms: number
    readonly retry_after_ms: number
    readonly seed: number
  }
}

/** The fault injector of the running local service. */
export class FaultInjection extends Context.Tag("boxkit/server/FaultInjection")<FaultInjection, {
  /** The settings in force. */
  readonly settings: FaultSettings
  /**
   * True when some fault can be drawn or `latency` is set. When false the `/v1` app is served without {@link wrap}:
   * no per-request draw, no extra effect (only the two counters below run).
   */
  readonly enabled: boolean
  /** Counts a `/v1` request seen (called by the Node handler for every `/v1` request, faults or not). */
  readonly countRequest: () => void
  /**
   * Counts a client abort: the connection of a `/v1` request closed before its answer was written (called by the
   * Node handler). A close caused by an injected `reset-after-commit` is not a client abort and is not counted.
   */
  readonly countClientAbort: (request: HttpServerRequest.HttpServerRequest) => void
  /** Counts so far. */
  readonly report: Effect.Effect<FaultReport>
  /** Wraps the `/v1` app: draws and applies a fault per request. */
  readonly wrap: <E, R>(app: HttpApp.Default<E, R>) => HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest>
}>() {}

/** The fault drawn for a uniform number `u` in [0, 1): kinds take consecutive ranges of their fractions. */
export const pick = (u: number, rates: Readonly<Record<FaultKind, number>>): FaultKind | undefined => {
  let upper = 0
  for (const kind of faultKinds) {
    upper += rates[kind]
    if (u < upper) return kind
  }
  return undefined
}

/** True when `faults` can inject something: a fraction above zero or a latency. */
export const isEnabled = (faults: FaultSettings): boolean =>
  Duration.toMillis(faults.latency) > 0 || faultKinds.some((kind) => faults.rates[kind] > 0)

/** The Node socket of `request`, when it comes from Node's HTTP server. */
const socketOf = (request: HttpServerRequest.HttpServerRequest) =>
  request.source instanceof IncomingMessage ? request.source.socket : undefined

/** The sources (Node requests) whose connection was destroyed by an injected `reset-after-commit`. */
const injectedResets = new WeakSet<object>()

const faultMessage = "Injected fault (boxkit serve --faults):"

/** The fault injector, configured by `LocalServiceConfig.faults`. */
export const layer = Layer.effect(
  FaultInjection,
  Effect.gen(function*() {
    const faults = (yield* LocalServiceConfig).faults
    const random = Random.make(faults.seed)
    const latencyMillis = Duration.toMillis(faults.latency)
    const injected: Record<FaultKind, number> = { "429": 0, "503": 0, "503-no-retry-after": 0, "reset-after-commit": 0 }
    let requests = 0
    let delayed = 0
    let clientAborts = 0
    const count = (kind: FaultKind) =>
      Effect.sync(() => {
        injected[kind]++
      })

    const wrap = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const fault = pick(yield* random.next, faults.rates)
        if (latencyMillis > 0) {
          delayed++
          // Interruptible: a client that leaves while its request waits here stops the request before it runs.
          yield* Effect.interruptible(Effect.sleep(faults.latency))
        }
        switch (fault) {
          case "429":
            yield* count("429")
            return ErrorResponse.fromApiError(
              new ApiError.RateLimitError({
                message: `${faultMessage} rate limited; the request did not run. Retry after the Retry-After delay.`,
                param: null,
                code: "rate_limited",
                status: 429,
                retryAfter: faults.retryAfter
              })
            )
          case "503":
            yield* count("503")
            return ErrorResponse.fromApiError(ApiError.make.unavailable(
              `${faultMessage} unavailable; the request did not run. Retry after the Retry-After delay.`,
              faults.retryAfter
            ))
          case "503-no-retry-after":
            yield* count("503-no-retry-after")
            return ErrorResponse.fromApiError(
              ApiError.make.unavailable(`${faultMessage} unavailable; the request did not run. Retry with backoff.`)
            )
          case "reset-after-commit": {
            const response = yield* app
            const socket = socketOf(request)
            if (socket === undefined) return response
            injectedResets.add(request.source as object)
            socket.destroy()
            yield* count("reset-after-commit")
            // The close of the connection interrupts this request as a client abort (no answer is written); the
            // self-interruption after 1 s is a fallback that does not happen with Node's HTTP server.
            yield* Effect.interruptible(Effect.sleep(Duration.seconds(1)))
            return yield* Effect.interrupt
          }
          default:
            return yield* app
        }
      })

    return {
      settings: faults,
      enabled: isEnabled(faults),
      countRequest: () => {
        requests++
      },
      countClientAbort: (request) => {
        if (!injectedResets.has(request.source as object)) clientAborts++
      },
      report: Effect.sync((): FaultReport => ({
        requests,
        injected: { ...injected },
        delayed,
        client_aborts: clientAborts,
        settings: {
          rates: faults.rates,
          latency_ms: latencyMillis,
          retry_after_ms: Duration.toMillis(faults.retryAfter),
          seed: faults.seed
        }
      })),
      wrap
    }
  })
)
