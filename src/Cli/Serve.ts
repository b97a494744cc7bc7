/**
 * `boxkit serve`: the local box service as a daemon. Prints `listening on http://HOST:PORT/v1`; on SIGTERM or SIGINT
 * it drains: new requests get 503 with Retry-After while requests in flight finish (at most `--drain-seconds`), then
 * it closes. `--faults SPEC [--faults-seed N]` injects faults into `/v1` requests (src/Server/pipeline/FaultInjection.ts).
 * `--model-upstream URL` answers model responses with an OpenAI-compatible upstream (src/Server/responses/UpstreamModel.ts).
 * `--server platform` serves through Effect's own HTTP stack instead of the fast path (src/Server/http/platform/PlatformServer.ts).
 * `--data-dir DIR` keeps the state in SQLite under DIR across restarts; `--database-url postgres://...` (or
 * `BOXKIT_DATABASE_URL`) keeps it in PostgreSQL, where several `serve` processes are one service
 * (src/Server/state/sql/SqlState.ts); without either the state is in memory. The seed goes into a new store only.
 *
 * Source: docs/ASSUMPTIONS.md "Local service", "Serving (local service)", "Durable state (local service)"; flags:
 * README.md.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { help } from "./client/ClientOptions.js"
import { Config, Console, type Context, Data, Duration, Effect, Either, Layer, Option, type Redacted, Schema } from "effect"
import * as DemoSeed from "../Server/state/DemoSeed.js"
import * as FaultInjection from "../Server/pipeline/FaultInjection.js"
import { type FaultSettings, noFaults } from "../Server/LocalServiceConfig.js"
import * as LocalService from "../Server/LocalService.js"
import * as ServiceClock from "../Server/clock/ServiceClock.js"
import * as ServingPaths from "../Server/ServingPaths.js"
import * as Admission from "../Server/pipeline/Admission.js"
import * as Seed from "../Server/state/Seed.js"
import * as Snapshot from "../Server/state/Snapshot.js"
import * as UpstreamModel from "../Server/responses/UpstreamModel.js"
import * as LocalRouteGuard from "../Server/http/LocalRouteGuard.js"
import * as Quotas from "../Server/Quotas.js"
import * as StateStore from "../Server/state/StateStore.js"

/** Options of `serve` that cannot go together. */
export class ServeOptionsError extends Data.TaggedError("ServeOptionsError")<{ readonly message: string }> {}

const host = Options.text("host").pipe(
  Options.withDefault("127.0.0.1"),
  Options.withPseudoName("HOST"),
  Options.withDescription("Interface (address) to listen on.")
)
const port = Options.integer("port").pipe(
  Options.withDefault(8787),
  Options.withPseudoName("PORT"),
  Options.withDescription("Port to listen on (0 picks a free one).")
)
// Whether the file exists is checked when it is read, so that a missing file is reported like any other seed error.
const seed = Options.file("seed").pipe(
  Options.optional,
  Options.withPseudoName("FILE"),
  Options.withDescription(
    "Seed file (JSON): organizations, API keys, apps; or a snapshot (GET /_local/snapshot, boxkit state export), " +
      "restored with its ids. Without it the example seed is loaded (its keys: README.md)."
  )
)
const newOrgInFlightCap = Options.integer("new-org-in-flight-cap").pipe(
  Options.withDefault(4),
  Options.withPseudoName("N"),
  Options.withDescription("Requests in flight at once per organization during its first ten minutes.")
)
const drainSeconds = Options.integer("drain-seconds").pipe(
  Options.withDefault(30),
  Options.withPseudoName("SECONDS"),
  Options.withDescription("On SIGTERM, how long requests in flight may take to finish.")
)
const exposeLocalRoutes = Options.boolean("expose-local-routes").pipe(
  Options.withDescription("Serve /_local/* to every address, not only loopback.")
)
const faults = Options.text("faults").pipe(
  Options.optional,
  Options.withPseudoName("SPEC"),
  Options.withDescription(
    "Inject faults into /v1 requests: a comma list of KIND=FRACTION (429, 503, 503-no-retry-after, " +
      "reset-after-commit) and latency=20ms, retry-after=1, e.g. 429=0.1,503=0.05,latency=20ms. " +
      "Counts under faults in GET /_local/state."
  )
)
const faultsSeed = Options.integer("faults-seed").pipe(
  Options.withDefault(0),
  Options.withPseudoName("N"),
  Options.withDescription("Seed of the injected faults: the same seed draws the same sequence of faults.")
)

