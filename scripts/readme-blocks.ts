/**
 * The README's code blocks, each with how it is checked. Every fenced block of README.md is preceded by a marker
 * comment on the line before its fence:
 *
 *     <!-- readme-block check=run file=quickstart.mjs expect="is running" -->
 *
 * - `check=install`: npm install lines, run one after the other in a fresh project (the package's name replaced by
 *   the packed tarball);
 * - `check=shell`: commands a user types, run with bash in that project (exit status 0, output containing `expect`);
 * - `check=run`: a program (`file` ending `.ts`, `.mts` or `.mjs`), type-checked when TypeScript, then run to its end
 *   (exit status 0, output containing `expect`);
 * - `check=signal`: a daemon, run until its output contains `until`, then sent SIGTERM: it must exit 0, and every box
 *   id it printed must be terminated;
 * - `check=vitest`: a test file, type-checked and run by vitest;
 * - `check=typecheck`: a TypeScript module, type-checked only;
 * - `check=seed`: a seed file, served by `boxkit serve --seed`;
 * - `check=serve`: a service and commands that use it, as two terminals would run them: the first line is
 *   `npx boxkit serve ... --port PORT`, started on a free port instead of PORT (the README's 8787 may be taken where the
 *   check runs) until it says where it listens; the other lines run with bash, the README's address of the service
 *   (`http://127.0.0.1:PORT`) replaced by the one it printed (exit status 0, output containing `expect`); then the
 *   service is sent SIGTERM and must exit 0 ({@link serveBlock});
 * - `check=output` or `check=illustration`: not checked (a terminal transcript, a command's synopsis): said
 *   explicitly, so that no block is left unchecked by accident.
 *
 * `npx tsx scripts/readme-blocks.ts [README.md] [directory]` lists the blocks, writes those with a `file` into the
 * directory when one is given, and exits 1 when a block has no marker or a marker is malformed.
 * test/package/Consumer.test.ts checks every block this way against the packed package.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

/** How a block is checked. */
export const checks = ["install", "shell", "run", "signal", "vitest", "typecheck", "seed", "serve", "output", "illustration"] as const

/** How a block is checked (see the module's documentation). */
export type Check = (typeof checks)[number]

/** One fenced block of the README with its marker. */
export interface ReadmeBlock {
  /** The line of the opening fence (1-based). */
  readonly line: number
  /** The fence's info string (`ts`, `sh`, `console`, ...). */
  readonly language: string
  /** The block's text, with a final newline. */
  readonly code: string
  readonly check: Check
  /** The file the block is saved as (required for run, signal, vitest, typecheck and seed). */
  readonly file: string | undefined
  /** Text the block's output must contain (run, shell, serve). */
  readonly expect: string | undefined
  /** Text of the daemon's output after which it is sent SIGTERM (signal). */
  readonly until: string | undefined
}

/** The blocks of a README, and what is wrong with its markers (empty when every block is marked well). */
export interface ParsedReadme {
  readonly blocks: ReadonlyArray<ReadmeBlock>
  readonly problems: ReadonlyArray<string>
}

const markerPattern = /^<!--\s*readme-block\s+(.*?)\s*-->$/
const attributePattern = /(\w+)=(?:"([^"]*)"|'([^']*)'|(\S+))/g
const needsFile: ReadonlyArray<Check> = ["run", "signal", "vitest", "typecheck", "seed"]
/** The first line of a `check=serve` block: `npx boxkit serve`, its arguments, one of them `--port PORT`. */
const serveCommand = /^npx boxkit (serve(?:\s+\S+)*?\s+--port\s+(\d+)(?:\s+\S+)*)\s*$/

/** The `key=value` attributes of a marker (values may be quoted: `"..."`, or `'...'` for a value with `"` in it). */
const attributesOf = (text: string): Map<string, string> => {
  const attributes = new Map<string, string>()
  for (const match of text.matchAll(attributePattern)) attributes.set(match[1]!, match[2] ?? match[3] ?? match[4] ?? "")
  return attributes
}

/** The block a marker describes, or what is wrong with the marker. */
const blockOf = (
  marker: string | undefined,
  fence: { readonly line: number; readonly language: string; readonly code: string }
): ReadmeBlock | string => {
  const matched = marker === undefined ? null : markerPattern.exec(marker.trim())
  if (matched === null) {
    return `line ${fence.line}: the \`${fence.language}\` block has no "<!-- readme-block check=... -->" marker on the line before it`
  }
  const attributes = attributesOf(matched[1]!)
  const check = attributes.get("check")
  if (check === undefined || !(checks as ReadonlyArray<string>).includes(check)) {
    return `line ${fence.line}: check=${check ?? "(missing)"} is not one of ${checks.join(", ")}`
  }
  const file = attributes.get("file")
  if (needsFile.includes(check as Check) && file === undefined) return `line ${fence.line}: check=${check} needs file=NAME`
  if (check === "signal" && attributes.get("until") === undefined) return `line ${fence.line}: check=signal needs until="TEXT"`
  if (check === "serve" && serveCommand.exec(fence.code.split("\n")[0]!) === null) {
    return `line ${fence.line}: check=serve needs "npx boxkit serve ... --port PORT" on the block's first line`
  }
  for (const key of attributes.keys()) {
    if (!["check", "file", "expect", "until"].includes(key)) return `line ${fence.line}: unknown attribute ${key}`
  }
  return {
    ...fence,
    check: check as Check,
    file,
    expect: attributes.get("expect"),
    until: attributes.get("until")
  }
}

