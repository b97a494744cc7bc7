/**
 * boxkit/testing: the local box service embedded on a free port and the client wired to it, as one `Layer`, for the
 * tests of your own code.
 *
 * ```ts
 * import { expect, layer } from "@effect/vitest"
 * import { Apps, Boxes } from "boxkit"
 * import * as BoxkitTesting from "boxkit/testing"
 * import { Effect } from "effect"
 *
 * layer(BoxkitTesting.layer())("my code", (it) => {
 *   it.effect("creates a box and waits until it runs", () =>
 *     Effect.gen(function*() {
 *       const app = yield* (yield* Apps).find("my-app", { mintIfMissing: true })
 *       const boxes = yield* Boxes
 *       const created = yield* boxes.create({ name: "my-box", app_id: app.id, image: { base: "debian" } })
 *       const box = yield* boxes.awaitStatus(created.value.box_id, "running")
 *       expect(box.status).toBe("running")
 *       const state = yield* (yield* BoxkitTesting.TestService).state
 *       expect(state.boxes.some((stored) => stored.id === box.box_id)).toBe(true)
 *     }))
 * })
 * ```
 *
 * `it.effect(name, () => program.pipe(Effect.provide(BoxkitTesting.layer())))` (a fresh service per test) and
 * `it.live` work the same way.
 *
 * Clocks: the embedded service runs on its own virtual clock (real time, at real speed, plus what
 * `TestService.advance` moved it by: a box's lifetime, a webhook's rounds, an expiry in no real time), and the client
 * services of this layer on the real clock, whatever clock the test provides. @effect/vitest's `layer(...)` and
 * `it.effect` give the test `TestClock`, which stands still until the test moves it; the service boots boxes and
 * delivers webhooks at real speed, so the client's waits on it (`awaitStatus`, `awaitCompletion`, retry backoff,
 * attempt timeouts and deadlines) pass in real time too, without `TestClock.adjust`.
 * The test's own code (`Effect.sleep`, `Schedule`) keeps the test's clock. One exception: the release of
 * `Boxes.scoped` (its `terminate`) runs when the test's scope closes, on the test's clock.
 *
 * Source: docs/ASSUMPTIONS.md "The test layer".
 *
 * @since 0.1.0
 */
import type { HttpServerError } from "@effect/platform"
import { Clock, Context, DefaultServices, Duration, Effect, Layer, Redacted, Schema, Stream } from "effect"
import { Apps } from "./Client/Apps.js"
import { Boxes } from "./Client/Boxes.js"
import * as Boxkit from "./Client/Boxkit.js"
import type { RetrySettings } from "./Client/BoxkitConfig.js"
import { Clipboard } from "./Client/Clipboard.js"
import { EgressPolicies } from "./Client/EgressPolicies.js"
import { Exec } from "./Client/Exec.js"
import { Listeners } from "./Client/Listeners.js"
import { Responses } from "./Client/Responses.js"
import { Secrets } from "./Client/Secrets.js"
import * as ServiceClock from "./Server/clock/ServiceClock.js"
import * as DemoSeed from "./Server/state/DemoSeed.js"
import * as LocalService from "./Server/LocalService.js"
import type { LocalServiceSettings } from "./Server/LocalServiceConfig.js"
import * as Seed from "./Server/state/Seed.js"
import type { StoreError } from "./Server/state/StoreError.js"

/**
 * The usage of one organization in {@link LocalState}: active `boxes`, `background_responses` in flight,
 * `stored_bytes` (clipboards, stored response results and the bodies of remembered idempotent answers), and the
 * `secrets`, saved `egress_policies` and `apps` it holds. Source: docs/ASSUMPTIONS.md "Quotas (local service)".
 *
 * @since 0.1.0
 * @category Models
 */
export interface LocalUsage {
  readonly boxes: number
  readonly background_responses: number
  readonly stored_bytes: number
  readonly secrets: number
  readonly egress_policies: number
  readonly apps: number
}

