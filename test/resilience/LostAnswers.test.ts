/**
 * Lost answers: a connection closed after the request was sent is told apart from a service that is not there
 * (`TransportError.requestSent`), reported as such on the command line, retried only for calls that are safe to
 * repeat, and every operation takes the per-call `safeToRepeat` option. A repeat of create egress policy saves a
 * second policy; a repeat of unpublish that finds the port gone answers as the first attempt would have.
 *
 * The faults come from the local service's fault injector (`reset-after-commit`: the request runs, then the
 * connection is destroyed instead of the answer being written), drawn from a seed found here for the sequence wanted.
 */
import { HttpClientError, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { NodeHttpClient } from "@effect/platform-node"
import { Cause, Duration, Effect, Layer, Random, Redacted } from "effect"
import { createServer } from "node:net"
import * as ApiError from "../../src/ApiError.js"
import * as Failure from "../../src/Cli/Failure.js"
import { Apps } from "../../src/Client/Apps.js"
import { Boxes } from "../../src/Client/Boxes.js"
import * as Boxkit from "../../src/Client/Boxkit.js"
import { defaultRetry } from "../../src/Client/BoxkitConfig.js"
import { Clipboard } from "../../src/Client/Clipboard.js"
import { EgressPolicies } from "../../src/Client/EgressPolicies.js"
import { Exec } from "../../src/Client/Exec.js"
import { Listeners } from "../../src/Client/Listeners.js"
import * as LostAnswer from "../../src/Client/LostAnswer.js"
import { Responses } from "../../src/Client/Responses.js"
import * as Retry from "../../src/Client/Retry.js"
import { Secrets } from "../../src/Client/Secrets.js"
import { AppId, BoxId, EgressPolicyId } from "../../src/Domain/Ids.js"
import * as FaultInjection from "../../src/Server/pipeline/FaultInjection.js"
import * as Harness from "../support/Harness.js"

const app = AppId.make("app_00000000-0000-4000-8000-000000000001")
const box = BoxId.make("sb_00000000-0000-4000-8000-000000000009")
const policy = EgressPolicyId.make("ep_00000000-0000-4000-8000-000000000001")
const quick = { maxAttempts: 3, backoffBase: Duration.millis(1), backoffCap: Duration.millis(2) }

const state = Effect.map(Harness.fetchRaw("/_local/state"), (response) => response.json)
const requestsSeen = Effect.map(state, (s) => s.faults.requests as number)

/** The number of requests `operation` sends before it fails. */
const requestsOf = <A, E, R>(operation: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = yield* requestsSeen
    yield* Effect.flip(operation)
    return (yield* requestsSeen) - before
  })

/**
 * The first seed from which the fault injector draws `reset-after-commit` (true) or nothing (false) for the first
 * requests in the order of `pattern`, with `rate` of resets.
 */
const seedFor = (pattern: ReadonlyArray<boolean>, rate: number): number => {
  const rates = FaultInjection.settings({ rates: { "reset-after-commit": rate } }).rates
  for (let seed = 1; seed < 10_000; seed++) {
    const random = Random.make(seed)
    const draws = pattern.map(() => FaultInjection.pick(Effect.runSync(random.next), rates) === "reset-after-commit")
    if (draws.every((reset, index) => reset === pattern[index])) return seed
  }
  throw new Error("no seed draws the pattern")
}

/** A service whose requests are reset after they ran in the order of `pattern`, and a client with quick retries. */
const resetting = (variant: Harness.Variant, pattern: ReadonlyArray<boolean>) =>
  Harness.serviceWithClientOn(variant, "sk_acme_org", {
    faults: FaultInjection.settings({ rates: { "reset-after-commit": 0.5 }, seed: seedFor(pattern, 0.5) })
  }, quick)

/** A client of `baseUrl` over the `HttpClient` of `variant`. */
const clientAt = (variant: Harness.Variant, baseUrl: string) =>
  variant.client === "stock"
    ? Boxkit.layerWithoutHttpClient({ apiKey: "sk_acme_org", baseUrl, retry: quick }).pipe(Layer.provide(NodeHttpClient.layerUndici))
    : Boxkit.layer({ apiKey: "sk_acme_org", baseUrl, retry: quick })

/** A TCP port on 127.0.0.1 where nothing listens (taken, then freed). */
const closedPort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { readonly port: number }).port
      server.close(() => resolve(port))
    })
  })
)

const report = (error: unknown) => Failure.report(Cause.fail(error), { command: "egress-policies create", verbose: false })

