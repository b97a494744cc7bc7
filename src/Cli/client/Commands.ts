/**
 * The client commands of `boxkit`, one per area of the API, each with its subcommands: `apps`, `boxes`, `secrets`,
 * `policies`, `clipboard`, `listeners`, `exec`, `responses`; one subcommand per operation of the client's services.
 * They run on the client toolkit (ClientOptions.ts). `state` exports and imports the local service's state (State.ts).
 *
 * Source: docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import * as Apps from "./Apps.js"
import * as Boxes from "./Boxes.js"
import * as Clipboard from "./Clipboard.js"
import * as Exec from "./Exec.js"
import * as Listeners from "./Listeners.js"
import * as Policies from "./Policies.js"
import * as Responses from "./Responses.js"
import * as Secrets from "./Secrets.js"
import * as State from "./State.js"

/** Every client command, in the order `boxkit --help` lists them. */
export const commands = [
  Apps.command,
  Boxes.command,
  Secrets.command,
  Policies.command,
  Clipboard.command,
  Listeners.command,
  Exec.command,
  Responses.command,
  State.command
] as const