/**
 * The fenced blocks of `markdown` (fences of three or more backticks at the start of a line) with their markers.
 * Two blocks saved as the same file are a problem too.
 */
export const parse = (markdown: string): ParsedReadme => {
  const lines = markdown.split("\n")
  const blocks: Array<ReadmeBlock> = []
  const problems: Array<string> = []
  for (let index = 0; index < lines.length; index++) {
    const opening = /^(`{3,})(.*)$/.exec(lines[index]!)
    if (opening === null) continue
    const closing = lines.findIndex((line, at) => at > index && /^`{3,}\s*$/.test(line) && line.trim().length >= opening[1]!.length)
    const end = closing === -1 ? lines.length : closing
    const fence = { line: index + 1, language: opening[2]!.trim(), code: lines.slice(index + 1, end).join("\n") + "\n" }
    const block = blockOf(index > 0 ? lines[index - 1] : undefined, fence)
    if (typeof block === "string") problems.push(block)
    else blocks.push(block)
    if (closing === -1) problems.push(`line ${fence.line}: the block is never closed`)
    index = end
  }
  const files = blocks.flatMap((block) => block.file === undefined ? [] : [block.file])
  for (const file of new Set(files)) {
    if (files.filter((other) => other === file).length > 1) problems.push(`file=${file} names more than one block`)
  }
  return { blocks, problems }
}

/**
 * The relative targets of the Markdown links and images of `markdown` (`[text](target)`, `![alt](target)`), without
 * their `#fragment`; absolute URLs, `mailto:` and in-page anchors are left out. Fenced blocks are not searched.
 */
export const relativeLinks = (markdown: string): ReadonlyArray<string> => {
  const prose = markdown.replace(/^(`{3,})[^\n]*\n[\s\S]*?^\1\s*$/gm, "")
  const targets: Array<string> = []
  for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1]!
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#") || target.startsWith("//")) continue
    targets.push(target.replace(/#.*$/, ""))
  }
  return targets
}

/**
 * The files of the package that the prose of `markdown` names in backticks: a path under `docs/`, `src/`, `dist/`,
 * `bin/`, `test/`, `scripts/` or `bench/`, or a Markdown file (`CONTRIBUTING.md`). A reader of the installed package
 * should find each of them in it. Fenced blocks are not searched.
 */
export const mentionedFiles = (markdown: string): ReadonlyArray<string> => {
  const prose = markdown.replace(/^(`{3,})[^\n]*\n[\s\S]*?^\1\s*$/gm, "")
  const files: Array<string> = []
  for (const match of prose.matchAll(/`([^`\s]+)`/g)) {
    const text = match[1]!
    if (/^(?:docs|src|dist|bin|test|scripts|bench)\/[\w./-]*$/.test(text) || /^[\w./-]+\.md$/.test(text)) files.push(text)
  }
  return files
}

/** A `check=serve` block as it is run ({@link serveBlock}). */
export interface ServeBlock {
  /** The arguments of the installed `boxkit` command (the words after `npx boxkit`), with `--port 0`. */
  readonly serveArgs: ReadonlyArray<string>
  /** The block's other lines, for bash, with `origin` (`http://HOST:PORT`, no path) as the service's address. */
  readonly commands: (origin: string) => string
}

/**
 * A `check=serve` block as it is run: its first line `npx boxkit serve ... --port PORT` as the arguments of the
 * installed command with port 0 (a free one), and its other lines with `http://127.0.0.1:PORT` replaced by the address
 * the service printed. Throws when the block is not a well-formed serve block ({@link parse} reports it first).
 */
export const serveBlock = (block: ReadmeBlock): ServeBlock => {
  const [first = "", ...rest] = block.code.split("\n")
  const matched = serveCommand.exec(first)
  if (block.check !== "serve" || matched === null) throw new Error(`line ${block.line}: not a check=serve block`)
  const words = matched[1]!.split(/\s+/)
  const portAt = words.indexOf("--port") + 1
  const serveArgs = words.map((word, at) => at === portAt ? "0" : word)
  const readmeOrigin = `http://127.0.0.1:${matched[2]}`
  return { serveArgs, commands: (origin) => rest.join("\n").replaceAll(readmeOrigin, origin) }
}

/** Writes every block that names a file into `directory`; returns their paths. */
export const writeBlocks = (blocks: ReadonlyArray<ReadmeBlock>, directory: string): ReadonlyArray<string> => {
  mkdirSync(directory, { recursive: true })
  return blocks.flatMap((block) => {
    if (block.file === undefined) return []
    const path = join(directory, block.file)
    writeFileSync(path, block.code)
    return [path]
  })
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const readme = process.argv[2] ?? "README.md"
  const { blocks, problems } = parse(readFileSync(readme, "utf8"))
  for (const block of blocks) {
    console.log(`line ${block.line}\t${block.check}\t${block.language || "-"}\t${block.file ?? ""}`)
  }
  if (process.argv[3] !== undefined) writeBlocks(blocks, process.argv[3])
  for (const problem of problems) console.error(`${readme}: ${problem}`)
  if (problems.length > 0) process.exit(1)
}
