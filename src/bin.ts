/**
 * The `boxkit` command line: `boxkit serve` runs the local box service; `boxkit demo` runs the demo (the main job).
 *
 * @since 0.1.0
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Layer, Logger, LogLevel } from "effect"
import * as Demo from "./Cli/Demo.js"
import * as Serve from "./Cli/Serve.js"
import packageJson from "../package.json" with { type: "json" }

const boxkit = Command.make("boxkit").pipe(
  Command.withDescription("An Effect toolkit for the Box Service HTTP API, with a faithful local box service."),
  Command.withSubcommands([Serve.command, Demo.command])
)

const cli = Command.run(boxkit, { name: "boxkit", version: packageJson.version })

cli(process.argv).pipe(
  Effect.tapErrorCause((cause) =>
    Cause.isInterruptedOnly(cause) ? Effect.void : Console.error(`boxkit failed: ${Cause.pretty(cause)}`)
  ),
  Effect.provide(Layer.mergeAll(NodeContext.layer, Logger.minimumLogLevel(LogLevel.Info))),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
