/**
 * The program of `boxkit demo`, the main job. Through the client over real HTTP: find-or-mint an app; create a secret and read it
 * back; create and rename an egress policy; create a box (publishing two ports) and wait until it is running; put text
 * and a PNG on its clipboard; resize an exec; unpublish a port; upgrade; a foreground response; a background response
 * whose completion webhook is received and verified by an in-process receiver; terminate the box.
 *
 * Without `--base-url` it starts the embedded local service in-process on a free port. It creates everything it
 * uses, so it runs against any service and any organization-scoped key. One progress line per step, with timings.
 * It survives a hostile network (`boxkit serve --faults`, including connections closed after the request committed):
 * every call is either safe to repeat by its nature (reads, replacements, calls with an idempotency key; unpublish
 * recovers a lost answer itself) or marked `safeToRepeat` where a repeat does no harm (create egress policy).
 * The `demo` command (Demo.ts) loads this module when it runs, so that `boxkit serve` never loads the client.
 *
 * @since 0.1.0
 */
import { Clock, Config, Console, Context, Deferred, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { Apps } from "../Client/Apps.js"
import * as Boxkit from "../Client/Boxkit.js"
import { Boxes } from "../Client/Boxes.js"
import { Clipboard } from "../Client/Clipboard.js"
import { EgressPolicies } from "../Client/EgressPolicies.js"
import { Exec } from "../Client/Exec.js"
import { Listeners } from "../Client/Listeners.js"
import { Responses } from "../Client/Responses.js"
import { Secrets } from "../Client/Secrets.js"
import * as WebhookReceiver from "../Client/WebhookReceiver.js"
import { type ModelResponse, outputText } from "../Domain/ModelResponse.js"
import * as DemoSeed from "../Server/state/DemoSeed.js"
import * as LocalService from "../Server/LocalService.js"
import * as Seed from "../Server/state/Seed.js"

/** A 1x1 PNG image (70 bytes), for the clipboard step. */
export const onePixelPng = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="),
  (character) => character.charCodeAt(0)
)

/** Runs one step, printing `ok  <ms> <title>: <detail>` when it succeeds. */
const step = <A, E, R>(title: string, effect: Effect.Effect<A, E, R>, detail: (value: A) => string) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const value = yield* effect
    const elapsed = (yield* Clock.currentTimeMillis) - start
    yield* Console.log(`ok ${String(elapsed).padStart(5)} ms  ${title}: ${detail(value)}`)
    return value
  })