describe.each(Harness.variants({ stockClient: true }))("a connection closed after the request was sent ($name)", (variant) => {
  it.live("is a TransportError with requestSent, not repeated for create egress policy, and reported as a lost answer", () =>
    Effect.gen(function*() {
      const policies = yield* EgressPolicies
      const before = yield* requestsSeen
      const error = yield* Effect.flip(policies.create("lost-answer", {}))
      expect(error).toBeInstanceOf(ApiError.TransportError)
      const transport = error as ApiError.TransportError
      expect(transport.requestSent).toBe(true)
      expect(LostAnswer.mayHaveRun(transport)).toBe(true)
      // One request: the operation takes no Idempotency-Key and was not marked safe to repeat.
      expect((yield* requestsSeen) - before).toBe(1)
      // The service did carry it out.
      const saved = (yield* state).egress_policies.filter((p: { readonly name: string }) => p.name === "lost-answer")
      expect(saved).toHaveLength(1)
      const origin = new URL(transport.url).origin
      expect(report(transport).lines).toEqual([
        `boxkit egress-policies create: the connection to ${origin} was lost after the request was sent: the ` +
        `connection was closed before an answer (POST ${transport.url}); the service may have carried it out`,
        "fix: check whether it took effect (e.g. read or list what it creates or changes) before running it again; " +
        "a command with --idempotency-key can be run again with the same key"
      ])
      expect(report(transport).lines.join("\n")).not.toContain("no service")
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", {
      faults: FaultInjection.settings({ rates: { "reset-after-commit": 1 } })
    }, quick))))

  it.live("every operation takes safeToRepeat: false sends one request, true repeats it", () =>
    Effect.gen(function*() {
      const apps = yield* Apps
      const boxes = yield* Boxes
      const clipboard = yield* Clipboard
      const policies = yield* EgressPolicies
      const exec = yield* Exec
      const listeners = yield* Listeners
      const responses = yield* Responses
      const secrets = yield* Secrets
      const operations = (options: { readonly safeToRepeat: boolean; readonly retry: typeof quick }) => ({
        "Apps.find": apps.find("a", options),
        "Boxes.create": boxes.create({ name: "b", app_id: app, image: { base: "debian" } }, options),
        "Boxes.retrieve": boxes.retrieve(box, options),
        "Boxes.awaitStatus": boxes.awaitStatus(box, "running", { ...options, timeout: Duration.seconds(10) }),
        "Boxes.upgrade": boxes.upgrade(box, options),
        "Boxes.terminate": boxes.terminate(box, options),
        "Clipboard.write": clipboard.writeText(box, "text", options),
        "EgressPolicies.create": policies.create("p", {}, options),
        "EgressPolicies.retrieve": policies.retrieve(policy, options),
        "EgressPolicies.rename": policies.rename(policy, "q", options),
        "Exec.resize": exec.resize(box, "exec-1", { cols: 80, rows: 24 }, options),
        "Listeners.publish": listeners.publish(box, 8080, "http", options),
        "Listeners.addDomain": listeners.addDomain(box, 8080, "example.com", options),
        "Listeners.unpublish": listeners.unpublish(box, 8080, options),
        "Responses.create": responses.create({ model: "boxkit-local", input: "x" }, options),
        "Responses.submit": responses.submit({ model: "boxkit-local", input: "x" }, options),
        "Responses.retrieve": responses.retrieve("resp_0", options),
        "Secrets.create": secrets.create("S", Redacted.make("v"), options),
        "Secrets.retrieve": secrets.retrieve("S", options)
      })
      for (const [safeToRepeat, expected] of [[false, 1], [true, 3]] as const) {
        const sent: Record<string, number> = {}
        for (const [name, operation] of Object.entries(operations({ safeToRepeat, retry: quick }))) {
          sent[name] = yield* requestsOf(operation as Effect.Effect<unknown, unknown>)
        }
        expect(sent, `safeToRepeat: ${safeToRepeat}`).toEqual(Object.fromEntries(Object.keys(sent).map((name) => [name, expected])))
      }
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", {
      faults: FaultInjection.settings({ rates: { "reset-after-commit": 1 } })
    }, quick))))

  it.live("create egress policy marked safeToRepeat: repeated after the lost answer, leaving a second policy of the name", () =>
    Effect.gen(function*() {
      const policies = yield* EgressPolicies
      const created = yield* policies.create("repeated", { allowlist: ["example.com"] }, { safeToRepeat: true })
      expect(created.name).toBe("repeated")
      const saved: ReadonlyArray<{ readonly id: string }> = (yield* state).egress_policies.filter(
        (p: { readonly name: string }) => p.name === "repeated"
      )
      expect(saved).toHaveLength(2)
      expect(saved.map((p) => p.id)).toContain(created.id)
      expect((yield* state).faults.injected["reset-after-commit"]).toBe(1)
    }).pipe(Effect.provide(resetting(variant, [true, false]))))

  it.live("unpublish repeated after a lost answer answers { box_id, guest_port }; the port is gone", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const listeners = yield* Listeners
      // Request 1 (create, with port 8080 published) answers; request 2 (unpublish) runs and is reset; request 3, the
      // repeat, finds the port gone (404 for guest_port).
      const created = yield* boxes.create({ name: "ports", app_id: app, image: { base: "debian" }, ingress_ports: [{ guest_port: 8080 }] })
      const boxId = created.value.box_id
      const answer = yield* listeners.unpublish(boxId, 8080)
      expect(answer).toEqual({ box_id: boxId, guest_port: 8080 })
      const after = yield* state
      expect(after.faults.injected["reset-after-commit"]).toBe(1)
      expect(after.faults.requests).toBe(3)
      const record = after.boxes.find((b: { readonly id: string }) => b.id === boxId)
      expect(JSON.stringify(record)).not.toContain("8080")
    }).pipe(Effect.provide(resetting(variant, [false, true, false]))))

  it.live("publish marked safeToRepeat, repeated after a lost answer: the listener it published is the answer", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const listeners = yield* Listeners
      // Request 1 (create) answers; 2 (publish) runs and is reset; 3, the repeat, answers 409 already_exists; 4 reads
      // the box.
      const created = yield* boxes.create({ name: "ports", app_id: app, image: { base: "debian" } })
      const listener = yield* listeners.publish(created.value.box_id, 3000, "http", { safeToRepeat: true })
      expect(listener).toMatchObject({ guest_port: 3000, protocol: "http" })
      const after = yield* state
      expect(after.faults.injected["reset-after-commit"]).toBe(1)
      expect(after.faults.requests).toBe(4)
    }).pipe(Effect.provide(resetting(variant, [false, true, false, false]))))

  it.live("publish repeated after a lost answer: a port published with another protocol is still the conflict", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const listeners = yield* Listeners
      const created = yield* boxes.create({
        name: "ports",
        app_id: app,
        image: { base: "debian" },
        ingress_ports: [{ guest_port: 5432, protocol: "tcp" }]
      })
      const error = yield* Effect.flip(listeners.publish(created.value.box_id, 5432, "http", { safeToRepeat: true }))
      expect(error).toBeInstanceOf(ApiError.ConflictError)
      expect((error as ApiError.ConflictError).code).toBe("already_exists")
    }).pipe(Effect.provide(resetting(variant, [false, true, false, false]))))

  it.live("addDomain repeated after a lost answer: the listener with the hostname is the answer", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const listeners = yield* Listeners
      const created = yield* boxes.create({ name: "ports", app_id: app, image: { base: "debian" }, ingress_ports: [{ guest_port: 8080 }] })
      const listener = yield* listeners.addDomain(created.value.box_id, 8080, "lost.example.com")
      expect(listener).toMatchObject({ guest_port: 8080, custom_domains: ["lost.example.com"] })
      expect((yield* state).faults.requests).toBe(4)
    }).pipe(Effect.provide(resetting(variant, [false, true, false, false]))))

  it.live("addDomain of a hostname another port has is still the conflict, lost answer or not", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const listeners = yield* Listeners
      const created = yield* boxes.create({
        name: "ports",
        app_id: app,
        image: { base: "debian" },
        ingress_ports: [{ guest_port: 8080 }, { guest_port: 8081 }]
      })
      yield* listeners.addDomain(created.value.box_id, 8081, "taken.example.com")
      const error = yield* Effect.flip(listeners.addDomain(created.value.box_id, 8080, "taken.example.com"))
      expect(error).toBeInstanceOf(ApiError.ConflictError)
      expect((error as ApiError.ConflictError).param).toBe("hostname")
    }).pipe(Effect.provide(resetting(variant, [false, false, true, false, false]))))

  it.live("unpublish of a port that was never published is still a NotFoundError (no answer was lost)", () =>
    Effect.gen(function*() {
      const boxes = yield* Boxes
      const listeners = yield* Listeners
      const created = yield* boxes.create({ name: "ports", app_id: app, image: { base: "debian" } })
      const error = yield* Effect.flip(listeners.unpublish(created.value.box_id, 8080))
      expect(error).toBeInstanceOf(ApiError.NotFoundError)
      expect((error as ApiError.NotFoundError).param).toBe("guest_port")
    }).pipe(Effect.provide(Harness.serviceWithClientOn(variant, "sk_acme_org", {}, quick))))
})

