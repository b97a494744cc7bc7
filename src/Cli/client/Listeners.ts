/**
 * `boxkit listeners unpublish BOX_ID PORT`: stops publishing a guest port of a box.
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}".
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { UnpublishResult } from "../../Domain/Box.js"
import { clientOptions, help, withClient } from "./ClientOptions.js"
import { boxIdArgument } from "./Boxes.js"
import { printResource } from "./Output.js"

const unpublish = Command.make("unpublish", {
  ...clientOptions,
  boxId: boxIdArgument,
  port: Args.integer({ name: "PORT" }).pipe(Args.withDescription("The guest port (1 to 65535)."))
}, (options) =>
  withClient(options, ({ Listeners }) => Effect.flatMap(Listeners, (listeners) => listeners.unpublish(options.boxId, options.port))).pipe(
    Effect.flatMap((result) => printResource(UnpublishResult, result, options))
  )).pipe(Command.withDescription(help("Stop publishing a guest port of a box.", "boxkit listeners unpublish sb_0123… 8080")))

/** The `listeners` command and its subcommands. */
export const command = Command.make("listeners").pipe(
  Command.withDescription("Listeners: the published ports of a box."),
  Command.withSubcommands([unpublish])
)
