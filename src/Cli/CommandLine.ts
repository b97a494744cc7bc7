/**
 * Runs the `boxkit` command line on @effect/cli: finds the command the words name (`boxkit boxes create`), answers
 * a word that names no command with the closest one (`unknown command creat; did you mean create?`, exit 2, at every
 * level), prints our own help (Help.ts) where @effect/cli would print its own (`--help`, `-h`, or a command that
 * needs a subcommand given none), refuses an option where a subcommand is needed (`boxkit boxes --json`, exit 2), and
 * hands everything else to `Command.run`.
 *
 * Source: docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import { AutoCorrect, BuiltInOptions, CliConfig, Command, CommandDirective } from "@effect/cli"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import { Console, Effect, Option } from "effect"
import { ClientCommandError } from "./client/ClientOptions.js"
import { colours } from "./client/Output.js"
import * as Help from "./Help.js"

/**
 * Where the words of a command line lead: the command they name (`path` from `boxkit`), with the arguments left for
 * it, or a word that names none of the subcommands of `path`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Resolution =
  | {
    readonly _tag: "Found"
    readonly path: ReadonlyArray<string>
    readonly node: Help.Descriptor
    readonly rest: ReadonlyArray<string>
  }
  | {
    readonly _tag: "Unknown"
    readonly path: ReadonlyArray<string>
    readonly node: Help.Descriptor
    readonly word: string
  }

/**
 * Follows the leading words of `args` (the command line after `boxkit`) down the subcommands of `root`, up to the
 * first option or the first command that has no subcommands.
 *
 * @since 0.1.0
 * @category Command line
 */
export const resolve = (root: Help.Descriptor, args: ReadonlyArray<string>): Resolution => {
  let node = root
  const path = [Help.nameOf(root)]
  let index = 0
  while (index < args.length && Help.childrenOf(node).length > 0) {
    const word = args[index]!
    if (word.startsWith("-")) break
    const child = Help.childrenOf(node).find((candidate) => Help.nameOf(candidate) === word)
    if (child === undefined) return { _tag: "Unknown", path, node, word }
    node = child
    path.push(word)
    index++
  }
  return { _tag: "Found", path, node, rest: args.slice(index) }
}

/**
 * The name among `names` that `word` most likely meant: the only one it begins, else the nearest by edit distance
 * when at most 2 edits (1 for words of 3 letters or fewer) away.
 *
 * @since 0.1.0
 * @category Command line
 */
export const suggest = (word: string, names: ReadonlyArray<string>): Option.Option<string> => {
  const prefixed = names.filter((name) => word.length >= 2 && name.startsWith(word))
  if (prefixed.length === 1) return Option.some(prefixed[0]!)
  const limit = word.length <= 3 ? 1 : 2
  const scored = names
    .map((name) => ({ name, distance: AutoCorrect.levensteinDistance(word, name, CliConfig.defaultConfig) }))
    .filter(({ distance }) => distance <= limit)
    .sort((left, right) => left.distance - right.distance)
  return Option.map(Option.fromNullable(scored[0]), ({ name }) => name)
}

/**
 * The failure of a word that names no command: what it may have meant, else the commands there are. Exit 2.
 *
 * @since 0.1.0
 * @category Command line
 */
export const unknownCommand = (resolution: Extract<Resolution, { readonly _tag: "Unknown" }>): ClientCommandError => {
  const names = Help.childrenOf(resolution.node).map(Help.nameOf)
  const command = resolution.path.join(" ")
  return new ClientCommandError({
    message: Option.match(suggest(resolution.word, names), {
      onNone: () => `unknown command ${resolution.word}; the commands of ${command} are ${names.join(", ")}`,
      onSome: (name) => `unknown command ${resolution.word}; did you mean ${name}?`
    }),
    fix: `run "${command} --help" for its commands`,
    usage: true
  })
}

/**
 * The layout of help on stdout: its terminal's width up to 100 columns (100 off a terminal), colours as
 * Output.colours says.
 *
 * @since 0.1.0
 * @category Help
 */
export const layout = (stream: { readonly isTTY?: boolean; readonly columns?: number } = process.stdout): Help.Layout => ({
  width: stream.isTTY === true && stream.columns !== undefined && stream.columns > 0
    ? Math.max(40, Math.min(100, stream.columns))
    : 100,
  colour: colours(stream)
})

/**
 * `args` without @effect/cli's `--log-level LEVEL` (or `--log-level=LEVEL`), which it takes anywhere and answers by
 * running the command line again without it: which command the words name, and whether they ask for help, is read
 * without it (the command itself still runs with it).
 *
 * @since 0.1.0
 * @category Command line
 */
export const withoutLogLevel = (args: ReadonlyArray<string>): ReadonlyArray<string> =>
  args.filter((arg, index) => !arg.startsWith("--log-level=") && arg !== "--log-level" && args[index - 1] !== "--log-level")

/** The options @effect/cli takes in place of a subcommand (`boxkit --version`). */
const builtInFlags = new Set(["--help", "-h", "--version", "--wizard", "--completions"])

/**
 * The failure of a command that needs a subcommand given an option first (`boxkit boxes --json`): which commands it
 * takes. Exit 2.
 *
 * @since 0.1.0
 * @category Command line
 */
export const missingCommand = (resolution: Extract<Resolution, { readonly _tag: "Found" }>): ClientCommandError => {
  const command = resolution.path.join(" ")
  return new ClientCommandError({
    message: `expected a command before ${resolution.rest[0]}: one of ${
      Help.childrenOf(resolution.node).map(Help.nameOf).join(", ")
    }`,
    fix: `run "${command} --help" for its commands`,
    usage: true
  })
}

/** True when @effect/cli reads `args` as a request for help (`--help` or `-h` where it takes them). */
const helpRequested = (root: Help.Descriptor, args: ReadonlyArray<string>) =>
  !args.some((arg) => arg === "--help" || arg === "-h")
    ? Effect.succeed(false)
    : Descriptor.parse(
      root as unknown as Descriptor.Command<unknown>,
      [Help.nameOf(root), ...args],
      CliConfig.defaultConfig
    ).pipe(
      Effect.map((directive) =>
        CommandDirective.isBuiltIn(directive) && BuiltInOptions.isShowHelp(directive.option)
      ),
      Effect.orElseSucceed(() => false)
    )

/**
 * Runs `command` (the root, `boxkit`) on `args` (the command line after `boxkit`): our help where help is asked
 * for, an unknown command's suggestion (fails with `ClientCommandError`, usage: exit 2), else `Command.run`.
 *
 * @since 0.1.0
 * @category Command line
 */
export const run = <Name extends string, R, E, A>(
  command: Command.Command<Name, R, E, A>,
  args: ReadonlyArray<string>,
  app: { readonly name: string; readonly version: string }
) =>
  Effect.gen(function*() {
    const root = Help.descriptorOf(command)
    const words = withoutLogLevel(args)
    const resolution = resolve(root, words)
    if (resolution._tag === "Unknown") return yield* Effect.fail(unknownCommand(resolution))
    const needsSubcommand = Help.childrenOf(resolution.node).length > 0
    if ((needsSubcommand && resolution.rest.length === 0) || (yield* helpRequested(root, words))) {
      return yield* Console.log(Help.render(Help.describe(resolution.node, resolution.path), layout()))
    }
    if (needsSubcommand && !builtInFlags.has(resolution.rest[0]!.split("=")[0]!)) {
      return yield* Effect.fail(missingCommand(resolution))
    }
    return yield* Command.run(command, app)(["node", app.name, ...args])
  })
