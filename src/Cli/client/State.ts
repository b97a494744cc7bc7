/**
 * `boxkit state export FILE` and `boxkit state import FILE`: the running local service's state as a snapshot file
 * (Snapshot.ts), for fixtures in a repository. They talk to `/_local/snapshot` of the service at `--base-url` (else
 * `BOX_BASE_URL`, else `boxkit serve`'s default address), which answers on loopback only and needs no API key.
 *
 * `export` writes the file with mode 0600 (a new file renamed over FILE, so that it is never readable by others,
 * even for a moment); secret values and webhook tokens only with `--include-secret-values`. `import` writes the
 * file's records into the running service, each under its own id, and says which secrets it had no value for (they
 * are not restored; the service keeps a value it holds). `boxkit serve --seed FILE` starts a new service on the file
 * instead.
 *
 * Source: docs/ASSUMPTIONS.md "Snapshots (local service)".
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect } from "effect"
import { ClientCommandError, clientOptions, help } from "./ClientOptions.js"

const file = Args.file({ name: "FILE" }).pipe(Args.withDescription("The snapshot file (JSON)."))

const includeSecretValues = Options.boolean("include-secret-values").pipe(
  Options.withDescription("Write secret values and webhook tokens into the file (left out without this flag).")
)

/** The address of `/_local/snapshot` of the service whose `{base_url}` is `baseUrl`. */
export const snapshotUrl = (baseUrl: string, secretValues: boolean): string => {
  const url = new URL("/_local/snapshot", baseUrl)
  if (secretValues) url.searchParams.set("secret_values", "include")
  return url.toString()
}

/** One exchange with the service: the answer's status and text; a service that does not answer fails. */
const exchange = (url: string, init: RequestInit) =>
  Effect.tryPromise({
    try: async () => {
      const response = await fetch(url, init)
      return { status: response.status, text: await response.text() }
    },
    catch: (error) =>
      new ClientCommandError({
        message: `cannot reach the local service at ${url}: ${error instanceof Error ? error.message : String(error)}`,
        fix: "start it with boxkit serve, or pass --base-url (else BOX_BASE_URL) of the one running",
        usage: false
      })
  })

/** The failure of an answer that is not 200: the envelope's message when there is one. */
const refused = (url: string, answer: { readonly status: number; readonly text: string }) => {
  let message = answer.text.slice(0, 500)
  try {
    const envelope = JSON.parse(answer.text) as { readonly error?: { readonly message?: unknown } }
    if (typeof envelope.error?.message === "string") message = envelope.error.message
  } catch {
    // Not JSON: the text as it is.
  }
  return new ClientCommandError({ message: `${url} answered ${answer.status}: ${message}`, usage: false })
}

/** Writes `text` to `path` with mode 0600: into a new file beside it, then renamed over it. */
const writePrivate = (path: string, text: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const temporary = `${path}.${process.pid}.tmp`
    yield* fs.writeFileString(temporary, text, { mode: 0o600, flag: "wx" })
    yield* fs.chmod(temporary, 0o600)
    yield* fs.rename(temporary, path)
  }).pipe(Effect.mapError((error) =>
    new ClientCommandError({ message: `cannot write ${path}: ${error.message}`, usage: false })
  ))

/** How many records of each kind a snapshot holds, for people. */
const counts = (snapshot: Record<string, unknown>): string =>
  ["organizations", "api_keys", "apps", "secrets", "egress_policies", "boxes", "responses", "idempotency_keys"]
    .map((kind) => `${Array.isArray(snapshot[kind]) ? snapshot[kind].length : 0} ${kind.replaceAll("_", " ")}`)
    .join(", ")

/** The snapshot's clock, for people, when it was taken on a virtual clock (docs/ASSUMPTIONS.md "The virtual clock"). */
const clockLine = (snapshot: { readonly clock?: { mode?: unknown; now?: unknown; offset_seconds?: unknown } }) =>
  snapshot.clock?.mode === "virtual"
    ? `clock: virtual, ${String(snapshot.clock.offset_seconds)} s ahead of the real time ` +
      `(now ${String(snapshot.clock.now)})`
    : undefined

const exportCommand = Command.make(
  "export",
  { baseUrl: clientOptions.baseUrl, includeSecretValues, file },
  (options) =>
    Effect.gen(function*() {
      const url = snapshotUrl(options.baseUrl, options.includeSecretValues)
      const answer = yield* exchange(url, { method: "GET" })
      if (answer.status !== 200) return yield* Effect.fail(refused(url, answer))
      yield* writePrivate(options.file, answer.text)
      const snapshot = JSON.parse(answer.text)
      yield* Console.log(`exported ${options.file} (${counts(snapshot)})`)
      const clock = clockLine(snapshot)
      if (clock !== undefined) yield* Console.log(clock)
      if (!options.includeSecretValues) {
        yield* Console.log("secret values left out: pass --include-secret-values to keep them")
      }
    })
).pipe(Command.withDescription(help(
  "Write the running local service's whole state into FILE (mode 0600) as a snapshot; secret values only with " +
    "--include-secret-values.",
  "boxkit state export fixtures/state.json"
)))

const importCommand = Command.make(
  "import",
  { baseUrl: clientOptions.baseUrl, file },
  (options) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const text = yield* fs.readFileString(options.file).pipe(Effect.mapError((error) =>
        new ClientCommandError({ message: `cannot read ${options.file}: ${error.message}`, usage: false })
      ))
      const url = snapshotUrl(options.baseUrl, false)
      const answer = yield* exchange(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: text
      })
      if (answer.status !== 200) return yield* Effect.fail(refused(url, answer))
      const report = JSON.parse(answer.text) as {
        readonly restored: Record<string, number>
        readonly secrets_without_value: ReadonlyArray<string>
      }
      const restored = Object.entries(report.restored).map(([kind, count]) => `${count} ${kind.replaceAll("_", " ")}`)
      yield* Console.log(`imported ${options.file} (${restored.join(", ")})`)
      if (report.secrets_without_value.length > 0) {
        yield* Console.log(`secrets without a value, not restored: ${report.secrets_without_value.join(", ")}`)
      }
    })
).pipe(Command.withDescription(help(
  "Write the records of a snapshot FILE into the running local service, each under its own id; says which secrets " +
    "had no value.",
  "boxkit state import fixtures/state.json"
)))

/** The `state` command and its subcommands. */
export const command = Command.make("state").pipe(
  Command.withDescription(help(
    "The local service's state as a snapshot file: export it, import it (boxkit serve --seed FILE starts on one).",
    "boxkit state export fixtures/state.json"
  )),
  Command.withSubcommands([exportCommand, importCommand])
)