/**
 * The quotas in force in {@link LocalState}: per organization, the limits of each {@link LocalUsage} field (bytes for
 * `stored_bytes`); per API key, the idempotency keys and the bytes of answer bodies it may have remembered at once.
 * Source: docs/ASSUMPTIONS.md "Quotas (local service)".
 *
 * @since 0.1.0
 * @category Models
 */
export interface LocalQuotas extends LocalUsage {
  readonly idempotency_keys_per_api_key: number
  readonly idempotency_bytes_per_api_key: number
}

/**
 * The whole state of the embedded service, as `GET /_local/state` answers it (the same fields, the values as
 * produced before JSON encoding; no secret values, API keys or webhook tokens). Times are ISO 8601 strings except
 * `apps[].created_at` (Unix seconds, as the spec's App object). Statuses are open sets (`string`) where the spec
 * says so.
 *
 * Source: docs/ASSUMPTIONS.md "Local service" (`/_local/state`), "The test layer".
 *
 * @since 0.1.0
 * @category Models
 */
export interface LocalState {
  /** The guest runtime version boxes are moved onto by an upgrade (`POST /_local/runtime` raises it). */
  readonly guest_schema_version: number
  /** Requests being answered now. */
  readonly in_flight: number
  /** True while the service drains (refuses new work before it stops). */
  readonly draining: boolean
  /** Idempotency records held. */
  readonly idempotency_keys: number
  /** The quotas in force. */
  readonly quotas: LocalQuotas
  readonly organizations: ReadonlyArray<{
    readonly id: string
    readonly credits: boolean
    readonly created_at: string
    readonly usage: LocalUsage
  }>
  readonly boxes: ReadonlyArray<{
    readonly id: string
    readonly org_id: string
    readonly name: string
    readonly app_id: string
    readonly status: string
    readonly error_message: string | null
    readonly visibility: "org" | "private"
    readonly guest_schema_version: number | null
    readonly pending_upgrade: boolean
    readonly boot_count: number
    readonly listeners: ReadonlyArray<{
      readonly guest_port: number
      readonly protocol: "http" | "tcp"
      readonly address: string
      readonly custom_domains?: ReadonlyArray<string> | undefined
    }>
    /** The clipboard's media type and size in bytes (not its content), or null when empty. */
    readonly clipboard: { readonly media_type: string; readonly bytes: number } | null
    readonly created_at: string
    readonly max_lifetime_seconds: number | null
  }>
  readonly apps: ReadonlyArray<{
    readonly id: string
    readonly org_id: string
    readonly name: string
    readonly created_at: number
  }>
  readonly egress_policies: ReadonlyArray<{
    readonly id: string
    readonly org_id: string
    readonly name: string
    readonly document: {
      readonly no_network?: boolean | undefined
      readonly allowlist?: ReadonlyArray<string> | undefined
      readonly blocked?: ReadonlyArray<string> | undefined
      readonly rules?: { readonly [key: string]: unknown } | undefined
      readonly missing_alpn?: { readonly [key: string]: unknown } | undefined
    }
    readonly created_at: string
    readonly updated_at: string
  }>
  readonly responses: ReadonlyArray<{
    readonly id: string
    readonly org_id: string
    readonly status: "queued" | "in_progress" | "completed" | "failed" | "incomplete" | "cancelled"
    /** True when the response has a completion webhook. */
    readonly webhook: boolean
    readonly first_delivered_at: string | null
  }>
  /** Owner overrides by admins on private boxes. */
  readonly audit_log: ReadonlyArray<{
    readonly at: string
    readonly org_id: string
    readonly user_id: string | null
    readonly box_id: string
    readonly operation: string
    readonly reason: string
  }>
  /** Every completion-webhook delivery attempt; `status` null when no HTTP answer came (`error` says why). */
  readonly webhook_deliveries: ReadonlyArray<{
    readonly response_id: string
    readonly url: string
    readonly round: number
    readonly attempt: number
    readonly status: number | null
    readonly error: string | null
    readonly ok: boolean
    readonly at: string
  }>
  /** Requests seen, faults injected (by kind), requests delayed, client aborts, and the fault settings in force. */
  readonly faults: {
    readonly requests: number
    readonly injected: FaultCounts
    readonly delayed: number
    readonly client_aborts: number
    readonly settings: {
      readonly rates: FaultCounts
      readonly latency_ms: number
      readonly retry_after_ms: number
      readonly seed: number
    }
  }
  /** The last `/v1` requests answered, newest first (the `Idempotency-Key` sent, never the API key). */
  readonly recent_requests: ReadonlyArray<{
    readonly at: string
    readonly method: string
    readonly path: string
    readonly status: number
    readonly idempotency_key: string | null
    readonly replayed: boolean
    readonly duration_ms: number
  }>
}