const server = Options.choice("server", ServingPaths.names).pipe(
  Options.withDefault(ServingPaths.registry.defaultPath),
  Options.withDescription(
    "Serving path: " +
      ServingPaths.names.map((name) => `${name} (${ServingPaths.registry.paths[name].description})`).join(" or ") +
      "." + (ServingPaths.names.length > 1 ? " Both answer the same (docs/ASSUMPTIONS.md, \"Serving\")." : "")
  )
)

const clock = Options.choice("clock", ServiceClock.clockModes).pipe(
  Options.withDefault("real" as const),
  Options.withDescription(
    "The service's clock: real (the default), or virtual: it starts at the real time and runs at real speed, and " +
      "POST /_local/clock/advance {\"seconds\": N} moves it forward, running the lifetimes, webhook rounds and " +
      "expiries due in between before it answers (docs/ASSUMPTIONS.md, \"The virtual clock\")."
  )
)

const modelUpstream = Options.text("model-upstream").pipe(
  Options.optional,
  Options.withPseudoName("URL"),
  Options.withDescription(
    "Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:8000/v1) that answers /v1/responses instead of the " +
      `deterministic local model; its API key, if any, from ${UpstreamModel.apiKeyEnv}.`
  )
)

const dataDir = Options.directory("data-dir").pipe(
  Options.optional,
  Options.withPseudoName("DIR"),
  Options.withDescription(
    "Keep the state in SQLite under this directory (created if missing) across restarts. Without --data-dir or " +
      "--database-url the state is in memory."
  )
)

const databaseUrl = Options.redacted("database-url").pipe(
  Options.withFallbackConfig(Config.redacted("BOXKIT_DATABASE_URL")),
  Options.optional,
  Options.withPseudoName("URL"),
  Options.withDescription(
    "Keep the state in PostgreSQL (postgres://user:password@host:port/database, also BOXKIT_DATABASE_URL); several " +
      "serve processes on one database are one service."
  )
)

const allowExampleKeys = Options.boolean("allow-example-keys").pipe(
  Options.withDescription(
    "Serve the example seed's well-known API keys on an address other than loopback (refused without this flag)."
  )
)

const quotaBoxes = Options.integer("quota-boxes").pipe(
  Options.withDefault(Quotas.defaultQuotas.boxes),
  Options.withPseudoName("N"),
  Options.withDescription("Boxes not terminated an organization may have at once (quota_exceeded_error past it).")
)
const quotaBackgroundResponses = Options.integer("quota-background-responses").pipe(
  Options.withDefault(Quotas.defaultQuotas.backgroundResponses),
  Options.withPseudoName("N"),
  Options.withDescription("Background responses in flight an organization may have at once.")
)
const quotaStoredMb = Options.integer("quota-stored-mb").pipe(
  Options.withDefault(Quotas.defaultQuotas.storedBytes / (1024 * 1024)),
  Options.withPseudoName("MIB"),
  Options.withDescription("MiB an organization's clipboards and model responses may hold.")
)
const quotaSecrets = Options.integer("quota-secrets").pipe(
  Options.withDefault(Quotas.defaultCountQuota),
  Options.withPseudoName("N"),
  Options.withDescription("Secrets an organization may hold (quota_exceeded_error code secrets past it).")
)
const quotaEgressPolicies = Options.integer("quota-egress-policies").pipe(
  Options.withDefault(Quotas.defaultCountQuota),
  Options.withPseudoName("N"),
  Options.withDescription("Saved egress policies an organization may hold (code egress_policies past it).")
)
const quotaApps = Options.integer("quota-apps").pipe(
  Options.withDefault(Quotas.defaultCountQuota),
  Options.withPseudoName("N"),
  Options.withDescription("Apps an organization may hold (code apps past it).")
)

