/**
 * The help of `boxkit` and of each of its commands, read from the @effect/cli command descriptors and laid out for a
 * person: the usage line with the whole command path (`boxkit boxes create …`), each option's default, what is
 * optional (`[--port PORT]`) and what is repeatable (`[--port PORT]...`), our own descriptions (none of @effect/cli's
 * filler such as "A user-defined piece of text."), descriptions wrapped to the width (100 columns at most), and the
 * command's example. Bold headings on a colour terminal only (Output.colours).
 *
 * @effect/cli 0.77 keeps the parts of a command (options, arguments, defaults, subcommands) in the descriptors'
 * instruction trees (`_tag` Standard, Subcommands, Single, WithDefault, Variadic, …); this module reads them and does
 * not parse a command line. Source: docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import type { Command } from "@effect/cli"
import type * as HelpDoc from "@effect/cli/HelpDoc"
import type * as Span from "@effect/cli/HelpDoc/Span"
import { Option, Predicate, Redacted } from "effect"

/** A node of a command descriptor, as @effect/cli builds it (the parts this module reads). */
type DescriptorNode =
  | {
    readonly _tag: "Standard"
    readonly name: string
    readonly description: HelpDoc.HelpDoc
    readonly options: unknown
    readonly args: unknown
  }
  | { readonly _tag: "GetUserInput"; readonly name: string; readonly description: HelpDoc.HelpDoc }
  | { readonly _tag: "Map"; readonly command: DescriptorNode }
  | { readonly _tag: "Subcommands"; readonly parent: DescriptorNode; readonly children: ReadonlyArray<DescriptorNode> }

/** A node of an option or argument tree (the parts this module reads). */
interface ParameterNode {
  readonly _tag: string
  readonly name?: unknown
  readonly fullName?: string
  readonly aliases?: ReadonlyArray<string>
  readonly pseudoName?: Option.Option<string>
  readonly primitiveType?: { readonly _tag: string; readonly alternatives?: ReadonlyArray<readonly [string, unknown]> }
  readonly description?: HelpDoc.HelpDoc
  readonly options?: ParameterNode
  readonly args?: ParameterNode
  readonly argumentOption?: ParameterNode
  readonly left?: ParameterNode
  readonly right?: ParameterNode
  readonly min?: Option.Option<number>
  readonly fallback?: unknown
}

/**
 * A command's descriptor, to walk with {@link nameOf}, {@link childrenOf} and {@link describe}.
 *
 * @since 0.1.0
 * @category Models
 */
export type Descriptor = DescriptorNode

/**
 * The descriptor of a command made with `Command.make`.
 *
 * @since 0.1.0
 * @category Descriptors
 */
export const descriptorOf = <A>(command: Pick<Command.Command<string, never, never, A>, "descriptor">): Descriptor =>
  command.descriptor as unknown as Descriptor

/** The Standard (or GetUserInput) node that names `node` and holds its options and arguments. */
const leafOf = (node: DescriptorNode): Exclude<DescriptorNode, { readonly _tag: "Map" | "Subcommands" }> => {
  switch (node._tag) {
    case "Map":
      return leafOf(node.command)
    case "Subcommands":
      return leafOf(node.parent)
    default:
      return node
  }
}

/**
 * The name of a command (`boxes`, `create`).
 *
 * @since 0.1.0
 * @category Descriptors
 */
export const nameOf = (node: Descriptor): string => leafOf(node).name

/**
 * The subcommands of a command, in their declared order (none for a command that runs).
 *
 * @since 0.1.0
 * @category Descriptors
 */
export const childrenOf = (node: Descriptor): ReadonlyArray<Descriptor> =>
  node._tag === "Map" ? childrenOf(node.command) : node._tag === "Subcommands" ? node.children : []

/** The plain text of a span. */
const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

