/**
 * `boxkit apps find NAME [--mint]`: the app named NAME (spec: POST {api_url}/apps/find), created with `--mint` when
 * missing.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { App } from "../../Domain/App.js"
import { clientOptions, help, withClient } from "./ClientOptions.js"
import { printResource } from "./Output.js"

const find = Command.make("find", {
  ...clientOptions,
  name: Args.text({ name: "NAME" }).pipe(Args.withDescription("The app's name (1 to 128 characters).")),
  mint: Options.boolean("mint").pipe(Options.withDescription("Create the app when there is none of that name."))
}, (options) =>
  withClient(options, ({ Apps }) => Effect.flatMap(Apps, (apps) => apps.find(options.name, { mintIfMissing: options.mint }))).pipe(Effect.flatMap((app) => printResource(App, app, options)))).pipe(
    Command.withDescription(help("Find an app by name (--mint creates it when missing).", "boxkit apps find my-app --mint"))
  )

/** The `apps` command and its subcommands. */
export const command = Command.make("apps").pipe(
  Command.withDescription(help("Apps: find one by name, or mint it.", "boxkit apps find my-app --mint")),
  Command.withSubcommands([find])
)