describe.each(Harness.variants({ stockClient: true }))("a connection refused before the request was sent ($name)", (variant) => {
  it.live("is a TransportError without requestSent, retried even for create egress policy, reported as no service", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const baseUrl = `http://127.0.0.1:${port}/v1`
      const error = yield* Effect.flip(
        Effect.flatMap(EgressPolicies, (policies) => policies.create("refused", {})).pipe(Effect.provide(clientAt(variant, baseUrl)))
      )
      expect(error).toBeInstanceOf(ApiError.TransportError)
      const transport = error as ApiError.TransportError
      expect(transport.requestSent).toBe(false)
      expect(LostAnswer.mayHaveRun(transport)).toBe(false)
      expect(report(transport).lines).toEqual([
        `boxkit egress-policies create: no service at http://127.0.0.1:${port}: connection refused (POST ${baseUrl}/egress-policies)`,
        "fix: start one with \"boxkit serve\", or check --base-url (BOX_BASE_URL)"
      ])
    }))
})

describe("the classification", () => {
  const request = HttpClientRequest.post("http://127.0.0.1:9/v1/egress-policies")
  const failed = (cause: unknown, reason: "Transport" | "InvalidUrl" | "Encode" = "Transport") =>
    new HttpClientError.RequestError({ request, reason, cause })
  const coded = (code: string, message = code) => Object.assign(new Error(message), { code })

  it("requestSent: false for failures before anything was written, true after or when it cannot be told", () => {
    expect(LostAnswer.requestSent(failed(coded("ECONNREFUSED")))).toBe(false)
    expect(LostAnswer.requestSent(failed(coded("ENOTFOUND")))).toBe(false)
    expect(LostAnswer.requestSent(failed(coded("UND_ERR_CONNECT_TIMEOUT")))).toBe(false)
    // Node's "happy eyeballs" refusal of every address is an AggregateError; fetch wraps the undici error as its cause.
    expect(LostAnswer.requestSent(failed(Object.assign(new AggregateError([coded("ECONNREFUSED")]), { code: undefined })))).toBe(false)
    expect(LostAnswer.requestSent(failed(new TypeError("fetch failed", { cause: coded("ECONNREFUSED") })))).toBe(false)
    expect(LostAnswer.requestSent(failed(undefined, "InvalidUrl"))).toBe(false)
    expect(LostAnswer.requestSent(failed(coded("UND_ERR_SOCKET", "other side closed")))).toBe(true)
    expect(LostAnswer.requestSent(failed(coded("ECONNRESET", "socket hang up")))).toBe(true)
    expect(LostAnswer.requestSent(failed(new Error("something else")))).toBe(true)
  })

  it("a request that never left the client is retried even when not safe to repeat; one that was sent is not", () => {
    const notSent = new ApiError.TransportError({ message: "connect ECONNREFUSED", method: "POST", url: "u", requestSent: false })
    const sent = new ApiError.TransportError({ message: "other side closed", method: "POST", url: "u", requestSent: true })
    expect(Retry.decide(notSent, false, defaultRetry)).toEqual({ _tag: "Backoff" })
    expect(Retry.decide(sent, false, defaultRetry)).toEqual({ _tag: "Stop", reason: "unsafe-to-repeat" })
    expect(Retry.decide(sent, true, defaultRetry)).toEqual({ _tag: "Backoff" })
    // Without the field (e.g. made by hand): it may have been sent.
    expect(new ApiError.TransportError({ message: "m", method: "GET", url: "u" }).requestSent).toBe(true)
  })

  it("mayHaveRun: lost answers, timeouts and 500s; not 429, 503 or the in-flight answer", () => {
    expect(LostAnswer.mayHaveRun(ApiError.make.server())).toBe(true)
    expect(LostAnswer.mayHaveRun(new ApiError.TimeoutError({ message: "t", timeout: Duration.seconds(1) }))).toBe(true)
    expect(LostAnswer.mayHaveRun(new ApiError.UnexpectedResponseError({ message: "m", status: 502 }))).toBe(true)
    expect(LostAnswer.mayHaveRun(ApiError.make.rateLimited(Duration.seconds(1)))).toBe(false)
    expect(LostAnswer.mayHaveRun(ApiError.make.unavailable("u"))).toBe(false)
    expect(LostAnswer.mayHaveRun(ApiError.make.idempotentRequestInFlight())).toBe(false)
    expect(LostAnswer.mayHaveRun(ApiError.make.notFound("n"))).toBe(false)
  })
})