/** The paragraphs of a help document, as plain text. */
const paragraphs = (doc: HelpDoc.HelpDoc | undefined): ReadonlyArray<string> => {
  if (doc === undefined) return []
  switch (doc._tag) {
    case "Empty":
      return []
    case "Header":
    case "Paragraph":
      return [spanText(doc.value)]
    case "Sequence":
      return [...paragraphs(doc.left), ...paragraphs(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(paragraphs)
    case "DescriptionList":
      return doc.definitions.flatMap(([term, body]) => [spanText(term), ...paragraphs(body)])
  }
}

/** The prefix of a description paragraph that holds an example of the command (ClientOptions.help writes it). */
const examplePrefix = "Example: "

/**
 * One option of a command as its help shows it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface OptionHelp {
  /** `--port PORT`, `-h, --help`, `--size s|m|l`. */
  readonly flags: string
  /** How the usage line shows it: `--name NAME`, `[--port PORT]`, `[--port PORT]...`. */
  readonly usage: string
  readonly description: string
  /** The default value as text, when it has one worth showing. */
  readonly defaultValue: Option.Option<string>
  readonly required: boolean
  readonly repeatable: boolean
}

/**
 * One positional argument of a command as its help shows it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ArgumentHelp {
  /** `BOX_ID`. */
  readonly name: string
  /** `BOX_ID`, `[NAME]`, `HOST...`. */
  readonly usage: string
  readonly description: string
  readonly defaultValue: Option.Option<string>
  readonly required: boolean
  readonly repeatable: boolean
}

/**
 * Everything the help of one command shows.
 *
 * @since 0.1.0
 * @category Models
 */
export interface CommandHelp {
  /** `["boxkit", "boxes", "create"]`. */
  readonly path: ReadonlyArray<string>
  /** The description's paragraphs, without the examples. */
  readonly description: ReadonlyArray<string>
  readonly examples: ReadonlyArray<string>
  readonly options: ReadonlyArray<OptionHelp>
  readonly arguments: ReadonlyArray<ArgumentHelp>
  /** The subcommands and the first sentence of each one's description. */
  readonly subcommands: ReadonlyArray<{ readonly name: string; readonly summary: string }>
}

/** What the wrappers around a Single option or argument say about it. */
interface Modifiers {
  readonly optional: boolean
  readonly repeatable: boolean
  readonly requiredRepeats: boolean
  readonly defaultValue: Option.Option<string>
}

const plain: Modifiers = { optional: false, repeatable: false, requiredRepeats: false, defaultValue: Option.none() }

/** A default value as text: primitives only (an `Option.none()` of `Options.optional`, a `Redacted`: nothing). */
const defaultText = (fallback: unknown): Option.Option<string> =>
  Option.isOption(fallback) || Redacted.isRedacted(fallback)
    ? Option.none()
    : Predicate.isString(fallback) || Predicate.isNumber(fallback) || Predicate.isBigInt(fallback)
    ? Option.some(String(fallback))
    : Option.none()

/** A Single's placeholder: its pseudo name, the choices of a choice, else its name in upper case. */
const placeholderOf = (single: ParameterNode, name: string): string => {
  const pseudo = single.pseudoName ?? Option.none()
  if (Option.isSome(pseudo)) return pseudo.value
  if (single.primitiveType?._tag === "Choice" && single.primitiveType.alternatives !== undefined) {
    return single.primitiveType.alternatives.map(([choice]) => choice).join("|")
  }
  return name.replace(/^-+/, "").replace(/-/g, "_").toUpperCase()
}

/** `text` in brackets when optional, with `...` when repeatable. */
const decorate = (text: string, modifiers: Modifiers, required: boolean): string =>
  `${required ? text : `[${text}]`}${modifiers.repeatable ? "..." : ""}`

/** The Single options under `node`, each with the modifiers of the wrappers above it. */
const collectOptions = (node: ParameterNode | undefined, modifiers: Modifiers): ReadonlyArray<OptionHelp> => {
  if (node === undefined) return []
  switch (node._tag) {
    case "Single": {
      const isFlag = node.primitiveType?._tag === "Bool"
      const fullName = node.fullName ?? `--${String(node.name)}`
      const aliases = (node.aliases ?? []).map((alias) => (alias.length === 1 ? `-${alias}` : `--${alias}`))
      const value = isFlag ? "" : ` ${placeholderOf(node, fullName)}`
      const required = !isFlag && !modifiers.optional && !(modifiers.repeatable && !modifiers.requiredRepeats)
      return [{
        flags: [...aliases, fullName].join(", ") + value,
        usage: decorate(`${fullName}${value}`, modifiers, required),
        description: paragraphs(node.description).join(" "),
        defaultValue: isFlag ? Option.none() : modifiers.defaultValue,
        required,
        repeatable: modifiers.repeatable
      }]
    }
    case "Map":
      return collectOptions(node.options, modifiers)
    case "Both":
    case "OrElse":
      return [...collectOptions(node.left, modifiers), ...collectOptions(node.right, modifiers)]
    case "WithDefault":
      return collectOptions(node.options, {
        ...modifiers,
        optional: true,
        defaultValue: Option.orElse(modifiers.defaultValue, () => defaultText(node.fallback))
      })
    case "WithFallback":
      return collectOptions(node.options, { ...modifiers, optional: true })
    case "Variadic":
    case "KeyValueMap":
      return collectOptions(node.argumentOption, {
        ...modifiers,
        repeatable: true,
        requiredRepeats: Option.getOrElse(node.min ?? Option.none(), () => 0) > 0
      })
    default:
      return []
  }
}

