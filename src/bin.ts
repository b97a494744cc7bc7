/**
 * The `boxkit` command line: `boxkit serve` runs the local box service; `boxkit demo` runs the demo (the main job);
 * `boxkit apps|boxes|secrets|policies|clipboard|listeners|responses …` call the API through the client toolkit
 * (Cli/client/*); `boxkit orchestrate` runs N crash-safe box workflows (src/Cli/Orchestrate.ts).
 * A failure prints what failed and the fix (Cli/Failure.ts) and exits 2 for a wrong command line, 1 for any other
 * failure; `--verbose` (anywhere on the line) or `BOXKIT_DEBUG=1` adds the cause and its stack.
 *
 * @since 0.1.0
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Exit, Layer, Logger, LogLevel } from "effect"
import packageJson from "../package.json" with { type: "json" }
import * as ClientCommands from "./Cli/client/Commands.js"
import * as Demo from "./Cli/Demo.js"
import * as Failure from "./Cli/Failure.js"
import * as Orchestrate from "./Cli/Orchestrate.js"
import * as Serve from "./Cli/Serve.js"

const boxkit = Command.make("boxkit").pipe(
  Command.withDescription(
    "An Effect toolkit for the Box Service HTTP API, with a faithful local box service. " +
      "Add --verbose (or set BOXKIT_DEBUG=1) to any command to see the cause and stack of a failure."
  ),
  Command.withSubcommands([Serve.command, Demo.command, Orchestrate.command, ...ClientCommands.commands])
)

const cli = Command.run(boxkit, { name: "boxkit", version: packageJson.version })

const verbose = process.argv.includes("--verbose") || process.env.BOXKIT_DEBUG === "1"
const argv = process.argv.filter((argument) => argument !== "--verbose")
const word = (argument: string | undefined) => argument !== undefined && /^[a-z][a-z-]*$/.test(argument)
// `boxkit boxes create` is named with its subcommand in failures; `boxkit serve` alone.
const command = !word(argv[2])
  ? ""
  : word(argv[3]) && !["serve", "demo"].includes(argv[2])
  ? `${argv[2]} ${argv[3]}`
  : argv[2]

const main = cli(argv).pipe(
  Effect.as(0),
  Effect.catchAllCause((cause) => {
    const report = Failure.report(cause, { command, verbose })
    return Effect.as(Effect.forEach(report.lines, (line) => Console.error(line), { discard: true }), report.exitCode)
  })
)

main.pipe(
  Effect.provide(Layer.mergeAll(NodeContext.layer, Logger.minimumLogLevel(LogLevel.Info))),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // An interrupted command (SIGINT, SIGTERM: `serve` drains first) ends with 0, as it always did.
    teardown: (exit, onExit) =>
      onExit(
        Exit.isSuccess(exit)
          ? (typeof exit.value === "number" ? exit.value : 0)
          : Cause.isInterruptedOnly(exit.cause)
          ? 0
          : Failure.failureExitCode
      )
  })
)
