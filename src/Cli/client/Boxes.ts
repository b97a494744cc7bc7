/**
 * `boxkit boxes …`: `create` (idempotent: one key for every retry, `--idempotency-key` to choose it; `--wait` polls
 * until the box runs, with a live spinner of its status on a terminal), `get`, and the lifecycle operations the
 * service serves: `upgrade` (idempotent), `pause`, `resume`, `sleep`, `terminate`.
 *
 * Source: spec "Create a box", "POST {base_url}/boxes/{box_id}/upgrade", "States and transitions"; lifecycle paths:
 * docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, type Schema } from "effect"
import type { Idempotent } from "../../Client/IdempotencyKey.js"
import * as Box from "../../Domain/Box.js"
import { type AppId, BoxId } from "../../Domain/Ids.js"
import { ClientCommandError, clientOptions, help, withClient } from "./ClientOptions.js"
import { type Mode, printResource } from "./Output.js"
import { spinning } from "./Spinner.js"

/** The `BOX_ID` argument (`sb_…`), checked before any request. */
export const boxIdArgument = Args.text({ name: "BOX_ID" }).pipe(Args.withSchema(BoxId), Args.withDescription("The box (sb_…)."))

const idempotencyKey = Options.text("idempotency-key").pipe(
  Options.optional,
  Options.withPseudoName("KEY"),
  Options.withDescription("Idempotency-Key of the request (without it: a new key, the same for every retry).")
)

/** `8080`, `8080/http` or `5432/tcp` as an `ingress_ports` item. */
export const parsePort = (text: string): Effect.Effect<Box.IngressPort, ClientCommandError> => {
  const match = /^(\d{1,5})(?:\/(http|tcp))?$/.exec(text.trim())
  if (match === null) {
    return Effect.fail(new ClientCommandError({
      message: `--port ${text}: expected PORT or PORT/http or PORT/tcp, e.g. 8080/http`,
      usage: true
    }))
  }
  return Effect.succeed({ guest_port: Number(match[1]), protocol: (match[2] ?? "http") as "http" | "tcp" })
}

/** A box for a person: each listener as `PORT/PROTOCOL ADDRESS`. */
const boxForPerson = (wire: typeof Box.Box.Encoded) => ({
  ...wire,
  listeners: wire.listeners.map((listener) => `${listener.guest_port}/${listener.protocol} ${listener.address}`)
})

/** Prints a box record. */
const printBox = (box: Box.Box, mode: Mode, after?: ReadonlyArray<string>) =>
  printResource(Box.Box, box, mode, { forPerson: boxForPerson, ...(after !== undefined ? { after } : {}) })

/** What a person sees after an idempotent operation: the key used, and whether the answer was a replay. */
const keyLine = (answer: Idempotent<unknown>) =>
  `idempotency key: ${answer.idempotencyKey}${answer.replayed ? " (replayed: the first answer)" : ""}`

/** Prints the answer of an idempotent operation; for a person, the key used and whether the answer was a replay. */
const printIdempotent = <A, I>(schema: Schema.Schema<A, I>, answer: Idempotent<A>, mode: Mode) =>
  printResource(schema, answer.value, mode, { after: [keyLine(answer)] })

