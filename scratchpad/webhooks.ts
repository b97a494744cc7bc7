/**
 * The README's completion webhooks (README "Completion webhooks"), against the sources: a background response whose
 * completion the service posts to a receiver of this process. With `boxkit serve --port 8787` running:
 * `BOX_API_KEY=sk_acme_org BOX_BASE_URL=http://127.0.0.1:8787/v1 npx tsx scratchpad/webhooks.ts` logs the response
 * "completed". Type-checked by `npm test`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Option, Redacted, Stream } from "effect"
import { Boxkit, Responses, WebhookReceiver } from "../src/index.js"

const token = Redacted.make(crypto.randomUUID())

const program = Effect.gen(function*() {
  const { url, completions } = yield* WebhookReceiver.stream({ token, port: 0 })
  const responses = yield* Responses
  const submitted = yield* responses.submit(
    { model: "boxkit-local", input: "Summarize the logs." },
    { completionWebhook: { url, token } }
  )
  yield* Effect.log(`submitted ${submitted.value.id}; the answer comes to ${url}`)
  const finished = yield* completions.pipe(Stream.take(1), Stream.runHead)
  if (Option.isSome(finished)) yield* Effect.log(`response ${finished.value.id} ${finished.value.status}`)
}).pipe(Effect.scoped, Effect.provide(Boxkit.layerConfig()))

NodeRuntime.runMain(program)