/**
 * One number per injected fault kind in {@link LocalState} `faults` (counts, or rates from 0 to 1 in `settings`).
 *
 * @since 0.1.0
 * @category Models
 */
export interface FaultCounts {
  readonly 429: number
  readonly 503: number
  readonly "503-no-retry-after": number
  readonly "reset-after-commit": number
}

/** The state as the service produces it: a type error here means {@link LocalState} no longer describes it. */
const asLocalState = (state: Effect.Effect.Success<typeof LocalService.localState>): LocalState => state

/**
 * The embedded service as a test sees it: its `baseUrl` (`http://127.0.0.1:PORT/v1`, both `{base_url}` and
 * `{api_url}`), the `apiKey` the client uses, and `state`, the whole state of the service as `GET /_local/state`
 * shows it ({@link LocalState}: organizations, boxes, idempotency records, deliveries, audit log, faults).
 *
 * @since 0.1.0
 * @category Models
 */
export interface EmbeddedService {
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly state: Effect.Effect<LocalState>
  /** The service's clock, as `GET /_local/clock` answers it. */
  readonly clock: Effect.Effect<LocalClock>
  /**
   * Moves the service's virtual clock forward by `duration` and returns once everything that became due in between
   * ran, in time order: box boots and lifetime ends, webhook rounds (really sent, awaited), then the sweeps of expired
   * results and idempotency keys (`POST /_local/clock/advance`). Works under `TestClock` and the live clock alike:
   * the service's clock is its own. Dies when the service was given `settings.clock: "real"`.
   */
  readonly advance: (duration: Duration.DurationInput) => Effect.Effect<LocalClock>
}

/**
 * The embedded service's clock: `now` (RFC 3339), `mode` (`virtual` unless the test's `settings.clock` says `real`)
 * and `offset_seconds`, how far it is ahead of the real time. Source: docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 * @category Models
 */
export interface LocalClock {
  readonly now: string
  readonly mode: "virtual" | "real"
  readonly offset_seconds: number
}

/**
 * The embedded service of {@link layer}.
 *
 * @since 0.1.0
 * @category Services
 */
export class TestService extends Context.Tag("boxkit/testing/TestService")<TestService, EmbeddedService>() {}

/**
 * Options of {@link layer}: the client's `apiKey` (default `sk_acme_org`, organization-scoped in the example seed),
 * the `seed` (default the example seed, `DemoSeed.example`; the seed file format of the README), the service's
 * `settings` (caps, lifetimes, faults) and the client's `retry` overrides.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly apiKey?: string | undefined
  readonly seed?: Seed.SeedInput | undefined
  readonly settings?: Partial<LocalServiceSettings> | undefined
  readonly retry?: Partial<RetrySettings> | undefined
}

/** The real clock, whatever clock the fiber that runs an operation has. */
const liveClock = Context.get(DefaultServices.liveServices, Clock.Clock)

/**
 * `service` with each of its methods running on the real clock: a method's Effect runs under `Effect.withClock`, a
 * method's Stream under the real clock for as long as it runs. Values other than functions, and what a method
 * returns that is neither an Effect nor a Stream, are kept as they are. What {@link layer} does to every client
 * service; for a test layer of your own over `Boxkit.layer`, e.g.
 * `Layer.effect(Boxes, Effect.map(Boxes, BoxkitTesting.onLiveClock))`.
 *
 * Source: docs/ASSUMPTIONS.md "The test layer".
 *
 * @since 0.1.0
 * @category Combinators
 */
