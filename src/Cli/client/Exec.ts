/**
 * `boxkit exec resize BOX_ID EXEC_ID --cols N --rows N`: sets the terminal size of an exec (an unknown exec, or one
 * without a terminal, is a no-op on the service). Exec ids that do not fit a URL path segment are sent the way the
 * spec says (the client's Exec.resize).
 *
 * Source: spec "POST {base_url}/boxes/{box_id}/exec/{exec_id}/resize".
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { EmptyObject } from "../../Domain/Box.js"
import { boxIdArgument } from "./Boxes.js"
import { clientOptions, help, withClient } from "./ClientOptions.js"
import { printResource } from "./Output.js"

const resize = Command.make("resize", {
  ...clientOptions,
  boxId: boxIdArgument,
  execId: Args.text({ name: "EXEC_ID" }).pipe(Args.withDescription("The exec whose terminal is resized.")),
  cols: Options.integer("cols").pipe(Options.withPseudoName("N"), Options.withDescription("Columns (1 to 65535).")),
  rows: Options.integer("rows").pipe(Options.withPseudoName("N"), Options.withDescription("Rows (1 to 65535)."))
}, (options) =>
  Effect.gen(function*() {
    const answer = yield* withClient(
      options,
      ({ Exec }) => Effect.flatMap(Exec, (exec) => exec.resize(options.boxId, options.execId, { cols: options.cols, rows: options.rows }))
    )
    if (options.json) return yield* printResource(EmptyObject, answer, options)
    yield* Console.log(`resized the terminal of exec ${options.execId} to ${options.cols}x${options.rows}`)
  })).pipe(
    Command.withDescription(help(
      "Set the terminal size of an exec in a box.",
      "boxkit exec resize sb_0123… exec_42 --cols 120 --rows 40"
    ))
  )

/**
 * The `exec` command and its subcommands (`resize`).
 *
 * @since 0.1.0
 * @category Commands
 */
export const command = Command.make("exec").pipe(
  Command.withDescription(help("Exec: the terminal of a command running in a box.", "boxkit exec resize sb_0123… exec_42 --cols 120 --rows 40")),
  Command.withSubcommands([resize])
)