const quotaIdempotencyKeys = Options.integer("quota-idempotency-keys").pipe(
  Options.withDefault(Quotas.defaultIdempotencyKeys),
  Options.withPseudoName("N"),
  Options.withDescription("Idempotency keys one API key may have remembered at once (code idempotency_keys past it).")
)
const quotaIdempotencyMb = Options.integer("quota-idempotency-mb").pipe(
  Options.withDefault(Quotas.defaultIdempotencyBytes / (1024 * 1024)),
  Options.withPseudoName("MIB"),
  Options.withDescription("MiB of remembered answers one API key may hold at once (code idempotency_keys past it).")
)

const instanceTimeoutSeconds = Options.integer("instance-timeout-seconds").pipe(
  Options.withDefault(10),
  Options.withPseudoName("SECONDS"),
  Options.withDescription(
    "With --database-url: how long after its last heartbeat another instance counts as gone and its work is taken over."
  )
)

/** Where `serve` keeps its state: in memory, SQLite under a directory, or PostgreSQL. */
export type StateChoice =
  | { readonly _tag: "Memory" }
  | { readonly _tag: "Sqlite"; readonly directory: string }
  | { readonly _tag: "Postgres"; readonly url: Redacted.Redacted<string> }

/**
 * The SQL store module, loaded only when a durable store is chosen (its drivers are optional peers, loaded by the
 * store itself, which says what to install when they are missing).
 */
const loadSqlState = Effect.promise(() => import("../Server/state/sql/SqlState.js"))

/** The state store of a choice (the SQL store module loaded only when chosen). */
const stateLayer = (choice: StateChoice) => {
  switch (choice._tag) {
    case "Memory":
      return Effect.succeed(undefined)
    case "Sqlite":
      return Effect.map(loadSqlState, (SqlState) => SqlState.layerSqlite(choice.directory))
    case "Postgres":
      return Effect.map(loadSqlState, (SqlState) => SqlState.layerPostgres(choice.url))
  }
}

/** The options of {@link serve}: the flags of `boxkit serve` (README.md), the optional ones at their defaults when absent. */
export interface ServeOptions {
  readonly host: string
  readonly port: number
  readonly seed: Option.Option<string>
  readonly newOrgInFlightCap: number
  readonly drainSeconds: number
  readonly exposeLocalRoutes: boolean
  readonly faults?: Option.Option<string>
  readonly faultsSeed?: number
  readonly modelUpstream?: Option.Option<string>
  readonly server?: LocalService.ServerKind
  readonly clock?: ServiceClock.ClockMode
  readonly dataDir?: Option.Option<string>
  readonly databaseUrl?: Option.Option<Redacted.Redacted<string>>
  readonly instanceTimeoutSeconds?: number
  readonly allowExampleKeys?: boolean
  readonly quotaBoxes?: number
  readonly quotaBackgroundResponses?: number
  readonly quotaStoredMb?: number
  readonly quotaSecrets?: number
  readonly quotaEgressPolicies?: number
  readonly quotaApps?: number
  readonly quotaIdempotencyKeys?: number
  readonly quotaIdempotencyMb?: number
}

/** The fault settings of `--faults` and `--faults-seed`; fails with the spec's error when `--faults` is not valid. */
const faultSettingsOf = (options: ServeOptions) =>
  Either.match(
    FaultInjection.parse(Option.getOrElse(options.faults ?? Option.none(), () => ""), {
      ...noFaults,
      seed: options.faultsSeed ?? noFaults.seed
    }),
    { onLeft: (error) => Effect.fail(error), onRight: (settings) => Effect.succeed(settings) }
  )

/**
 * The seed of `--seed`, else the example seed, which is refused on a host the network reaches unless
 * `--allow-example-keys` (its API keys are well known).
 */
const seedOf = (options: ServeOptions) =>
  Effect.gen(function*() {
    const loaded = Option.isSome(options.seed)
      ? yield* Snapshot.loadSeedOrSnapshot(options.seed.value)
      : yield* Schema.decodeUnknown(Seed.Seed)(DemoSeed.example).pipe(Effect.orDie)
    if (Option.isNone(options.seed) && !LocalRouteGuard.isLoopbackHost(options.host) && options.allowExampleKeys !== true) {
      return yield* Effect.fail(new ServeOptionsError({
        message: `refusing to serve the example seed's well-known API keys (sk_acme_org, ...) on ${options.host}, ` +
          "which the network reaches: pass --seed FILE with keys of your own, or --allow-example-keys"
      }))
    }
    return loaded
  })

