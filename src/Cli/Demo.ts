/**
 * The `boxkit demo` command: the main job (DemoProgram.ts). Through the client over real HTTP it exercises every area
 * of the API against `--base-url`, or against the embedded local service started in-process on a free port.
 *
 * The program is imported when the command runs, so that the other commands (`boxkit serve`) start without the
 * client toolkit.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { Effect } from "effect"
import { help } from "./client/ClientOptions.js"

/** The `demo` command. */
export const command = Command.make("demo", {
  baseUrl: Options.text("base-url").pipe(
    Options.optional,
    Options.withPseudoName("URL"),
    Options.withDescription("Service to run against ({base_url}, ending in /v1). Default: an embedded local service.")
  ),
  apiKey: Options.redacted("api-key").pipe(
    Options.optional,
    Options.withPseudoName("KEY"),
    Options.withDescription("Organization-scoped API key (default: BOX_API_KEY, or the embedded service's key).")
  )
}, ({ apiKey, baseUrl }) =>
  Effect.flatMap(
    Effect.promise(() => import("./DemoProgram.js")),
    (DemoProgram) => DemoProgram.run(baseUrl, apiKey)
  )).pipe(Command.withDescription(help(
    "Run the demo against a service (default: the embedded local service).",
    "boxkit demo --base-url http://127.0.0.1:8787/v1"
  )))
