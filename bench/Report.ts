/**
 * The results of a run as JSON (`bench/results.json`) and as Markdown (`BENCHMARKS.md`): machine, versions, exact
 * commands, the budgets with pass or fail, and one table per section with every figure beside its ratio to the
 * baseline measured in the same run. Units: requests or calls per second, milliseconds, microseconds of CPU,
 * MB = 10^6 bytes.
 *
 * Source: issue 6 ("writes BENCHMARKS.md (tables, machine, versions, exact commands) and bench/results.json";
 * "Each figure is also reported as a ratio to a baseline measured in the same run"; "Budgets ... pass/fail").
 *
 * @since 0.1.0
 */
import type { ClientResults, ClientRun } from "./ClientOverhead.js"
import type { ColdStartResults } from "./ColdStart.js"
import type { MachineInfo } from "./Machine.js"
import type { MemoryResults } from "./Memory.js"
import type { BenchSettings } from "./Settings.js"
import * as Stats from "./Stats.js"
import type { ScenarioResult, ThroughputResults } from "./Throughput.js"
import type { WebhookResults } from "./Webhooks.js"

/** One budget line: what was measured against which limit; `pass` is null when this run cannot decide it. */
export interface Budget {
  readonly budget: string
  readonly measured: string
  readonly pass: boolean | null
  readonly note?: string
}

/** Everything a run produced. */
export interface Results {
  readonly mode: BenchSettings["mode"]
  readonly sections: BenchSettings["sections"]
  readonly settings: Omit<BenchSettings, "sections" | "markdownPath" | "jsonPath">
  readonly startedAt: string
  readonly totalSeconds: number
  /** Seconds each section took, by its title. */
  readonly sectionSeconds: Record<string, number>
  readonly machine: MachineInfo & { readonly loadAverageAtEnd: ReadonlyArray<number> }
  readonly versions: Record<string, string>
  readonly commands: Record<string, string>
  readonly coldStart?: ColdStartResults
  readonly throughput?: ThroughputResults
  readonly client?: ClientResults
  readonly webhooks?: WebhookResults
  readonly memory?: MemoryResults
  readonly budgets: ReadonlyArray<Budget>
}

/** Budgets of issue 6. */
export const limits = {
  appsFindRatio: 0.3,
  clientRatio: 0.5,
  coldStartMs: 500,
  webhooks: 10_000,
  webhookMs: 10_000,
  idempotencyKeys: 100_000,
  rssBytes: 150_000_000
} as const