/** Where the state is kept, from `--data-dir` and `--database-url` (not both: `ServeOptionsError`). */
const stateChoiceOf = (options: ServeOptions): Effect.Effect<StateChoice, ServeOptionsError> => {
  const dataDirectory = options.dataDir ?? Option.none()
  const database = options.databaseUrl ?? Option.none()
  if (Option.isSome(dataDirectory) && Option.isSome(database)) {
    return Effect.fail(new ServeOptionsError({ message: "Give --data-dir or --database-url, not both." }))
  }
  return Effect.succeed(
    Option.isSome(dataDirectory)
      ? { _tag: "Sqlite", directory: dataDirectory.value }
      : Option.isSome(database)
      ? { _tag: "Postgres", url: database.value }
      : { _tag: "Memory" }
  )
}

/** The quotas of the `--quota-*` flags (MiB flags in bytes), the defaults of Quotas.ts for the absent ones. */
const quotasOf = (options: ServeOptions) => ({
  boxes: options.quotaBoxes ?? Quotas.defaultQuotas.boxes,
  backgroundResponses: options.quotaBackgroundResponses ?? Quotas.defaultQuotas.backgroundResponses,
  storedBytes: options.quotaStoredMb !== undefined
    ? options.quotaStoredMb * 1024 * 1024
    : Quotas.defaultQuotas.storedBytes,
  secrets: options.quotaSecrets ?? Quotas.defaultCountQuota,
  egressPolicies: options.quotaEgressPolicies ?? Quotas.defaultCountQuota,
  apps: options.quotaApps ?? Quotas.defaultCountQuota,
  idempotencyKeys: options.quotaIdempotencyKeys ?? Quotas.defaultIdempotencyKeys,
  idempotencyBytes: options.quotaIdempotencyMb !== undefined
    ? options.quotaIdempotencyMb * 1024 * 1024
    : Quotas.defaultIdempotencyBytes
})

/**
 * Drains when the scope closes: new requests get 503 while requests in flight finish, for at most `drainSeconds`
 * (a hard limit: what is still open then, a request in flight or a client sending its body slowly, is closed).
 */
const drainOnClose = (
  admission: Context.Tag.Service<Admission.Admission>,
  nodeServer: Context.Tag.Service<LocalService.NodeServer>,
  drainSeconds: number
) =>
  Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* admission.startDraining
      yield* Console.error("draining: new requests get 503; waiting for requests in flight")
      // Finalizers run uninterruptibly: the wait is made interruptible so that the timeout can end it.
      const idle = yield* admission.awaitIdle.pipe(
        Effect.interruptible,
        Effect.timeoutOption(Duration.seconds(drainSeconds))
      )
      if (Option.isNone(idle)) {
        yield* Console.error(`drain time over (${drainSeconds} s): closing the connections still open`)
      } else {
        yield* Console.error("drained; closing")
      }
      nodeServer.closeAllConnections()
    })
  )

/**
 * Prints where the service listens (`url`), its model upstream and faults (when set), where its state is, and what
 * a snapshot seed restored.
 */
const announce = (
  url: string,
  location: Context.Tag.Service<StateStore.StateLocation>,
  options: ServeOptions,
  faultSettings: FaultSettings,
  seed: Seed.Seed | Snapshot.Snapshot
) =>
  Effect.gen(function*() {
    yield* Console.log(`listening on ${url}`)
    if (Option.isSome(options.modelUpstream ?? Option.none())) {
      yield* Console.log(`model upstream: ${Option.getOrThrow(options.modelUpstream!)}`)
    }
    if (Option.isSome(options.faults ?? Option.none())) {
      yield* Console.log(`faults: ${FaultInjection.describe(faultSettings)}`)
    }
    yield* Console.log(
      location.durable
        ? `state: ${location.description}${location.fresh ? " (new)" : " (existing: the seed is not applied again)"}`
        : "state: in memory; --data-dir DIR keeps it"
    )
    if (Option.isNone(options.seed) && location.fresh) {
      yield* Console.log("seed: the example seed (API keys sk_acme_org, sk_acme_ada, sk_acme_bob, sk_ada_personal, sk_broke_org)")
    }
    if ("version" in seed && location.fresh) yield* announceSnapshot(seed)
  })

