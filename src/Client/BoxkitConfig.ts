/**
 * Configuration of the client toolkit: the API key (`Redacted`), the two base URLs, the retry and timeout policy,
 * default headers and `transformClient`. Read from the environment (`BOX_API_KEY`, `BOX_BASE_URL`, `BOX_API_URL`) or
 * given in code.
 *
 * Source: spec Conventions (`{base_url}`, `{api_url}`, both ending in `/v1`; the same API key works on both) and
 * Authentication 1, 6.
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { Config, ConfigError, Context, Duration, Effect, Layer, Option, Redacted } from "effect"

/**
 * The retry and timeout policy of every call; see `Retry.ts` for what is retried. Set globally in
 * `BoxkitConfig.retry`, and per call with `Transport.withRetry(overrides)` around any client effect or the `retry`
 * option of a service method (e.g. `Boxes.create(request, { retry: { maxAttempts: 1 } })`); per-call values win.
 *
 * @since 0.1.0
 * @category Models
 */
export interface RetrySettings {
  /** Attempts at most, the first included (default 6). */
  readonly maxAttempts: number
  /** The overall deadline of one call, every attempt and wait included (default 60 s). */
  readonly deadline: Duration.Duration
  /** The timeout of one attempt (default 30 s). */
  readonly attemptTimeout: Duration.Duration
  /** A `Retry-After` longer than this fails at once instead of sleeping (default 60 s). */
  readonly maxRetryAfter: Duration.Duration
  /** First backoff delay when no `Retry-After` is given (default 200 ms); it doubles per retry. */
  readonly backoffBase: Duration.Duration
  /** Longest backoff delay (default 10 s). */
  readonly backoffCap: Duration.Duration
}

/** The default retry settings. @since 0.1.0 @category Constants */
export const defaultRetry: RetrySettings = {
  maxAttempts: 6,
  deadline: Duration.seconds(60),
  attemptTimeout: Duration.seconds(30),
  maxRetryAfter: Duration.seconds(60),
  backoffBase: Duration.millis(200),
  backoffCap: Duration.seconds(10)
}

/**
 * `base` overridden by each of `overrides` in order (undefined fields are skipped). `maxAttempts` is rounded down
 * and at least 1; negative durations count as zero.
 *
 * @since 0.1.0
 * @category Combinators
 */
export const mergeRetry = (
  base: RetrySettings,
  ...overrides: ReadonlyArray<Partial<RetrySettings> | undefined>
): RetrySettings => {
  const merged: { -readonly [K in keyof RetrySettings]: RetrySettings[K] } = { ...base }
  for (const override of overrides) {
    if (override === undefined) continue
    for (const key of Object.keys(override) as Array<keyof RetrySettings>) {
      const value = override[key]
      if (value !== undefined) (merged as Record<string, unknown>)[key] = value
    }
  }
  const nonNegative = (duration: Duration.Duration) => Duration.max(duration, Duration.zero)
  return {
    maxAttempts: Math.max(1, Math.floor(merged.maxAttempts)),
    deadline: nonNegative(merged.deadline),
    attemptTimeout: nonNegative(merged.attemptTimeout),
    maxRetryAfter: nonNegative(merged.maxRetryAfter),
    backoffBase: nonNegative(merged.backoffBase),
    backoffCap: nonNegative(merged.backoffCap)
  }
}

/**
 * Settings of the client: `apiKey` (sent as `Authorization: Bearer`, never logged), `baseUrl` (`{base_url}`, boxes,
 * secrets, egress policies) and `apiUrl` (`{api_url}`, apps and responses), both ending in `/v1`, `retry`, and the
 * optional `headers` and `transformClient` (see {@link BoxkitOptions}; `headers` names in lower case).
 *
 * @since 0.1.0
 * @category Models
 */