const fmt = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "n/a"
const times = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}x` : "n/a")
const mb = (bytes: number): string => fmt(bytes / 1e6, 1)
const clean = (result: ScenarioResult): boolean =>
  result.non2xx === 0 && result.errors === 0 && result.timeouts === 0 &&
  Object.keys(result.statusCodes).every((status) => Number(status) === result.expectedStatus)

/** Computes the budget lines from whatever sections ran. */
export const budgets = (results: Omit<Results, "budgets">): Array<Budget> => {
  const lines: Array<Budget> = []
  const throughput = results.throughput
  if (throughput !== undefined) {
    const appsFind = throughput.scenarios.find((scenario) => scenario.title === throughput.baseline.title && scenario.server === undefined)
    const value = Stats.ratio(appsFind?.requestsPerSecond ?? Number.NaN, throughput.baseline.requestsPerSecond)
    const valid = appsFind !== undefined && clean(appsFind) && clean(throughput.baseline)
    lines.push({
      budget: `local service apps/find >= ${limits.appsFindRatio}x raw node:http`,
      measured: `${times(value)} (${fmt(appsFind?.requestsPerSecond ?? Number.NaN)} vs ${fmt(throughput.baseline.requestsPerSecond)} req/s)`,
      pass: valid ? value >= limits.appsFindRatio : false,
      ...(valid ? {} : { note: "a run had errors or unexpected statuses" })
    })
  }
  const client = results.client
  if (client !== undefined) {
    const at = (name: ClientRun["client"]) => client.runs.find((run) => run.client === name && run.concurrency === results.settings.concurrency)
    const toolkit = at("toolkit")
    const undici = at("undici")
    const value = Stats.ratio(toolkit?.callsPerSecond ?? Number.NaN, undici?.callsPerSecond ?? Number.NaN)
    const valid = toolkit !== undefined && undici !== undefined && toolkit.failures === 0 && undici.failures === 0
    lines.push({
      budget: `toolkit client >= ${limits.clientRatio}x raw undici at concurrency ${results.settings.concurrency}`,
      measured: `${times(value)} (${fmt(toolkit?.callsPerSecond ?? Number.NaN)} vs ${fmt(undici?.callsPerSecond ?? Number.NaN)} calls/s)`,
      pass: valid ? value >= limits.clientRatio : false,
      ...(valid ? {} : { note: "a run had failed calls" })
    })
  }
  for (const variant of (results.coldStart?.variants ?? []).filter((variant) => variant.budget)) {
    lines.push({
      budget: `${variant.label} cold start <= ${limits.coldStartMs} ms median`,
      measured: `${fmt(variant.medianMs)} ms median of ${variant.samplesMs.length}` +
        (results.coldStart?.stoppedByTimeCap === true ? ` (the ${results.coldStart.timeCapSeconds} s time cap stopped the rounds)` : ""),
      pass: variant.medianMs <= limits.coldStartMs
    })
  }
  const webhooks = results.webhooks
  if (webhooks !== undefined) {
    const full = webhooks.responses === limits.webhooks
    const ok = webhooks.accepted === webhooks.responses && webhooks.lost === 0 && webhooks.duplicatesHandled === 0
    const capped = webhooks.stoppedByTimeCap ? ` (the ${webhooks.timeCapSeconds} s time cap ended the section)` : ""
    lines.push({
      budget: `${fmt(limits.webhooks)} webhooks delivered in <= ${limits.webhookMs / 1000} s with none lost`,
      measured: `${fmt(webhooks.accepted)} of ${fmt(webhooks.responses)} accepted, the last delivered after ` +
        `${fmt(webhooks.lastDeliveryMs / 1000, 2)} s, ${fmt(webhooks.lost)} not delivered, ` +
        `${webhooks.duplicatesHandled} duplicates handled, ${webhooks.submitFailures} submissions failed${capped}`,
      pass: full ? ok && webhooks.lastDeliveryMs <= limits.webhookMs : (ok ? null : false),
      ...(full ? {} : { note: `quick run: ${fmt(webhooks.responses)} webhooks, not the budget's ${fmt(limits.webhooks)}` })
    })
  }
  const memory = results.memory
  if (memory !== undefined) {
    const full = memory.keys === limits.idempotencyKeys && !memory.stoppedByTimeCap
    const ok = memory.stoppedByTimeCap
      ? memory.rememberedKeys >= memory.created
      : memory.created === memory.keys && memory.rememberedKeys >= memory.keys
    const over = memory.rssBytes > limits.rssBytes
    const why = memory.stoppedByTimeCap
      ? `stopped by the ${memory.timeCapSeconds} s time cap after ${fmt(memory.created)} keys`
      : `quick run: ${fmt(memory.keys)} keys, not the budget's ${fmt(limits.idempotencyKeys)}`
    lines.push({
      budget: `${fmt(limits.idempotencyKeys)} idempotency keys in <= ${limits.rssBytes / 1e6} MB RSS`,
      measured: `${mb(memory.rssBytes)} MB with ${fmt(memory.rememberedKeys)} keys remembered`,
      // With fewer keys the budget is decided only when the RSS is already over it.
      pass: !ok ? false : full ? !over : over ? false : null,
      ...(full ? {} : { note: over ? `${why}, already over the budget` : why })
    })
  }
  return lines
}

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`)
  ].join("\n")

const statuses = (result: ScenarioResult): string =>
  Object.entries(result.statusCodes).map(([status, count]) => `${status}: ${fmt(count)}`).join(", ") +
  (result.errors + result.timeouts > 0 ? `; errors ${result.errors}, timeouts ${result.timeouts}` : "")

const throughputSection = (results: ThroughputResults, settings: Results["settings"]): string => {
  const base = results.baseline
  const row = (label: string, result: ScenarioResult) => [
    label,
    fmt(result.requestsPerSecond),
    times(Stats.ratio(result.requestsPerSecond, base.requestsPerSecond)),
    fmt(result.latencyP50Ms, 1),
    fmt(result.latencyP99Ms, 1),
    times(Stats.ratio(result.latencyP99Ms, base.latencyP99Ms)),
    fmt(result.serverCpuMicrosPerRequest),
    times(Stats.ratio(result.serverCpuMicrosPerRequest, base.serverCpuMicrosPerRequest)),
    mb(result.serverRssBytes),
    times(Stats.ratio(result.serverRssBytes, base.serverRssBytes)),
    `${statuses(result)}${clean(result) ? "" : " (UNEXPECTED)"}${result.replayed === undefined ? "" : result.replayed ? "; replayed" : "; NOT replayed"}`
  ]
  return [
    "## 1. Local service throughput",
    "",
    `Concurrency ${settings.concurrency} (autocannon connections, no pipelining), ${settings.warmupSeconds} s warm-up, ` +
    `then ${settings.durationSeconds} s measured; each row against a fresh server process. "÷ base" is the ratio to ` +
    "the raw node:http apps/find baseline of this run. Server CPU is user + system time of the server's process group " +
    "during the measured run (from /proc, 10 ms ticks) per completed request; RSS is the serving process's after the run.",
    "",
    table(
      ["scenario", "req/s", "÷ base", "p50 ms", "p99 ms", "p99 ÷ base", "server CPU µs/req", "÷ base", "RSS MB", "÷ base", "answers"],
      [row(`baseline: raw node:http ${base.title}`, base), ...results.scenarios.map((result) =>
        row(`boxkit serve${result.server !== undefined ? ` --server ${result.server}` : ""} ${result.title}`, result))]
    )
  ].join("\n")
}

const clientSection = (results: ClientResults): string => {
  const baseOf = (run: ClientRun) => results.runs.find((other) => other.client === "undici" && other.concurrency === run.concurrency)
  return [
    "## 2. Client overhead",
    "",
    "`Apps.find(\"bench-app\", { mintIfMissing: true })` of the toolkit (`Boxkit.layer` + `BoxkitConfig.layer`) beside raw " +
    "`undici.request` (POST the same JSON, parse the JSON answer, its own `undici.Agent`), both against the raw " +
    "node:http server. CPU is `process.cpuUsage()` of the client (bench) process per call. \"÷ undici\" is the ratio " +
    "to raw undici at the same concurrency.",
    "",
    table(
      ["client", "concurrency", "calls/s", "÷ undici", "p50 ms", "p99 ms", "client CPU µs/call", "÷ undici", "failures"],
      results.runs.map((run) => {
        const base = baseOf(run)
        return [
          run.client === "toolkit"
            ? "toolkit `Apps.find`"
            : run.client === "toolkit-stock"
            ? "toolkit `Apps.find` over `NodeHttpClient.layerUndici`"
            : "raw `undici.request`",
          String(run.concurrency),
          fmt(run.callsPerSecond),
          times(Stats.ratio(run.callsPerSecond, base?.callsPerSecond ?? Number.NaN)),
          fmt(run.latencyP50Ms, 2),
          fmt(run.latencyP99Ms, 2),
          fmt(run.cpuMicrosPerCall),
          times(Stats.ratio(run.cpuMicrosPerCall, base?.cpuMicrosPerCall ?? Number.NaN)),
          String(run.failures)
        ]
      })
    )
  ].join("\n")
}