/** Says which clock the service runs on, and how far ahead a virtual one resumed (a restart on durable state). */
const announceClock = (clock: Context.Tag.Service<ServiceClock.ServiceClock>) =>
  Effect.gen(function*() {
    if (clock.mode === "real") return
    const reading = yield* Effect.orElseSucceed(clock.read, () => undefined)
    const offset = reading === undefined || reading.offsetMillis === 0
      ? ""
      : ` (resumed ${reading.offsetMillis / 1000} s ahead of the real time, ` +
        `now ${new Date(reading.nowMillis).toISOString()})`
    yield* Console.log(`clock: virtual${offset}; POST /_local/clock/advance {"seconds": N} moves it`)
  })

/** Says what a snapshot seed restored, and which of its secrets had no value (they are not restored). */
const announceSnapshot = (snapshot: Snapshot.Snapshot) =>
  Effect.gen(function*() {
    yield* Console.log(
      `seed: snapshot taken at ${snapshot.taken_at} (${snapshot.organizations.length} organizations, ` +
        `${snapshot.boxes.length} boxes, ${snapshot.responses.length} responses, ` +
        `${snapshot.idempotency_keys.length} idempotency keys)`
    )
    const withoutValue = snapshot.secrets.filter((secret) => secret.value === undefined)
    if (withoutValue.length > 0) {
      yield* Console.log(
        `seed: secrets without a value, not restored: ${
          withoutValue.map((secret) => `${secret.org_id}/${secret.name}`).join(", ")
        } (export with --include-secret-values to keep them)`
      )
    }
  })

/**
 * Runs the local service until interrupted, then drains. Fails with `FaultSpecError` (an invalid `--faults`), a seed
 * error, `ServeOptionsError` (options that cannot go together) or what the service fails with when it starts.
 */
export const serve = (options: ServeOptions) =>
  Effect.gen(function*() {
    const faultSettings = yield* faultSettingsOf(options)
    const loaded = yield* seedOf(options)
    const state = yield* Effect.flatMap(stateChoiceOf(options), stateLayer)
    yield* Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(LocalService.layerNode(loaded, {
        host: options.host,
        port: options.port,
        server: options.server ?? ServingPaths.registry.defaultPath,
        exposeLocalRoutes: options.exposeLocalRoutes,
        settings: {
          newOrgInFlightCap: options.newOrgInFlightCap,
          faults: faultSettings,
          instanceTimeout: Duration.seconds(options.instanceTimeoutSeconds ?? 10),
          quotas: quotasOf(options),
          clock: options.clock ?? "real"
        },
        state,
        languageModel: Option.match(options.modelUpstream ?? Option.none(), {
          onNone: () => undefined,
          onSome: (url) => UpstreamModel.layerFromEnv(url)
        })
      }))
      const admission = yield* Effect.provide(Admission.Admission, context)
      const nodeServer = yield* Effect.provide(LocalService.NodeServer, context)
      // Runs before the server closes (finalizers run in reverse order): drain first.
      yield* drainOnClose(admission, nodeServer, options.drainSeconds)
      const url = yield* Effect.provide(LocalService.baseUrl, context)
      const location = yield* Effect.provide(StateStore.StateLocation, context)
      yield* announce(url, location, options, faultSettings, loaded)
      yield* announceClock(yield* Effect.provide(ServiceClock.ServiceClock, context))
      return yield* Effect.never
    }))
  })

/** The `serve` command. */
export const command = Command.make(
  "serve",
  {
    host,
    port,
    seed,
    newOrgInFlightCap,
    drainSeconds,
    exposeLocalRoutes,
    faults,
    faultsSeed,
    modelUpstream,
    server,
    clock,
    dataDir,
    databaseUrl,
    instanceTimeoutSeconds,
    allowExampleKeys,
    quotaBoxes,
    quotaBackgroundResponses,
    quotaStoredMb,
    quotaSecrets,
    quotaEgressPolicies,
    quotaApps,
    quotaIdempotencyKeys,
    quotaIdempotencyMb
  },
  serve
).pipe(Command.withDescription(help(
  "Run the local box service (both {base_url} and {api_url} under /v1) until SIGINT or SIGTERM, then drain.",
  "boxkit serve --port 0 --data-dir ./boxkit-state"
)))