export interface BoxkitSettings {
  readonly apiKey: Redacted.Redacted<string>
  readonly baseUrl: string
  readonly apiUrl: string
  readonly retry: RetrySettings
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

/**
 * The client's options as code gives them:
 * - `apiKey` (a string is wrapped in `Redacted`);
 * - `baseUrl` (`{base_url}`, required: there is no default service) and `apiUrl` (`{api_url}`, default `baseUrl`);
 * - `retry`: retry overrides (see {@link RetrySettings});
 * - `headers`: sent on every request (names case-insensitive; a `Redacted` value, e.g. a proxy's token, is unwrapped
 *   only onto the wire). Each request's own headers (`Idempotency-Key`, `X-Box-Owner-Override-Reason`,
 *   `Content-Type`) win over them, and `Authorization` is always the API key's. Every request also carries
 *   `User-Agent: boxkit/<version>`, unless `headers` gives a `User-Agent` of its own;
 * - `transformClient`: applied last to the `HttpClient` every request of the client goes through (Effect's name and
 *   shape, as in `@effect/ai-openai`), e.g. `HttpClient.mapRequest(...)` or `HttpClient.tap(...)`: it sees each
 *   request with the headers above and the raw answer (error answers before they are decoded into typed errors).
 *   Its requests are still retried and bounded by the client's own policy, so adding a retry in it multiplies the
 *   attempts.
 *
 * Source: spec "Conventions", "Authentication" 1; docs/ASSUMPTIONS.md "Client" (default headers, User-Agent,
 * transformClient).
 *
 * @since 0.1.0
 * @category Models
 */
export interface BoxkitOptions {
  readonly apiKey: string | Redacted.Redacted<string>
  readonly baseUrl: string
  readonly apiUrl?: string | undefined
  readonly retry?: Partial<RetrySettings> | undefined
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
  readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

/** A header name: an HTTP token (RFC 9110). */
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * What is wrong with the default headers, if anything: a name that is not an HTTP token, or a value holding a line
 * break or NUL (it would end the header). Answers the header's `name` and a `message` naming it, never showing its
 * value (it may be a secret); undefined when every header is valid.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (default headers).
 *
 * @since 0.1.0
 * @category Utils
 */
export const headersProblem = (
  headers: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
): { readonly name: string; readonly message: string } | undefined => {
  for (const name in headers ?? {}) {
    if (!headerName.test(name)) return { name, message: `headers: ${JSON.stringify(name)} is not a valid header name` }
    const value = headers![name]
    const text = Redacted.isRedacted(value) ? Redacted.value(value) : value
    if (typeof text !== "string" || /[\r\n\0]/.test(text)) {
      return { name, message: `headers: the value of ${name} is not a string without line breaks or NUL` }
    }
  }
  return undefined
}

/**
 * The settings of `options`: the key wrapped in `Redacted`, `apiUrl` defaulted to `baseUrl`, retry merged, header
 * names in lower case (a later spelling of one name wins), `transformClient` as given. Throws a `TypeError` naming
 * the header when `headers` holds an invalid one ({@link headersProblem}).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeSettings = (options: BoxkitOptions): BoxkitSettings => {
  const problem = headersProblem(options.headers)
  if (problem !== undefined) throw new TypeError(problem.message)
  const headers: Record<string, string | Redacted.Redacted<string>> = {}
  for (const name in options.headers ?? {}) headers[name.toLowerCase()] = options.headers![name]
  return {
    apiKey: typeof options.apiKey === "string" ? Redacted.make(options.apiKey) : options.apiKey,
    baseUrl: options.baseUrl,
    apiUrl: options.apiUrl ?? options.baseUrl,
    retry: mergeRetry(defaultRetry, options.retry),
    headers,
    transformClient: options.transformClient
  }
}

/**
 * The configuration read from the environment (or any `ConfigProvider`): `BOX_API_KEY` (required, read as
 * `Redacted`), `BOX_BASE_URL` (required), `BOX_API_URL` (default `BOX_BASE_URL`). A missing variable fails with a
 * `ConfigError` naming it.
 *
 * @since 0.1.0
 * @category Config
 */
export const fromEnv: Config.Config<BoxkitOptions> = Config.all({
  apiKey: Config.redacted("BOX_API_KEY"),
  baseUrl: Config.string("BOX_BASE_URL"),
  apiUrl: Config.option(Config.string("BOX_API_URL")).pipe(Config.map(Option.getOrUndefined))
})

/** The client's settings (`BoxkitSettings`). @since 0.1.0 @category Services */
export class BoxkitConfig extends Context.Tag("boxkit/BoxkitConfig")<BoxkitConfig, BoxkitSettings>() {
  /**
   * From code, e.g. `BoxkitConfig.layer({ apiKey: "sk_...", baseUrl: "http://127.0.0.1:8787/v1" })`. Throws a
   * `TypeError` naming the header when `headers` holds an invalid name or value.
   */
  static readonly layer = (options: BoxkitOptions): Layer.Layer<BoxkitConfig> =>
    Layer.succeed(BoxkitConfig, makeSettings(options))

  /**
   * From a `Config` ({@link fromEnv} by default: `BOX_API_KEY`, `BOX_BASE_URL`, `BOX_API_URL`). Fails with a
   * `ConfigError` naming a missing or invalid setting (an invalid default header too). Options that code gives (`headers`, `transformClient`) go
   * through `Config.map`, e.g.
   * `BoxkitConfig.layerConfig(Config.map(fromEnv, (options) => ({ ...options, headers: { "x-team": "infra" } })))`.
   */
  static readonly layerConfig = (
    config: Config.Config<BoxkitOptions> = fromEnv
  ): Layer.Layer<BoxkitConfig, ConfigError.ConfigError> =>
    Layer.effect(
      BoxkitConfig,
      Effect.flatMap(config, (options) => {
        const problem = headersProblem(options.headers)
        return problem === undefined
          ? Effect.succeed(makeSettings(options))
          : Effect.fail(ConfigError.InvalidData(["headers", problem.name], problem.message))
      })
    )
}
