/**
 * The OpenAPI document is as strict as the service (docs/ASSUMPTIONS.md "The OpenAPI document"): the local service
 * behind Stoplight Prism's validating proxy (`prism proxy … --errors`, the pinned dev dependency). The demo and a broad
 * set of good requests go through it with no violation of the document, by a request or by an answer of the service
 * (Prism answers 422 or 500 and the header `sl-violations` when there is one); the bad requests the service answers 400
 * (checked directly) are refused by Prism from the document alone (422, or 415 for a media type), rules across fields
 * (`if`/`then`, `not`, a recursive schema for secrets in an inline policy) and integer bounds included.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as DemoProgram from "../../src/Cli/DemoProgram.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Harness from "../support/Harness.js"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject()))
    })
  })

/** Prism proxying `origin` with the service's document, until the scope closes; answers Prism's origin. */
const prismProxy = (origin: string) =>
  Effect.gen(function*() {
    const dir = mkdtempSync(join(tmpdir(), "boxkit-prism-"))
    const document = join(dir, "openapi.json")
    writeFileSync(document, LocalService.openApiJson())
    const port = yield* Effect.promise(freePort)
    const child = spawn(
      process.execPath,
      [join(checkout, "node_modules/@stoplight/prism-cli/dist/index.js"), "proxy", document, origin, "--errors", "--port", String(port)],
      { stdio: ["ignore", "pipe", "pipe"] }
    )
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        child.kill()
        rmSync(dir, { recursive: true, force: true })
      })
    )
    yield* Effect.promise(() =>
      new Promise<void>((resolve, reject) => {
        let output = ""
        const listen = (chunk: Buffer) => {
          output += chunk.toString()
          if (output.includes("Prism is listening")) resolve()
        }
        child.stdout.on("data", listen)
        child.stderr.on("data", listen)
        child.on("exit", (code) => reject(new Error(`prism exited with ${code}: ${output}`)))
      })
    )
    return `http://127.0.0.1:${port}`
  })

interface Answer {
  readonly status: number
  readonly violations: string | null
  readonly json: any
}

const send = (origin: string, method: string, path: string, options: {
  readonly body?: unknown
  readonly raw?: string
  readonly headers?: Record<string, string>
} = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const headers = options.headers ?? {
      authorization: "Bearer sk_acme_org",
      ...(options.body !== undefined ? { "content-type": "application/json" } : {})
    }
    const response = await fetch(origin + path, {
      method,
      headers,
      body: options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body))
    })
    const text = await response.text()
    let json: any = undefined
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    return { status: response.status, violations: response.headers.get("sl-violations"), json }
  })

const good = (answer: Answer, label: string) => {
  expect({ label, violations: answer.violations }).toEqual({ label, violations: null })
  expect(answer.status, `${label}: ${JSON.stringify(answer.json)}`).toBeLessThan(300)
}

