/**
 * The options every client command takes, and the client toolkit built from them: `--base-url` (else `BOX_BASE_URL`,
 * else the local service's default address `http://127.0.0.1:8787/v1`), `--api-url` (else `BOX_API_URL`, else the
 * base URL), `--api-key` (else `BOX_API_KEY`; read as `Redacted`, never printed) and `--json`. The commands run on
 * the toolkit's services (Boxkit.ts), so retries, idempotency keys and typed errors are the client's own.
 *
 * Source: spec "Conventions" (`{base_url}`, `{api_url}`); docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import { HelpDoc, Options } from "@effect/cli"
import { Config, Effect, Option, type Redacted, Schema } from "effect"
import type * as Boxkit from "../../Client/Boxkit.js"
import type { Mode } from "./Output.js"

/** The base URL when neither `--base-url` nor `BOX_BASE_URL` is given: `boxkit serve`'s default address. */
export const defaultBaseUrl = "http://127.0.0.1:8787/v1"

/** The options every client command takes (spread into each command's config). */
export const clientOptions = {
  baseUrl: Options.text("base-url").pipe(
    Options.withFallbackConfig(Config.string("BOX_BASE_URL")),
    Options.withDefault(defaultBaseUrl),
    Options.withPseudoName("URL"),
    Options.withDescription("{base_url} of the service, ending in /v1 (else BOX_BASE_URL).")
  ),
  apiUrl: Options.text("api-url").pipe(
    Options.withFallbackConfig(Config.string("BOX_API_URL")),
    Options.optional,
    Options.withPseudoName("URL"),
    Options.withDescription("{api_url} for apps and responses, ending in /v1 (else BOX_API_URL, else the base URL).")
  ),
  apiKey: Options.redacted("api-key").pipe(
    Options.withFallbackConfig(Config.redacted("BOX_API_KEY")),
    Options.withPseudoName("KEY"),
    Options.withDescription("API key; required, from here or BOX_API_KEY. Never printed.")
  ),
  json: Options.boolean("json").pipe(
    Options.withDescription("Print the resource exactly as the API answered it (JSON), and nothing else, on stdout.")
  )
}

/** The values of {@link clientOptions}. */
export interface ClientSettings extends Mode {
  readonly baseUrl: string
  readonly apiUrl: Option.Option<string>
  readonly apiKey: Redacted.Redacted<string>
}

/** The client toolkit's modules the commands use (Toolkit.ts). */
export type Toolkit = typeof import("./Toolkit.js")

/**
 * Runs `use(toolkit)` with every client service (Boxkit.layer), configured by `settings`. The toolkit is loaded
 * here, when a client command runs.
 */
export const withClient = <A, E>(
  settings: ClientSettings,
  use: (toolkit: Toolkit) => Effect.Effect<A, E, Boxkit.Services>
): Effect.Effect<A, E> =>
  Effect.flatMap(Effect.promise(() => import("./Toolkit.js")), (toolkit) =>
    Effect.provide(
      use(toolkit),
      toolkit.layer({ apiKey: settings.apiKey, baseUrl: settings.baseUrl, apiUrl: Option.getOrUndefined(settings.apiUrl) })
    ))

/**
 * A command that cannot run as asked, before any request (a client command's bad input, a word that names no
 * command): `message` says why, `fix` what to do; `usage` true when the command line itself is wrong (exit 2), else
 * exit 1 (Failure.ts).
 */
export class ClientCommandError extends Schema.TaggedError<ClientCommandError>()("ClientCommandError", {
  message: Schema.String,
  fix: Schema.optional(Schema.String),
  usage: Schema.Boolean
}) {}

/**
 * A command's description: what it does, then one paragraph `Example: …` per example, which `--help` shows under
 * "Example:" (Help.ts).
 *
 * @since 0.1.0
 * @category Help
 */
export const help = (summary: string, ...examples: ReadonlyArray<string>): HelpDoc.HelpDoc =>
  HelpDoc.blocks([HelpDoc.p(summary), ...examples.map((example) => HelpDoc.p(`Example: ${example}`))])