/** The demo's steps; needs the client services. `suffix` keeps names unique per run. */
export const program = Effect.gen(function*() {
  const apps = yield* Apps
  const secrets = yield* Secrets
  const policies = yield* EgressPolicies
  const boxes = yield* Boxes
  const clipboard = yield* Clipboard
  const exec = yield* Exec
  const listeners = yield* Listeners
  const responses = yield* Responses
  const suffix = crypto.randomUUID().slice(0, 8)

  const app = yield* step("find-or-mint app", apps.find("boxkit-demo", { mintIfMissing: true }), (a) => `${a.name} ${a.id}`)
  yield* step(
    "create secret",
    secrets.create(`DEMO_TOKEN_${suffix}`, Redacted.make(crypto.randomUUID())),
    (s) => s.name
  )
  yield* step("read secret", secrets.retrieve(`DEMO_TOKEN_${suffix}`), (s) => `${s.name} (metadata only, updated ${s.updated_at})`)
  // Create egress policy has no Idempotency-Key. A repeat after a lost answer saves a second policy named
  // `demo-<suffix>` that nothing uses (this run's name, seen by no other run), which does no harm: marked safe to repeat.
  const policy = yield* step(
    "create egress policy",
    policies.create(`demo-${suffix}`, { allowlist: ["API.GitHub.com"] }, { safeToRepeat: true }),
    (p) => `${p.id} ${JSON.stringify(p.document)}`
  )
  yield* step("rename egress policy", policies.rename(policy.id, `  demo-renamed-${suffix}  `), (p) => `"${p.name}"`)
  const created = yield* step(
    "create box",
    boxes.create({
      name: `demo-box-${suffix}`,
      app_id: app.id,
      image: { base: "debian" },
      size: "s",
      max_lifetime_seconds: 3600,
      egress_policy: policy.id,
      ingress_ports: [{ guest_port: 8080 }, { guest_port: 5432, protocol: "tcp" }]
    }),
    (c) => `${c.value.box_id} ${c.value.status} (idempotency key ${c.idempotencyKey.slice(0, 8)}…)`
  )
  const boxId = created.value.box_id
  const box = yield* step(
    "wait until running",
    boxes.awaitStatus(boxId, "running", { timeout: Duration.seconds(60) }),
    (b) => `${b.status}, ${b.vcpus} vCPU, ${b.memory_limit_gib} GiB, ports ${b.listeners.map((l) => `${l.guest_port}/${l.protocol}`).join(" ")}`
  )
  yield* step("clipboard text", clipboard.writeText(boxId, "hello from boxkit"), () => "17 bytes text/plain")
  yield* step("clipboard PNG", clipboard.write(boxId, onePixelPng, "image/png"), () => `${onePixelPng.byteLength} bytes image/png`)
  yield* step("resize exec", exec.resize(boxId, `exec_${suffix}`, { cols: 120, rows: 40 }), () => "120x40 (unknown exec: no-op)")
  yield* step("unpublish port", listeners.unpublish(boxId, 8080), (r) => `${r.box_id} port ${r.guest_port}`)
  yield* step(
    "upgrade",
    boxes.upgrade(boxId),
    (u) => `applied ${u.value.applied}, guest_schema_version ${u.value.guest_schema_version ?? "n/a"}, status ${u.value.status}`
  )
  const foreground = yield* step(
    "foreground response",
    responses.create({ model: "boxkit-local", input: `Describe box ${box.name}.`, instructions: "Be brief." }),
    (r) => `${r.value.status}, ${r.value.usage?.output_tokens} output tokens: ${outputText(r.value).slice(0, 60)}…`
  )

  const token = Redacted.make(crypto.randomUUID())
  const received = yield* Deferred.make<ModelResponse>()
  const receiverContext = yield* Layer.build(WebhookReceiver.layer({
    token,
    handler: (response) => Deferred.succeed(received, response)
  }))
  const url = Context.get(receiverContext, WebhookReceiver.WebhookReceiverUrl)
  const submitted = yield* step(
    "background response",
    responses.submit(
      { model: "boxkit-local", input: `Summarize ${foreground.value.id}.` },
      { completionWebhook: { url, token } }
    ),
    (r) => `${r.value.id} ${r.value.status}`
  )
  yield* step(
    "completion webhook received",
    Deferred.await(received).pipe(
      Effect.timeoutFail({ duration: Duration.seconds(30), onTimeout: () => new DemoError({ message: "no webhook within 30 s" }) }),
      Effect.filterOrFail(
        (response) => response.id === submitted.value.id && response.status === "completed",
        (response) => new DemoError({ message: `unexpected webhook for ${response.id} (${response.status})` })
      )
    ),
    (r) => `${r.id} ${r.status}, bearer token verified, ${r.usage?.total_tokens} tokens`
  )
  yield* step("terminate box", boxes.terminate(boxId), (b) => b.status)
}).pipe(Effect.scoped)

/** A demo step saw something other than what the spec promises. */
export class DemoError extends Schema.TaggedError<DemoError>()("DemoError", { message: Schema.String }) {}

/** The client layer for a remote service, or the embedded local service on a free port. */
const clientLayer = (
  baseUrl: Option.Option<string>,
  apiKey: Option.Option<Redacted.Redacted<string>>
): Layer.Layer<Boxkit.Services, unknown> => {
  if (Option.isSome(baseUrl)) {
    return Boxkit.layerConfig(Config.all({
      apiKey: Option.isSome(apiKey) ? Config.succeed(apiKey.value) : Config.redacted("BOX_API_KEY"),
      baseUrl: Config.succeed(baseUrl.value),
      apiUrl: Config.option(Config.string("BOX_API_URL")).pipe(Config.map(Option.getOrUndefined))
    }))
  }
  return Layer.unwrapEffect(Effect.gen(function*() {
    const url = yield* LocalService.baseUrl
    yield* Console.log(`embedded local service listening on ${url}`)
    return Boxkit.layer({ apiKey: Option.getOrElse(apiKey, () => Redacted.make("sk_acme_org")), baseUrl: url })
  })).pipe(Layer.provide(LocalService.layerNode(Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example))))
}

/**
 * Runs the demo against `baseUrl` (a `{base_url}` ending in `/v1`) with `apiKey`, or against the embedded local
 * service when `baseUrl` is none, and prints how long it took. Fails with `DemoError` when a step sees something the
 * spec does not promise, or with the client's errors.
 */
export const run = (
  baseUrl: Option.Option<string>,
  apiKey: Option.Option<Redacted.Redacted<string>>
) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    yield* Effect.provide(program, clientLayer(baseUrl, apiKey))
    yield* Console.log(`demo finished in ${(yield* Clock.currentTimeMillis) - start} ms`)
  })