describe("the service behind Prism's validating proxy", () => {
  it.scopedLive("the demo and every operation's good requests pass the document, answers included", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        LocalService.layerNode(Harness.seed, {}).pipe(Layer.provide(NodeHttpClient.layerUndici))
      )
      const origin = (yield* Effect.provide(LocalService.baseUrl, context)).replace(/\/v1$/, "")
      const prism = yield* prismProxy(origin)

      yield* DemoProgram.run(Option.some(`${prism}/v1`), Option.some(Redacted.make("sk_acme_org")))

      const app = yield* send(prism, "POST", "/v1/apps/find", { body: { name: "prism-app", mint_if_missing: true } })
      good(app, "apps.find")
      good(yield* send(prism, "POST", "/v1/secrets", { body: { name: "PRISM", value: "v" } }), "secrets.create")
      good(yield* send(prism, "GET", "/v1/secrets/%20PRISM%20"), "secrets.retrieve")
      const policy = yield* send(prism, "POST", "/v1/egress-policies", {
        body: { name: "p", document: { allow: ["example.com"] } }
      })
      good(policy, "egressPolicies.create")
      good(yield* send(prism, "GET", `/v1/egress-policies/${policy.json.id}`), "egressPolicies.retrieve")
      good(yield* send(prism, "PATCH", `/v1/egress-policies/${policy.json.id}`, { body: { name: " q " } }), "rename")
      const created = yield* send(prism, "POST", "/v1/boxes", {
        body: { name: "prism", app_id: app.json.id, image: { base: "debian" }, max_lifetime_seconds: 3600 },
        headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "idempotency-key": "k1" }
      })
      good(created, "boxes.create")
      const boxId = created.json.box_id
      // A replay carries Idempotent-Replayed, which the document declares.
      good(
        yield* send(prism, "POST", "/v1/boxes", {
          body: { name: "prism", app_id: app.json.id, image: { base: "debian" }, max_lifetime_seconds: 3600 },
          headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", "idempotency-key": "k1" }
        }),
        "boxes.create replayed"
      )
      // Wait for the box to run (the service's boot delay), through the proxy too.
      let box = yield* send(prism, "GET", `/v1/boxes/${boxId}`)
      while (box.json.status !== "running") {
        good(box, "boxes.retrieve")
        yield* Effect.sleep("50 millis")
        box = yield* send(prism, "GET", `/v1/boxes/${boxId}`)
      }
      good(box, "boxes.retrieve")
      good(yield* send(prism, "POST", `/v1/boxes/${boxId}/listeners`, { body: { guest_port: 8080 } }), "publish")
      good(
        yield* send(prism, "POST", `/v1/boxes/${boxId}/listeners/8080/domains`, { body: { hostname: "app.example.com" } }),
        "addDomain"
      )
      good(yield* send(prism, "POST", `/v1/boxes/${boxId}/exec/e1/resize`, { body: { cols: 80, rows: 24 } }), "resize")
      good(
        yield* send(prism, "PUT", `/v1/boxes/${boxId}/clipboard`, {
          raw: "hello",
          headers: { authorization: "Bearer sk_acme_org", "content-type": "text/plain" }
        }),
        "clipboard.write"
      )
      good(yield* send(prism, "DELETE", `/v1/boxes/${boxId}/listeners/8080`), "unpublish")
      for (const operation of ["pause", "resume", "sleep", "resume"]) {
        good(yield* send(prism, "POST", `/v1/boxes/${boxId}/${operation}`), operation)
      }
      good(
        yield* send(prism, "POST", `/v1/boxes/${boxId}/upgrade`, {
          headers: { authorization: "Bearer sk_acme_org", "idempotency-key": "u1" }
        }),
        "upgrade"
      )
      const response = yield* send(prism, "POST", "/v1/responses", { body: { model: "boxkit-local", input: "hi" } })
      good(response, "responses.create")
      good(
        yield* send(prism, "POST", "/v1/responses", {
          body: { model: "boxkit-local", input: "hi", background: true, metadata: { run: "1" } }
        }),
        "responses.create background"
      )
      good(yield* send(prism, "GET", `/v1/responses/${response.json.id}`), "responses.retrieve")
      good(yield* send(prism, "POST", `/v1/boxes/${boxId}/terminate`), "terminate")
      // Error answers of the service pass the document too.
      const missing = yield* send(prism, "GET", "/v1/secrets/NOPE")
      expect([missing.status, missing.violations]).toEqual([404, null])
      const conflict = yield* send(prism, "POST", `/v1/boxes/${boxId}/pause`)
      expect([conflict.status, conflict.violations]).toEqual([409, null])

      // Bad requests: the service answers 400, and the document alone refuses them.
      const bad: ReadonlyArray<readonly [string, string, string, { body?: unknown; raw?: string; headers?: Record<string, string> }]> = [
        ["secret name", "POST", "/v1/secrets", { body: { name: "_bad", value: "v" } }],
        ["secret name in the path", "GET", "/v1/secrets/bad.name", {}],
        ["empty box name", "POST", "/v1/boxes", { body: { name: "", app_id: app.json.id, image: { base: "debian" } } }],
        ["blank app_id", "POST", "/v1/boxes", { body: { name: "x", app_id: "  ", image: { base: "debian" } } }],
        ["two image kinds", "POST", "/v1/boxes", { body: { name: "x", app_id: app.json.id, image: { base: "debian", oci: "x" } } }],
        ["max_lifetime_seconds 0", "POST", "/v1/boxes", {
          body: { name: "x", app_id: app.json.id, image: { base: "debian" }, max_lifetime_seconds: 0 }
        }],
        ["guest_port 70000", "DELETE", `/v1/boxes/${boxId}/listeners/70000`, {}],
        ["guest_port 0 in a body", "POST", `/v1/boxes/${boxId}/listeners`, { body: { guest_port: 0 } }],
        ["hostname not a DNS name", "POST", `/v1/boxes/${boxId}/listeners/8080/domains`, { body: { hostname: "not_a_host" } }],
        ["policy name missing", "PATCH", `/v1/egress-policies/${policy.json.id}`, { body: {} }],
        ["resize cols 0", "POST", `/v1/boxes/${boxId}/exec/e1/resize`, { body: { cols: 0, rows: 24 } }],
        ["reserved metadata key", "POST", "/v1/responses", {
          body: { model: "m", input: "x", metadata: { supercached_input_tokens: "1" } }
        }],
        ["background and stream", "POST", "/v1/responses", { body: { model: "m", input: "x", background: true, stream: true } }],
        ["memory out of the size's range", "POST", "/v1/boxes", {
          body: { name: "x", app_id: app.json.id, image: { base: "debian" }, size: "s", memory_limit_gib: 65 }
        }],
        ["no_network with ingress ports", "POST", "/v1/boxes", {
          body: {
            name: "x",
            app_id: app.json.id,
            image: { base: "debian" },
            egress_policy: { no_network: true },
            ingress_ports: [{ guest_port: 8080 }]
          }
        }],
        ["inline policy using a secret", "POST", "/v1/boxes", {
          body: {
            name: "x",
            app_id: app.json.id,
            image: { base: "debian" },
            egress_policy: { rules: [{ host: "api.github.com", secret: "GITHUB_TOKEN" }] }
          }
        }],
        ["asap window on a background request", "POST", "/v1/responses", {
          body: { model: "m", input: "x", background: true, metadata: { completion_window: "asap" } }
        }],
        ["policy name over 128 characters after trimming", "PATCH", `/v1/egress-policies/${policy.json.id}`, {
          body: { name: ` ${"p".repeat(129)} ` }
        }],
        ["an integer past 2^53 - 1", "POST", "/v1/responses", {
          raw: '{"model":"m","input":"x","max_output_tokens":9007199254740993}',
          headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" }
        }],
        ["model missing", "POST", "/v1/responses", { body: { input: "x" } }],
        ["Idempotency-Key of 300 characters", "POST", `/v1/boxes/${boxId}/upgrade`, {
          headers: { authorization: "Bearer sk_acme_org", "idempotency-key": "k".repeat(300) }
        }],
        ["clipboard as octet-stream", "PUT", `/v1/boxes/${boxId}/clipboard`, {
          raw: "x",
          headers: { authorization: "Bearer sk_acme_org", "content-type": "application/octet-stream" }
        }]
      ]
      for (const [label, method, path, options] of bad) {
        const direct = yield* send(origin, method, path, options)
        expect(direct.status, `${label} (service): ${JSON.stringify(direct.json)}`).toBe(400)
        const proxied = yield* send(prism, method, path, options)
        expect([415, 422], `${label} (document): ${proxied.status} ${JSON.stringify(proxied.json)}`).toContain(proxied.status)
      }
    }), 120_000)
})
