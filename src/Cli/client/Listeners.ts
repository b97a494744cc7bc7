/**
 * `boxkit listeners publish BOX_ID PORT [--protocol http|tcp]` (publishes a guest port: the listener with its public
 * address), `boxkit listeners add-domain BOX_ID PORT HOSTNAME` (a custom domain of an http port) and
 * `boxkit listeners unpublish BOX_ID PORT`.
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}"; publish and custom domains:
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { Listener, UnpublishResult } from "../../Domain/Box.js"
import { boxIdArgument } from "./Boxes.js"
import { clientOptions, help, withClient } from "./ClientOptions.js"
import { printResource } from "./Output.js"

const portArgument = Args.integer({ name: "PORT" }).pipe(Args.withDescription("The guest port (1 to 65535)."))

const publish = Command.make("publish", {
  ...clientOptions,
  boxId: boxIdArgument,
  port: portArgument,
  protocol: Options.choice("protocol", ["http", "tcp"]).pipe(
    Options.withDefault("http" as const),
    Options.withDescription("http (an https address) or tcp (a host:port address).")
  )
}, (options) =>
  withClient(
    options,
    ({ Listeners }) => Effect.flatMap(Listeners, (listeners) => listeners.publish(options.boxId, options.port, options.protocol))
  ).pipe(Effect.flatMap((listener) => printResource(Listener, listener, options)))).pipe(
    Command.withDescription(help(
      "Publish a guest port of a box; prints the listener with its public address.",
      "boxkit listeners publish sb_0123… 5432 --protocol tcp"
    ))
  )

const addDomain = Command.make("add-domain", {
  ...clientOptions,
  boxId: boxIdArgument,
  port: portArgument,
  hostname: Args.text({ name: "HOSTNAME" }).pipe(Args.withDescription("A DNS name, e.g. app.example.com."))
}, (options) =>
  withClient(
    options,
    ({ Listeners }) =>
      Effect.flatMap(Listeners, (listeners) => listeners.addDomain(options.boxId, options.port, options.hostname))
  ).pipe(Effect.flatMap((listener) => printResource(Listener, listener, options)))).pipe(
    Command.withDescription(help(
      "Add a custom domain to a published http port; prints the listener with its custom domains.",
      "boxkit listeners add-domain sb_0123… 8080 app.example.com"
    ))
  )

const unpublish = Command.make("unpublish", { ...clientOptions, boxId: boxIdArgument, port: portArgument }, (options) =>
  withClient(options, ({ Listeners }) => Effect.flatMap(Listeners, (listeners) => listeners.unpublish(options.boxId, options.port))).pipe(
    Effect.flatMap((result) => printResource(UnpublishResult, result, options))
  )).pipe(Command.withDescription(help("Stop publishing a guest port of a box.", "boxkit listeners unpublish sb_0123… 8080")))

/**
 * The `listeners` command and its subcommands (`publish`, `add-domain`, `unpublish`).
 *
 * @since 0.1.0
 * @category Commands
 */
export const command = Command.make("listeners").pipe(
  Command.withDescription(help(
    "Listeners: publish a box's guest ports, add custom domains, unpublish them.",
    "boxkit listeners publish sb_0123… 8080"
  )),
  Command.withSubcommands([publish, addDomain, unpublish])
)