export const onLiveClock = <S extends object>(service: S): S => {
  const wrapped: Record<string, unknown> = {}
  for (const [name, member] of Object.entries(service)) {
    wrapped[name] = typeof member !== "function" ? member : (...parameters: ReadonlyArray<unknown>) => {
      const result: unknown = member.apply(service, parameters)
      if (Stream.StreamTypeId in Object(result)) {
        return Stream.unwrapScoped(Effect.as(Effect.withClockScoped(liveClock), result as Stream.Stream<unknown>))
      }
      return Effect.isEffect(result) ? Effect.withClock(result, liveClock) : result
    }
  }
  // The same prototype as the service's own instance (an `Effect.Service` class).
  return Object.assign(Object.create(Object.getPrototypeOf(service)), wrapped)
}

/** The service of `tag`, from the layer below, with its methods on the real clock ({@link onLiveClock}). */
const serviceOnLiveClock = <I, S extends object>(tag: Context.Tag<I, S>): Layer.Layer<I, never, I> =>
  Layer.effect(tag, Effect.map(tag, onLiveClock))

/** Every client service with its methods on the real clock, over the client services below. */
const clientOnLiveClock: Layer.Layer<Boxkit.Services, never, Boxkit.Services> = Layer.mergeAll(
  serviceOnLiveClock(Apps),
  serviceOnLiveClock(Boxes),
  serviceOnLiveClock(Exec),
  serviceOnLiveClock(Listeners),
  serviceOnLiveClock(Clipboard),
  serviceOnLiveClock(Secrets),
  serviceOnLiveClock(EgressPolicies),
  serviceOnLiveClock(Responses)
)

/**
 * The local box service on 127.0.0.1 and a free port, seeded, plus every client service pointed at it, and
 * {@link TestService}. The service and the client services run on the real clock, even under @effect/vitest's
 * `TestClock` (see the module's documentation). The service and its connections close with the layer. Fails with
 * `ServeError` when it cannot listen; dies when the seed does not decode (the message names the field).
 *
 * Source: docs/ASSUMPTIONS.md "The test layer".
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options = {}): Layer.Layer<Boxkit.Services | TestService, HttpServerError.ServeError> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const seed = yield* Schema.decodeUnknown(Seed.Seed)(options.seed ?? DemoSeed.example).pipe(Effect.orDie)
    const service = yield* Layer.build(
      // The virtual clock unless the test asks for the real one: `advance` moves it.
      LocalService.layerNode(seed, { settings: { clock: "virtual", ...options.settings } }).pipe(
        // In memory, the state store cannot fail to open.
        Layer.catchAll((error) => error._tag === "StateStoreError" ? Layer.die(error) : Layer.fail(error)),
        // The service runs on the real clock even when a test provides TestClock to the layer.
        Layer.locally(DefaultServices.currentServices, DefaultServices.liveServices)
      )
    )
    const baseUrl = yield* LocalService.baseUrl.pipe(Effect.provide(service))
    const apiKey = Redacted.make(options.apiKey ?? "sk_acme_org")
    const serviceClock = Context.get(service, ServiceClock.ServiceClock)
    // In memory, the state store never fails (StoreError is a durable store's); a real clock cannot be advanced.
    const onService = <A>(effect: Effect.Effect<A, StoreError | ServiceClock.ClockIsReal>) =>
      effect.pipe(Effect.orDie, Effect.withClock(liveClock))
    const embedded: EmbeddedService = {
      baseUrl,
      apiKey,
      clock: onService(Effect.map(serviceClock.read, ServiceClock.toJson)),
      advance: (duration) =>
        onService(Effect.map(serviceClock.advance(Duration.toMillis(Duration.decode(duration))), ServiceClock.toJson)),
      state: LocalService.localState.pipe(
        Effect.map(asLocalState),
        // In memory, the state store never fails (StoreError is a durable store's).
        Effect.catchTag("StoreError", Effect.die),
        Effect.provide(service),
        Effect.withClock(liveClock)
      )
    }
    return Layer.merge(
      clientOnLiveClock.pipe(Layer.provide(Boxkit.layer({ apiKey, baseUrl, retry: options.retry }))),
      Layer.succeed(TestService, embedded)
    )
  }))