const webhookSection = (results: WebhookResults): string =>
  [
    "## 3. Webhook fan-out",
    "",
    `${fmt(results.responses)} background responses (\`POST /v1/responses\`, \`background: true\`, ` +
    "`metadata.completion_webhook` and `metadata.webhook_token`) submitted at concurrency " +
    `${results.concurrency} to \`boxkit serve\`; completions received by \`WebhookReceiver.makeHttpApp\` in the bench ` +
    "process. Time is from the first submission to the last response's first hand-over to the handler. Baseline: " +
    `the same number of POSTs of a ${fmt(results.baselineBodyBytes)}-byte completion body from raw \`undici.request\` ` +
    "to a raw node:http receiver, same concurrency.",
    "",
    table(["figure", "value", "÷ baseline"], [
      [
        "submissions accepted (202)",
        `${fmt(results.accepted)} of ${fmt(results.responses)}` +
        (results.submitted < results.responses || results.submitsAborted > 0
          ? ` (${fmt(results.submitted)} sent before the ${results.timeCapSeconds} s time cap; ` +
            `${fmt(results.submitsAborted)} unanswered at three quarters of it, aborted)`
          : "") +
        (results.submitFailures > 0 ? `; ${fmt(results.submitFailures)} failed` : ""),
        ""
      ],
      ["submission time", `${fmt(results.submitMs)} ms`, ""],
      ["time until the last delivery", `${fmt(results.lastDeliveryMs)} ms`, times(Stats.ratio(results.lastDeliveryMs, results.baselineMs))],
      ["deliveries per second", fmt(results.deliveriesPerSecond), times(Stats.ratio(results.deliveriesPerSecond, results.responses / (results.baselineMs / 1000)))],
      ["deliveries lost (not handed over when the wait ended)", `${fmt(results.lost)}` +
        (results.lost > 0 ? ` (the wait ended with the ${results.timeCapSeconds} s time cap)` : ""), ""],
      ["duplicates handed to the handler (after de-duplication)", String(results.duplicatesHandled), ""],
      ["POSTs received / beyond one per response", `${fmt(results.deliveriesReceived)} / ${fmt(results.duplicateDeliveries)}`, ""],
      ["baseline: raw undici → node:http, same count", `${fmt(results.baselineMs)} ms`, "1.00x"]
    ])
  ].join("\n")