/** The Single arguments under `node`, each with the modifiers of the wrappers above it. */
const collectArguments = (node: ParameterNode | undefined, modifiers: Modifiers): ReadonlyArray<ArgumentHelp> => {
  if (node === undefined) return []
  switch (node._tag) {
    case "Single": {
      const name = Option.getOrElse(node.pseudoName ?? Option.none(), () => String(node.name).replace(/^<|>$/g, ""))
      const required = !modifiers.optional && !(modifiers.repeatable && !modifiers.requiredRepeats)
      return [{
        name,
        usage: decorate(name, modifiers, required),
        description: paragraphs(node.description).join(" "),
        defaultValue: modifiers.defaultValue,
        required,
        repeatable: modifiers.repeatable
      }]
    }
    case "Map":
      return collectArguments(node.args, modifiers)
    case "Both":
      return [...collectArguments(node.left, modifiers), ...collectArguments(node.right, modifiers)]
    case "WithDefault":
      return collectArguments(node.args, {
        ...modifiers,
        optional: true,
        defaultValue: Option.orElse(modifiers.defaultValue, () => defaultText(node.fallback))
      })
    case "WithFallbackConfig":
      return collectArguments(node.args, { ...modifiers, optional: true })
    case "Variadic":
      return collectArguments(node.args, {
        ...modifiers,
        repeatable: true,
        requiredRepeats: Option.getOrElse(node.min ?? Option.none(), () => 0) > 0
      })
    default:
      return []
  }
}

/** The first sentence of a description (the summary a list of commands shows). */
const firstSentence = (text: string): string => {
  const match = /^(.*?[.!?])(\s|$)/.exec(text)
  return match === null ? text : match[1]
}

/**
 * The help of the command `node`, reached by `path` (`["boxkit", "boxes", "create"]`).
 *
 * @since 0.1.0
 * @category Help
 */
export const describe = (node: Descriptor, path: ReadonlyArray<string>): CommandHelp => {
  const leaf = leafOf(node)
  const texts = paragraphs(leaf.description)
  const options = leaf._tag === "Standard" ? collectOptions(leaf.options as ParameterNode, plain) : []
  const args = leaf._tag === "Standard" ? collectArguments(leaf.args as ParameterNode, plain) : []
  return {
    path,
    description: texts.filter((text) => !text.startsWith(examplePrefix)),
    examples: texts.filter((text) => text.startsWith(examplePrefix)).map((text) => text.slice(examplePrefix.length)),
    options,
    arguments: args,
    subcommands: childrenOf(node).map((child) => ({
      name: nameOf(child),
      summary: firstSentence(paragraphs(leafOf(child).description).filter((text) => !text.startsWith(examplePrefix))[0] ?? "")
    }))
  }
}

/**
 * How help is laid out: at most `width` columns, bold headings when `colour`.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Layout {
  readonly width: number
  readonly colour: boolean
}

/** A word longer than `width` in pieces of at most `width`, cut after a `,` or `/` where one is near the end. */
const pieces = (word: string, width: number): ReadonlyArray<string> => {
  if (word.length <= width) return [word]
  const head = word.slice(0, width)
  const cut = Math.max(head.lastIndexOf(","), head.lastIndexOf("/")) + 1
  const at = cut > width / 2 ? cut : width
  return [word.slice(0, at), ...pieces(word.slice(at), width)]
}

/**
 * The words of `text` in lines of at most `width` columns; a longer word (a URL) is cut into lines of its own.
 *
 * @since 0.1.0
 * @category Help
 */
export const wrap = (text: string, width: number): ReadonlyArray<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).flatMap((word) => (word === "" ? [] : pieces(word, width)))) {
    if (line === "") line = word
    else if (line.length + 1 + word.length <= width) line += ` ${word}`
    else {
      lines.push(line)
      line = word
    }
  }
  return line === "" ? lines : [...lines, line]
}

/** The widest first column of a two-column list; a longer term puts its description on the next line. */
const termColumn = 30

