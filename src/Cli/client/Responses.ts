/**
 * `boxkit responses create --model M [--background] [--stream] PROMPT` and `boxkit responses get ID`. In the
 * foreground the answer is printed when finished; `--stream` prints the text as it arrives (with `--json`: only the
 * finished response); `--background` prints the accepted response (status `queued`), to read later with `get`.
 * For a person: the response's main fields, then its output text.
 *
 * Source: spec "POST {api_url}/responses", "GET {api_url}/responses/{response_id}".
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option, Stream } from "effect"
import { type ModelResponse as Response, ModelResponse, outputText } from "../../Domain/ModelResponse.js"
import { ClientCommandError, clientOptions, help, type Toolkit, withClient } from "./ClientOptions.js"
import { type Mode, printResource } from "./Output.js"

/** The fields a person sees of a response (the output itself is printed as text after them). */
const summary = (wire: typeof ModelResponse.Encoded) => ({
  id: wire.id,
  status: wire.status,
  model: wire.model,
  created_at: wire.created_at,
  background: wire.background,
  incomplete_details: wire.incomplete_details,
  error: wire.error,
  usage: wire.usage === undefined || wire.usage === null
    ? wire.usage
    : `${wire.usage.input_tokens} tokens in, ${wire.usage.output_tokens} out`
})

const print = (response: Response, mode: Mode) => {
  const text = outputText(response)
  return printResource(ModelResponse, response, mode, {
    forPerson: summary,
    after: text === "" ? [] : ["", text]
  })
}

/** Streams a response: the text printed as it arrives (for a person), the finished response returned. */
const streamed = (toolkit: Toolkit, request: { readonly model: string; readonly input: string }, mode: Mode) =>
  Effect.gen(function*() {
    const responses = yield* toolkit.Responses
    const last = yield* responses.stream(request).pipe(
      Stream.tap((event) =>
        !mode.json && event.type === "response.output_text.delta" && typeof event.delta === "string"
          ? Effect.sync(() => process.stdout.write(event.delta as string))
          : Effect.void
      ),
      Stream.filterMap(toolkit.responseOf),
      Stream.runLast
    )
    if (!mode.json) yield* Console.log("")
    return last
  })

const create = Command.make("create", {
  ...clientOptions,
  model: Options.text("model").pipe(Options.withPseudoName("MODEL"), Options.withDescription("The model, e.g. boxkit-local.")),
  background: Options.boolean("background").pipe(
    Options.withDescription("Answer at once with the accepted response (queued); read it later with responses get.")
  ),
  stream: Options.boolean("stream").pipe(Options.withDescription("Print the text as it arrives.")),
  prompt: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("The input text."))
}, (options) =>
  withClient(
    options,
    (toolkit) => Effect.gen(function*() {
      const request = { model: options.model, input: options.prompt }
      if (options.background && options.stream) {
        return yield* Effect.fail(new ClientCommandError({
          message: "--background and --stream cannot go together (a background response is not streamed)",
          usage: true
        }))
      }
      const responses = yield* toolkit.Responses
      if (options.stream) {
        const finished = yield* streamed(toolkit, request, options)
        if (options.json && Option.isSome(finished)) yield* printResource(ModelResponse, finished.value, options)
        return
      }
      const answer = options.background ? yield* responses.submit(request) : yield* responses.create(request)
      yield* print(answer.value, options)
    })
  )).pipe(
    Command.withDescription(help(
      "Ask the model; --stream prints the text as it arrives, --background answers at once (queued).",
      "boxkit responses create --model boxkit-local --stream \"Say hello.\""
    ))
  )

const get = Command.make("get", {
  ...clientOptions,
  responseId: Args.text({ name: "RESPONSE_ID" }).pipe(Args.withDescription("The response (resp_…)."))
}, (options) =>
  withClient(options, ({ Responses }) => Effect.flatMap(Responses, (responses) => responses.retrieve(options.responseId))).pipe(
    Effect.flatMap((response) => print(response, options))
  )).pipe(Command.withDescription(help("Show a model response and its output.", "boxkit responses get resp_0123…")))

/** The `responses` command and its subcommands. */
export const command = Command.make("responses").pipe(
  Command.withDescription(help(
    "Model responses: ask, stream, or read one back.",
    "boxkit responses create --model boxkit-local \"Say hello.\""
  )),
  Command.withSubcommands([create, get])
)