const create = Command.make("create", {
  ...clientOptions,
  name: Options.text("name").pipe(Options.withDescription("The box's name.")),
  app: Options.text("app").pipe(
    Options.withPseudoName("APP_ID"),
    Options.withDescription("The app it belongs to (app_…; see boxkit apps find).")
  ),
  imageBase: Options.text("image-base").pipe(
    Options.withDefault("debian"),
    Options.withPseudoName("IMAGE"),
    Options.withDescription("Base image.")
  ),
  size: Options.choice("size", ["s", "m", "l"]).pipe(
    Options.optional,
    Options.withDescription("Size; without it the service's default, m.")
  ),
  port: Options.text("port").pipe(
    Options.repeated,
    Options.withPseudoName("PORT"),
    Options.withDescription("A guest port to publish, PORT or PORT/http or PORT/tcp, e.g. 8080/http.")
  ),
  idempotencyKey,
  wait: Options.boolean("wait").pipe(Options.withDescription("Wait until the box is running, then print it."))
}, (options) =>
  withClient(
    options,
    ({ Boxes }) => Effect.gen(function*() {
      const boxes = yield* Boxes
      const ports = yield* Effect.forEach(options.port, parsePort)
      const request: Box.CreateBoxRequest = {
        name: options.name,
        // Any text: `boxes.create` checks the request (app_id non-blank) before any I/O and names the field.
        app_id: options.app as AppId,
        image: { base: options.imageBase },
        ...(Option.isSome(options.size) ? { size: options.size.value } : {}),
        ...(ports.length > 0 ? { ingress_ports: ports } : {})
      }
      const created = yield* boxes.create(request, Option.match(options.idempotencyKey, {
        onNone: () => ({}),
        onSome: (key) => ({ idempotencyKey: key })
      }))
      if (!options.wait) return yield* printIdempotent(Box.CreateBoxResponse, created, options)
      const box = yield* spinning(
        `${created.value.box_id} ${created.value.status}`,
        (show) => boxes.awaitStatus(created.value.box_id, "running", { onRead: (read) => show(`${read.box_id} ${read.status}`) })
      )
      yield* printBox(box, options, [keyLine(created)])
    })
  )).pipe(
    Command.withDescription(help(
      "Create a box (--wait: until it is running).",
      "boxkit boxes create --name web --app app_0123… --size s --port 8080/http --wait"
    ))
  )

const get = Command.make("get", { ...clientOptions, boxId: boxIdArgument }, (options) =>
  withClient(options, ({ Boxes }) => Effect.flatMap(Boxes, (boxes) => boxes.retrieve(options.boxId))).pipe(
    Effect.flatMap((box) => printBox(box, options))
  )).pipe(Command.withDescription(help("Show a box.", "boxkit boxes get sb_0123…")))

const upgrade = Command.make("upgrade", { ...clientOptions, boxId: boxIdArgument, idempotencyKey }, (options) =>
  withClient(
    options,
    ({ Boxes }) => Effect.flatMap(Boxes, (boxes) =>
      boxes.upgrade(options.boxId, Option.match(options.idempotencyKey, {
        onNone: () => ({}),
        onSome: (key) => ({ idempotencyKey: key })
      })))
  ).pipe(Effect.flatMap((answer) => printIdempotent(Box.UpgradeResult, answer, options)))).pipe(
    Command.withDescription(help(
      "Move a box onto the current runtime (applied later when it is asleep).",
      "boxkit boxes upgrade sb_0123…"
    ))
  )

/** A lifecycle command answered with the box record. */
const lifecycle = (name: "pause" | "resume" | "sleep" | "terminate", summary: string) =>
  Command.make(name, { ...clientOptions, boxId: boxIdArgument }, (options) =>
    withClient(options, ({ Boxes }) => Effect.flatMap(Boxes, (boxes) => boxes[name](options.boxId))).pipe(
      Effect.flatMap((box) => printBox(box, options))
    )).pipe(Command.withDescription(help(summary, `boxkit boxes ${name} sb_0123…`)))

/** The `boxes` command and its subcommands. */
export const command = Command.make("boxes").pipe(
  Command.withDescription(help(
    "Boxes: create, show, and move through their lifecycle.",
    "boxkit boxes create --name web --app app_0123… --wait"
  )),
  Command.withSubcommands([
    create,
    get,
    upgrade,
    lifecycle("pause", "Pause a running box."),
    lifecycle("resume", "Resume a paused or sleeping box."),
    lifecycle("sleep", "Put a running box to sleep."),
    lifecycle("terminate", "Terminate a box.")
  ])
)
