/**
 * `boxkit secrets create NAME` (the value read from stdin, never from an argument: a hidden prompt on a terminal,
 * else everything piped in, without its final newline) and `boxkit secrets get NAME` (the metadata: the service never
 * answers a value). The value is `Redacted` from the moment it is read and never printed.
 *
 * Source: spec "GET {base_url}/secrets/{name}"; create: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Args, Command, Prompt } from "@effect/cli"
import { Effect, Redacted } from "effect"
import { Secret } from "../../Domain/Secret.js"
import { ClientCommandError, clientOptions, help, withClient } from "./ClientOptions.js"
import { printResource } from "./Output.js"

const name = Args.text({ name: "NAME" }).pipe(Args.withDescription("The secret's name, e.g. GITHUB_TOKEN."))

/** Everything on stdin as text. */
const readPipedStdin = Effect.async<string>((resume) => {
  const chunks: Array<Buffer> = []
  process.stdin.on("data", (chunk: Buffer) => chunks.push(chunk))
  process.stdin.once("end", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
  process.stdin.resume()
})

/** The secret's value from stdin: a hidden prompt on a terminal, else what is piped in (one final newline dropped). */
const readValue = (secretName: string) =>
  Effect.gen(function*() {
    const value = process.stdin.isTTY === true
      ? yield* Prompt.password({ message: `Value of ${secretName}` }).pipe(Effect.map(Redacted.value))
      : (yield* readPipedStdin).replace(/\r?\n$/, "")
    if (value === "") {
      return yield* Effect.fail(new ClientCommandError({
        message: "no value on stdin",
        fix: `pipe the value in, e.g. printf %s "$TOKEN" | boxkit secrets create ${secretName}`,
        usage: true
      }))
    }
    return Redacted.make(value)
  })

const create = Command.make("create", { ...clientOptions, name }, (options) =>
  Effect.gen(function*() {
    const value = yield* readValue(options.name)
    const secret = yield* withClient(options, ({ Secrets }) => Effect.flatMap(Secrets, (secrets) => secrets.create(options.name, value)))
    yield* printResource(Secret, secret, options)
  })).pipe(
    Command.withDescription(help(
      "Create a secret, or replace its value. The value is read from stdin (hidden prompt on a terminal), never from an argument.",
      "printf %s \"$TOKEN\" | boxkit secrets create GITHUB_TOKEN"
    ))
  )

const get = Command.make("get", { ...clientOptions, name }, (options) =>
  withClient(options, ({ Secrets }) => Effect.flatMap(Secrets, (secrets) => secrets.retrieve(options.name))).pipe(
    Effect.flatMap((secret) => printResource(Secret, secret, options))
  )).pipe(
    Command.withDescription(help("Show a secret's metadata (never its value).", "boxkit secrets get GITHUB_TOKEN"))
  )

/** The `secrets` command and its subcommands. */
export const command = Command.make("secrets").pipe(
  Command.withDescription(help(
    "Secrets: create one (value from stdin), show one's metadata.",
    "boxkit secrets get GITHUB_TOKEN"
  )),
  Command.withSubcommands([create, get])
)
