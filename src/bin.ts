/**
 * The `boxkit` command line: `boxkit serve` runs the local box service; `boxkit demo` runs the demo (the main job);
 * `boxkit apps|boxes|secrets|policies|clipboard|listeners|responses …` call the API through the client toolkit
 * (Cli/client/*); `boxkit orchestrate` runs N crash-safe box workflows (src/Cli/Orchestrate.ts).
 * A failure prints what failed and the fix (Cli/Failure.ts) and exits 2 for a wrong command line, 1 for any other
 * failure; `--verbose` (anywhere on the line) or `BOXKIT_DEBUG=1` adds the cause and its stack. Help, and the
 * answer to a mistyped command, come from Cli/CommandLine.ts.
 *
 * @since 0.1.0
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Exit, Layer, Logger, LogLevel } from "effect"
import packageJson from "../package.json" with { type: "json" }
import { help } from "./Cli/client/ClientOptions.js"
import * as ClientCommands from "./Cli/client/Commands.js"
import * as CommandLine from "./Cli/CommandLine.js"
import * as Demo from "./Cli/Demo.js"
import * as Failure from "./Cli/Failure.js"
import * as Help from "./Cli/Help.js"
import * as Orchestrate from "./Cli/Orchestrate.js"
import * as Serve from "./Cli/Serve.js"

const boxkit = Command.make("boxkit").pipe(
  Command.withDescription(help(
    "An Effect toolkit for the Box Service HTTP API, with a faithful local box service.",
    "boxkit serve --port 0"
  )),
  Command.withSubcommands([Serve.command, Demo.command, Orchestrate.command, ...ClientCommands.commands])
)

const verbose = process.argv.includes("--verbose") || process.env.BOXKIT_DEBUG === "1"
const args = process.argv.slice(2).filter((argument) => argument !== "--verbose")
// A failure names the command the words lead to: `boxkit boxes create`, `boxkit serve`, `boxkit boxes` for
// `boxkit boxes creat`.
const command = CommandLine.resolve(Help.descriptorOf(boxkit), CommandLine.withoutLogLevel(args)).path.slice(1).join(" ")

const main = CommandLine.run(boxkit, args, { name: "boxkit", version: packageJson.version }).pipe(
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