/** Rows of `term  description`, indented by 2, descriptions wrapped in their column. */
const twoColumns = (rows: ReadonlyArray<readonly [string, string]>, width: number): ReadonlyArray<string> => {
  const column = Math.min(termColumn, Math.max(0, ...rows.map(([term]) => term.length)))
  const start = 2 + column + 2
  return rows.flatMap(([term, description]) => {
    const text = wrap(description, Math.max(20, width - start))
    const rest = text.slice(1).map((line) => " ".repeat(start) + line)
    if (text.length === 0) return [`  ${term}`]
    if (term.length > column) return [`  ${term}`, " ".repeat(start) + text[0], ...rest]
    return [`  ${term.padEnd(column)}  ${text[0]}`, ...rest]
  })
}

/** The usage line: `Usage: boxkit serve [--host HOST] …`, its tokens wrapped under the first one after the path. */
const usageLines = (help: CommandHelp, width: number, heading: string): ReadonlyArray<string> => {
  const command = help.path.join(" ")
  const tokens = [
    ...(help.subcommands.length > 0 ? ["COMMAND"] : []),
    ...help.options.map((option) => option.usage),
    ...help.arguments.map((argument) => argument.usage)
  ]
  const first = `${heading} ${command}`
  const indent = `Usage: ${command} `.length <= 40 ? `Usage: ${command} `.length : 4
  const lines: Array<string> = []
  let line = first
  for (const token of tokens) {
    if (line.length + 1 + token.length <= width || line === first || line.trim() === "") line += ` ${token}`
    else {
      lines.push(line)
      line = " ".repeat(indent - 1) + ` ${token}`
    }
  }
  return [...lines, line]
}

/** What the help of every command lists after its own options. */
const helpOption = ["-h, --help", "Show this help."] as const

/** The options of `boxkit` itself (@effect/cli's built-ins and `--verbose`), shown in its own help. */
const globalOptions: ReadonlyArray<readonly [string, string]> = [
  helpOption,
  ["--version", "Print the version of boxkit."],
  ["--verbose", "On a failure, also print its cause and stack (or set BOXKIT_DEBUG=1). Works with every command."],
  ["--completions sh|bash|fish|zsh", "Print a completion script for the shell."],
  ["--log-level LEVEL", "Lowest level of log lines printed: all, trace, debug, info, warning, error, fatal or none."]
]

/** An option's description with what it takes: required, repeatable, its default. */
const optionText = (option: OptionHelp | ArgumentHelp): string =>
  [
    option.description,
    ...(option.required && !option.repeatable ? [] : option.repeatable ? ["Repeatable."] : []),
    ...Option.match(option.defaultValue, { onNone: () => [], onSome: (value) => [`Default: ${value}.`] })
  ].filter((part) => part !== "").join(" ")

/**
 * The help of a command as text (no final newline): its usage, description, arguments, options, subcommands and
 * examples, in at most `layout.width` columns.
 *
 * @since 0.1.0
 * @category Help
 */
export const render = (help: CommandHelp, layout: Layout): string => {
  const heading = (text: string) => layout.colour ? `\u001b[1m${text}\u001b[22m` : text
  const isRoot = help.path.length === 1
  const sections: Array<ReadonlyArray<string>> = [
    usageLines(help, layout.width, heading("Usage:")),
    help.description.flatMap((text) => wrap(text, layout.width))
  ]
  if (help.arguments.length > 0) {
    sections.push([
      heading("Arguments:"),
      ...twoColumns(help.arguments.map((argument) => [argument.name, optionText(argument)] as const), layout.width)
    ])
  }
  if (help.subcommands.length > 0) {
    sections.push([
      heading("Commands:"),
      ...twoColumns(help.subcommands.map(({ name, summary }) => [name, summary] as const), layout.width)
    ])
  }
  const optionRows = [
    ...help.options.map((option) => [option.flags, optionText(option)] as const),
    ...(isRoot ? globalOptions : [helpOption])
  ]
  sections.push([heading("Options:"), ...twoColumns(optionRows, layout.width)])
  if (help.examples.length > 0) {
    sections.push([heading(help.examples.length === 1 ? "Example:" : "Examples:"), ...help.examples.map((example) => `  ${example}`)])
  }
  if (help.subcommands.length > 0) {
    sections.push(wrap(`Run "${help.path.join(" ")} COMMAND --help" for the usage of a command.`, layout.width))
  }
  return sections.filter((lines) => lines.length > 0).map((lines) => lines.join("\n")).join("\n\n")
}