const coldStartSection = (results: ColdStartResults): string =>
  [
    "## 4. Cold start",
    "",
    "From the spawn of the process to its first successful answer to `GET /openapi.json` (the address is read from " +
    "its `listening on` line, then the request is sent at once). The variants are interleaved round by round. " +
    "\"÷ base\" is the ratio to the raw node:http server's median, also started through tsx. " +
    `${results.rounds} rounds` + (results.stoppedByTimeCap ? ` (the ${results.timeCapSeconds} s time cap stopped further rounds).` : "."),
    "",
    table(
      ["variant", "command", "median ms", "÷ base", "min ms", "max ms", "median to `listening on` ms", "samples ms"],
      [results.baseline, ...results.variants].map((variant) => [
        variant.label,
        `\`${variant.command}\``,
        fmt(variant.medianMs),
        times(Stats.ratio(variant.medianMs, results.baseline.medianMs)),
        fmt(variant.minMs),
        fmt(variant.maxMs),
        fmt(variant.medianListeningMs),
        variant.samplesMs.map((sample) => fmt(sample)).join(", ")
      ])
    )
  ].join("\n")

const memorySection = (results: MemoryResults): string =>
  [
    "## 5. Memory",
    "",
    `${fmt(results.keys)} box creations (\`POST /v1/boxes\`, a distinct \`Idempotency-Key\` each, concurrency 64) ` +
    "against a fresh `boxkit serve`; RSS of the serving process read 2 s after the last answer (every box booted), " +
    "then `idempotency_keys` read from `GET /_local/state`. Measured, not extrapolated. Baseline: the raw node:http " +
    "server's RSS at rest. The load floor tells what the service holds per key apart from what any run of that many " +
    "requests leaves in the process: another fresh service answers as many replays of one key (same route, body " +
    "and answer size; no box or key added), RSS read 2 s after the last answer.",
    "",
    table(["figure", "value", "÷ baseline"], [
      [
        "creations answered 201",
        `${fmt(results.created)} of ${fmt(results.keys)} in ${fmt(results.createMs)} ms` +
        (results.stoppedByTimeCap ? ` (stopped by the ${results.timeCapSeconds} s time cap)` : ""),
        ""
      ],
      ["idempotency keys remembered", fmt(results.rememberedKeys), ""],
      ["RSS at rest after start", `${mb(results.idleRssBytes)} MB`, times(Stats.ratio(results.idleRssBytes, results.baselineRssBytes))],
      ["RSS holding the keys", `${mb(results.rssBytes)} MB`, times(Stats.ratio(results.rssBytes, results.baselineRssBytes))],
      ["peak RSS", `${mb(results.peakRssBytes)} MB`, times(Stats.ratio(results.peakRssBytes, results.baselineRssBytes))],
      ["RSS growth per key (box + remembered answer)", `${fmt(results.bytesPerKey)} bytes`, ""],
      [
        `load floor: RSS of another fresh service after ${fmt(results.floorReplays)} replays of one key (nothing remembered)`,
        `${mb(results.floorRssBytes)} MB`,
        times(Stats.ratio(results.floorRssBytes, results.baselineRssBytes))
      ],
      ["RSS per key above the load floor (box + remembered answer)", `${fmt(results.bytesPerKeyAboveFloor)} bytes`, ""],
      ["baseline: raw node:http RSS at rest", `${mb(results.baselineRssBytes)} MB`, "1.00x"]
    ])
  ].join("\n")

