/**
 * `boxkit clipboard put BOX_ID (--text TEXT | --file PATH)`: places text, or a file's bytes with the media type its
 * content shows (MediaType.ts), on a box's clipboard.
 *
 * Source: spec "PUT {base_url}/boxes/{box_id}/clipboard".
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Console, Effect, Option } from "effect"
import { EmptyObject } from "../../Domain/Box.js"
import { boxIdArgument } from "./Boxes.js"
import { ClientCommandError, clientOptions, help, withClient } from "./ClientOptions.js"
import * as MediaType from "./MediaType.js"
import { printResource } from "./Output.js"

/** The bytes to put and their media type: `--text` as UTF-8 text, or `--file` with the type its content shows. */
const content = (text: Option.Option<string>, file: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isSome(text) === Option.isSome(file)) {
      return yield* Effect.fail(new ClientCommandError({
        message: "give either --text TEXT or --file PATH",
        fix: "run \"boxkit clipboard put --help\" for the usage",
        usage: true
      }))
    }
    if (Option.isSome(text)) return { bytes: new TextEncoder().encode(text.value), mediaType: "text/plain; charset=utf-8" }
    const path = Option.getOrThrow(file)
    const fs = yield* FileSystem.FileSystem
    const bytes = yield* fs.readFile(path).pipe(
      Effect.mapError((error) => new ClientCommandError({ message: `cannot read ${path}: ${error.message}`, usage: false }))
    )
    const mediaType = yield* Option.match(MediaType.sniff(bytes), {
      onNone: () =>
        Effect.fail(new ClientCommandError({
          message: `${path} is neither UTF-8 text nor a PNG, JPEG, GIF or WebP image`,
          fix: "the clipboard takes text/plain or image/* only",
          usage: false
        })),
      onSome: Effect.succeed
    })
    return { bytes, mediaType }
  })

const put = Command.make("put", {
  ...clientOptions,
  boxId: boxIdArgument,
  text: Options.text("text").pipe(Options.optional, Options.withDescription("Text to put (UTF-8); or --file.")),
  file: Options.file("file", { exists: "yes" }).pipe(
    Options.optional,
    Options.withPseudoName("PATH"),
    Options.withDescription("A file to put: text or a PNG, JPEG, GIF or WebP image (the type from its content).")
  )
}, (options) =>
  Effect.gen(function*() {
    const { bytes, mediaType } = yield* content(options.text, options.file)
    const answer = yield* withClient(
      options,
      ({ Clipboard }) => Effect.flatMap(Clipboard, (clipboard) => clipboard.write(options.boxId, bytes, mediaType))
    )
    if (options.json) return yield* printResource(EmptyObject, answer, options)
    yield* Console.log(`put ${bytes.byteLength} bytes of ${mediaType} on the clipboard of ${options.boxId}`)
  })).pipe(
    Command.withDescription(help(
      "Put text or a file (text or an image) on a box's clipboard.",
      "boxkit clipboard put sb_0123… --file screenshot.png"
    ))
  )

/** The `clipboard` command and its subcommands. */
export const command = Command.make("clipboard").pipe(
  Command.withDescription(help(
    "Clipboard: put text or an image on a box's clipboard.",
    "boxkit clipboard put sb_0123… --text \"hello\""
  )),
  Command.withSubcommands([put])
)
