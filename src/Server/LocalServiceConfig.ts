/**
 * Settings of the local box service. Every figure has its unit in its name or docstring.
 *
 * Source: spec Limits and Errors; the values the spec does not show are boxkit's choices (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Context, Duration, Layer } from "effect"
import { defaultQuotas, type QuotaSettings } from "./Quotas.js"

/**
 * The kinds of fault the local service can inject (`boxkit serve --faults`, see FaultInjection.ts): a 429 with
 * `Retry-After`, a 503 with or without `Retry-After` (the request never runs), or the connection closed after the
 * request ran and before its answer is written.
 *
 * @since 0.1.0
 * @category Constants
 */
export const faultKinds = ["429", "503", "503-no-retry-after", "reset-after-commit"] as const

/** One kind of injected fault. @since 0.1.0 @category Models */
export type FaultKind = (typeof faultKinds)[number]

/**
 * Fault injection settings (FaultInjection.ts); {@link noFaults} injects nothing.
 *
 * @since 0.1.0
 * @category Models
 */
export interface FaultSettings {
  /** The fraction (0 to 1) of `/v1` requests that get each kind of fault; the fractions add up to at most 1. */
  readonly rates: Readonly<Record<FaultKind, number>>
  /** Delay added before every `/v1` request runs (default zero). */
  readonly latency: Duration.Duration
  /** `Retry-After` on injected 429 and 503 answers, sent in whole seconds rounded up (default 1 s). */
  readonly retryAfter: Duration.Duration
  /** Seed of the fault sequence: the same seed draws the same sequence of faults (default 0). */
  readonly seed: number
}

/** No faults: every rate zero, no latency. @since 0.1.0 @category Constants */
export const noFaults: FaultSettings = {
  rates: { "429": 0, "503": 0, "503-no-retry-after": 0, "reset-after-commit": 0 },
  latency: Duration.zero,
  retryAfter: Duration.seconds(1),
  seed: 0
}

/** Settings of the local box service. @since 0.1.0 @category Models */
export interface LocalServiceSettings {
  /** Page for adding credits, sent as `billing_url` with a 402. */
  readonly billingUrl: string
  /** Requests in flight at once allowed per organization during its first ten minutes (default 4). */
  readonly newOrgInFlightCap: number
  /** How long an organization counts as new (spec: ten minutes). */
  readonly newOrgWindow: Duration.Duration
  /** Simulated boot time of a box, from `creating` to `running` (default 150 ms). */
  readonly bootDelay: Duration.Duration
  /**
   * How long a client has to send a whole request, headers and body (default 30 s; its headers within 10 s at most);
   * past it the connection is answered 408 and closed, and what the request held (its organization's in-flight cap)
   * is released.
   */
  readonly requestTimeout: Duration.Duration
  /** Largest request body accepted, in bytes (default 32 MiB); larger bodies get a 400 envelope. */
  readonly maxBodyBytes: number
  /** How often box lifetimes are checked (default 1 s); termination can come after the deadline by up to this. */
  readonly expiryCheckInterval: Duration.Duration
  /**
   * How often what has expired is deleted (default 1 minute): response records past their retention with their
   * delivery-log entries, and, in a durable store, idempotency keys past theirs (an expired key is never answered
   * from, whether or not it was deleted yet).
   */
  readonly sweepInterval: Duration.Duration
  /**
   * With a durable store (docs/ASSUMPTIONS.md "Durable state"): how often the service looks for work left unfinished
   * by a restart or by an instance that is gone (background responses, webhook deliveries, boots); also once at start.
   * Default 2 s.
   */
  readonly recoveryInterval: Duration.Duration
  /**
   * With a store shared by instances (docs/ASSUMPTIONS.md "Durable state"): how long after its last heartbeat an
   * instance counts as gone, and its running idempotency keys and unfinished work are taken over (default 10 s;
   * heartbeats every quarter of it).
   */
  readonly instanceTimeout: Duration.Duration
  /** The runtime version new boxes boot on (default 1); raise it with `POST /_local/runtime`. */
  readonly initialGuestSchemaVersion: number
  /** How long an idempotency key is remembered (spec: at least 24 hours; default 24 hours). */
  readonly idempotencyRetention: Duration.Duration
  /** How long a finished model response stays readable after its first successful delivery (spec: 10 minutes). */
  readonly responseRetention: Duration.Duration
  /** Delay before a background response starts processing (default 20 ms). */
  readonly backgroundDelay: Duration.Duration
  /** `Retry-After` sent with 503 while draining and 429 from the in-flight cap (default 1 s). */
  readonly retryAfter: Duration.Duration
  /** Quotas of every organization (Quotas.ts; default {@link defaultQuotas}). */
  readonly quotas: QuotaSettings
  /** Faults injected into `/v1` requests (default {@link noFaults}; `boxkit serve --faults`). */
  readonly faults: FaultSettings
  /**
   * A server span per request (`http.server METHOD`, with the method, URL, redacted headers and status as
   * `@effect/platform`'s `HttpMiddleware.tracer` records them), for the tracer in context, with the spans inside it.
   * Default false: the service then makes no span at all (its fibers run with the tracer disabled), since spans cost
   * CPU per request even without an exporter (docs/ASSUMPTIONS.md, docs/decisions/0002).
   */
  readonly requestTracing: boolean
  /**
   * The service's clock (clock/ServiceClock.ts): `real` (default) runs on the real time; `virtual` on the real time
   * plus an offset that `POST /_local/clock/advance` raises (`boxkit serve --clock virtual`; docs/ASSUMPTIONS.md "The
   * virtual clock").
   */
  readonly clock: "real" | "virtual"
}

/**
 * The settings of a local service given none (`boxkit serve` without flags; each flag overrides one field): every
 * field of {@link LocalServiceSettings}, with the units and reasons given there.
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaults: LocalServiceSettings = {
  billingUrl: "http://127.0.0.1/billing/credits",
  newOrgInFlightCap: 4,
  newOrgWindow: Duration.minutes(10),
  bootDelay: Duration.millis(150),
  requestTimeout: Duration.seconds(30),
  maxBodyBytes: 32 * 1024 * 1024,
  expiryCheckInterval: Duration.seconds(1),
  sweepInterval: Duration.minutes(1),
  recoveryInterval: Duration.seconds(2),
  instanceTimeout: Duration.seconds(10),
  initialGuestSchemaVersion: 1,
  idempotencyRetention: Duration.hours(24),
  responseRetention: Duration.minutes(10),
  backgroundDelay: Duration.millis(20),
  retryAfter: Duration.seconds(1),
  quotas: defaultQuotas,
  faults: noFaults,
  requestTracing: false,
  clock: "real"
}

/** The settings of the running local service. @since 0.1.0 @category Services */
export class LocalServiceConfig extends Context.Tag("boxkit/server/LocalServiceConfig")<
  LocalServiceConfig,
  LocalServiceSettings
>() {
  /** A layer with the defaults overridden by `overrides`. */
  static readonly layer = (overrides: Partial<LocalServiceSettings> = {}) =>
    Layer.succeed(LocalServiceConfig, { ...defaults, ...overrides })
}