/** Renders the Markdown report. */
export const markdown = (results: Results): string => {
  const settings = results.settings
  const parts: Array<string> = [
    "# Benchmarks",
    "",
    "Generated by `" + (results.mode === "full" ? "npm run bench" : "npm run bench:quick") + "` (bench/run.ts); " +
    "do not edit by hand. The machine is shared, so absolute figures are noisy: every figure is also given as a " +
    "ratio to a baseline measured in the same run, on the same machine, at the same time. MB = 10^6 bytes.",
    "",
    "## Run",
    "",
    `- Mode: ${results.mode} (${settings.durationSeconds} s measured runs after ${settings.warmupSeconds} s warm-up, ` +
    `concurrency ${settings.concurrency}, ${fmt(settings.webhooks)} webhooks, ${fmt(settings.idempotencyKeys)} keys, ` +
    `${settings.coldStarts} cold starts per variant); sections: ${results.sections.join(", ")}.`,
    `- Started ${results.startedAt}; took ${fmt(results.totalSeconds)} s (` +
    `${Object.entries(results.sectionSeconds).map(([title, seconds]) => `${title}: ${fmt(seconds)} s`).join("; ")}).`,
    `- Load average (1, 5, 15 min) at start ${results.machine.loadAverage.map((value) => value.toFixed(2)).join(", ")}; ` +
    `at end ${results.machine.loadAverageAtEnd.map((value) => value.toFixed(2)).join(", ")}.`,
    "",
    "## Machine and versions",
    "",
    `- CPU: ${results.machine.cpuModel}, ${results.machine.cores} cores; memory ${fmt(results.machine.totalMemoryBytes / 1e9, 1)} GB; ` +
    `${results.machine.platform}, kernel ${results.machine.release}.`,
    `- Versions: ${Object.entries(results.versions).map(([name, version]) => `${name} ${version}`).join(", ")}.`,
    "",
    "## Commands",
    "",
    ...Object.entries(results.commands).map(([what, command]) => `- ${what}: \`${command}\``),
    "",
    "## Budgets",
    "",
    table(["budget", "measured", "result"], results.budgets.map((line) => [
      line.budget,
      line.measured,
      (line.pass === null ? "not decided" : line.pass ? "PASS" : "FAIL") + (line.note === undefined ? "" : ` (${line.note})`)
    ]))
  ]
  if (results.throughput !== undefined) parts.push("", throughputSection(results.throughput, settings))
  if (results.client !== undefined) parts.push("", clientSection(results.client))
  if (results.webhooks !== undefined) parts.push("", webhookSection(results.webhooks))
  if (results.coldStart !== undefined) parts.push("", coldStartSection(results.coldStart))
  if (results.memory !== undefined) parts.push("", memorySection(results.memory))
  return parts.join("\n") + "\n"
}
