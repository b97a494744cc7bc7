/**
 * `boxkit orchestrate`: N durable box workflows on Effect's workflow engine (src/Workflow/Orchestration.ts), the
 * runnable proof of `boxkit/workflow` and a template for users. `--data-dir DIR` keeps the workflows in SQLite (one
 * runner); `--database-url postgres://...` in PostgreSQL, where several orchestrate processes are runners of one
 * cluster. A restart with the same arguments resumes the same N workflows. Prints progress lines, then
 * `orchestrated N boxes` and exits 0 (1 when a workflow failed).
 *
 * The program (OrchestrateProgram.ts) is imported when the command runs, so that other commands start without the
 * workflow engine.
 *
 * Source: docs/ASSUMPTIONS.md "Durable orchestration"; flags: README.md.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { Data, Effect } from "effect"
import { clientOptions, help } from "./client/ClientOptions.js"

/** Options of `orchestrate` that are missing or cannot go together. */
export class OrchestrateOptionsError extends Data.TaggedError("OrchestrateOptionsError")<{ readonly message: string }> {}

/** The `orchestrate` command. */
export const command = Command.make("orchestrate", {
  // The same --base-url and --api-key as the client commands (BOX_BASE_URL, BOX_API_KEY; ClientOptions.ts).
  baseUrl: clientOptions.baseUrl,
  apiKey: clientOptions.apiKey,
  boxes: Options.integer("boxes").pipe(Options.withPseudoName("N"), Options.withDescription("How many box workflows (named by index 0..N-1).")),
  dataDir: Options.directory("data-dir").pipe(
    Options.optional,
    Options.withPseudoName("DIR"),
    Options.withDescription("Keep the workflows in SQLite under this directory (one runner).")
  ),
  databaseUrl: Options.redacted("database-url").pipe(
    Options.optional,
    Options.withPseudoName("URL"),
    Options.withDescription("Keep the workflows in PostgreSQL (postgres://...): runners on one database share the work.")
  ),
  runnerAddress: Options.text("runner-address").pipe(
    Options.optional,
    Options.withPseudoName("HOST:PORT"),
    Options.withDescription("With --database-url: host:port other runners reach this one at (default 127.0.0.1 and a free port).")
  ),
  webhookPort: Options.integer("webhook-port").pipe(
    Options.withDefault(0),
    Options.withPseudoName("PORT"),
    Options.withDescription("Port of the completion-webhook receiver on 127.0.0.1 (0: a free port).")
  ),
  concurrency: Options.integer("concurrency").pipe(
    Options.withDefault(16),
    Options.withPseudoName("N"),
    Options.withDescription("Workflows this runner runs at once (each runner on one database runs this many).")
  ),
  model: Options.text("model").pipe(
    Options.withDefault("boxkit-local"),
    Options.withPseudoName("MODEL"),
    Options.withDescription("Model of the background responses.")
  )
}, (options) =>
  Effect.flatMap(
    Effect.promise(() => import("./OrchestrateProgram.js")),
    (OrchestrateProgram) => OrchestrateProgram.run(options)
  )).pipe(Command.withDescription(help(
    "Run N crash-safe box workflows (create, wait, clipboard, response, terminate).",
    "boxkit orchestrate --boxes 10 --data-dir ./workflows"
  )))
