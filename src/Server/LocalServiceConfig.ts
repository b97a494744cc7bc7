/**
 * Settings of the local box service. Every figure has its unit in its name or docstring.
 *
 * Source: spec Limits and Errors; the values the spec does not show are boxkit's choices (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Context, Duration, Layer } from "effect"

/** Settings of the local box service. */
export interface LocalServiceSettings {
  /** Page for adding credits, sent as `billing_url` with a 402. */
  readonly billingUrl: string
  /** Requests in flight at once allowed per organization during its first ten minutes (default 4). */
  readonly newOrgInFlightCap: number
  /** How long an organization counts as new (spec: ten minutes). */
  readonly newOrgWindow: Duration.Duration
  /** Simulated boot time of a box, from `creating` to `running` (default 150 ms). */
  readonly bootDelay: Duration.Duration
  /** Largest request body accepted, in bytes (default 32 MiB); larger bodies get a 400 envelope. */
  readonly maxBodyBytes: number
  /** How often box lifetimes are checked (default 1 s); termination can come after the deadline by up to this. */
  readonly expiryCheckInterval: Duration.Duration
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
}

/** The default settings. */
export const defaults: LocalServiceSettings = {
  billingUrl: "http://127.0.0.1/billing/credits",
  newOrgInFlightCap: 4,
  newOrgWindow: Duration.minutes(10),
  bootDelay: Duration.millis(150),
  maxBodyBytes: 32 * 1024 * 1024,
  expiryCheckInterval: Duration.seconds(1),
  initialGuestSchemaVersion: 1,
  idempotencyRetention: Duration.hours(24),
  responseRetention: Duration.minutes(10),
  backgroundDelay: Duration.millis(20),
  retryAfter: Duration.seconds(1)
}

/** The settings of the running local service. */
export class LocalServiceConfig extends Context.Tag("boxkit/server/LocalServiceConfig")<
  LocalServiceConfig,
  LocalServiceSettings
>() {
  /** A layer with the defaults overridden by `overrides`. */
  static readonly layer = (overrides: Partial<LocalServiceSettings> = {}) =>
    Layer.succeed(LocalServiceConfig, { ...defaults, ...overrides })
}
