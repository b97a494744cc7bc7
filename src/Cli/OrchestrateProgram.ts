/**
 * The program of `boxkit orchestrate` (Orchestrate.ts): wires the client, a workflow runner (SQLite or PostgreSQL),
 * the completion-webhook receiver and the box workflow, runs src/Workflow/Orchestration.ts and prints its progress.
 *
 * The webhook token is derived from the API key (HMAC-SHA256), so that it is the same on every restart: a submit
 * replayed after a crash sends the same body, and redelivered webhooks of an earlier run are accepted. The token is
 * `Redacted` and never printed.
 *
 * Source: docs/ASSUMPTIONS.md "Durable orchestration"; docs/decisions/0004-durable-orchestration.md.
 *
 * @since 0.1.0
 */
import { Console, Data, Effect, Layer, Option, Redacted } from "effect"
import { createHmac } from "node:crypto"
import * as Boxkit from "../Client/Boxkit.js"
import * as SqlDriver from "../Sql/SqlDriver.js"
import * as WebhookReceiver from "../Client/WebhookReceiver.js"
import * as Orchestration from "../Workflow/Orchestration.js"
import * as ResponseActivities from "../Workflow/ResponseActivities.js"
import * as Runner from "../Workflow/Runner.js"
import { OrchestrateOptionsError } from "./Orchestrate.js"

/** Some workflows ended in failure (exit 1). */
export class WorkflowsFailedError extends Data.TaggedError("WorkflowsFailedError")<{ readonly message: string }> {}

/** The options of the command. */
export interface OrchestrateOptions {
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly boxes: number
  readonly dataDir: Option.Option<string>
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly runnerAddress: Option.Option<string>
  readonly webhookPort: number
  readonly concurrency: number
  readonly model: string
}

/** The webhook token of an API key: HMAC-SHA256 of a fixed label, keyed by the API key (hex). */
export const webhookTokenOf = (apiKey: Redacted.Redacted<string>): Redacted.Redacted<string> =>
  Redacted.make(createHmac("sha256", Redacted.value(apiKey)).update("boxkit orchestrate webhook").digest("hex"))

/** The runner of the options, and its description for people. */
const runnerOf = (options: OrchestrateOptions) =>
  Effect.gen(function*() {
    if (Option.isSome(options.dataDir) === Option.isSome(options.databaseUrl)) {
      return yield* new OrchestrateOptionsError({ message: "give exactly one of --data-dir and --database-url" })
    }
    if (Option.isSome(options.dataDir)) {
      return {
        layer: Runner.layerSqlite(options.dataDir.value),
        description: `SQLite in ${options.dataDir.value}`
      }
    }
    const url = Option.getOrThrow(options.databaseUrl)
    const runnerAddress = yield* Option.match(options.runnerAddress, {
      onNone: () => Effect.succeed(undefined),
      onSome: (text) => {
        const match = /^(.+):(\d{1,5})$/.exec(text)
        const port = match === null ? Number.NaN : Number(match[2])
        return match !== null && port > 0 && port < 65536
          ? Effect.succeed({ host: match[1], port })
          : new OrchestrateOptionsError({ message: `--runner-address must be host:port, not ${text}` })
      }
    })
    return {
      layer: Runner.layerPostgres(url, { runnerAddress }),
      description: SqlDriver.describePostgres(Redacted.value(url))
    }
  })

/** Runs the command. */
export const run = (options: OrchestrateOptions) =>
  Effect.gen(function*() {
    if (!Number.isInteger(options.boxes) || options.boxes < 0) {
      return yield* new OrchestrateOptionsError({ message: `--boxes must be a whole number >= 0, not ${options.boxes}` })
    }
    if (options.concurrency < 1) {
      return yield* new OrchestrateOptionsError({ message: `--concurrency must be at least 1, not ${options.concurrency}` })
    }
    const runner = yield* runnerOf(options)
    const token = webhookTokenOf(options.apiKey)
    const receiver = WebhookReceiver.layer({
      token,
      port: options.webhookPort,
      handler: ResponseActivities.completeFromWebhook
    })
    const webhook = Layer.effect(
      ResponseActivities.ResponseWebhook,
      Effect.map(WebhookReceiver.WebhookReceiverUrl, (url) => ({ url, token }))
    ).pipe(Layer.provideMerge(receiver))
    const services = Orchestration.layerBoxJob.pipe(
      Layer.provideMerge(Layer.merge(webhook, Boxkit.layer({ apiKey: options.apiKey, baseUrl: options.baseUrl }))),
      Layer.provideMerge(runner.layer)
    )
    yield* Effect.gen(function*() {
      const url = yield* WebhookReceiver.WebhookReceiverUrl
      yield* Console.log(`orchestrate: ${options.boxes} workflows on ${runner.description}; webhooks at ${url}`)
      const final = yield* Orchestration.run({
        boxes: options.boxes,
        concurrency: options.concurrency,
        model: options.model,
        onProgress: (progress) => Console.log(Orchestration.formatProgress(progress))
      })
      if (final.failed > 0) {
        return yield* new WorkflowsFailedError({
          message: `${final.failed} of ${options.boxes} workflows failed (their boxes were terminated)`
        })
      }
      yield* Console.log(`orchestrated ${final.done} boxes`)
    }).pipe(Effect.provide(services))
  })
