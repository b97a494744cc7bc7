/**
 * What every request of the client carries, as a local HTTP server sees it: `User-Agent: boxkit/<version>` (the
 * version package.json gives), the configured default headers (a caller's own `User-Agent` wins; each request's own
 * headers and the API key's `Authorization` win over them), and `transformClient` applied to the `HttpClient` every
 * request goes through (the toolkit's own undici client and any other), on the contract's requests and on raw ones.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Config, Duration, Effect, Exit, Layer, Redacted } from "effect"
import { readFileSync } from "node:fs"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import * as ApiError from "../../src/ApiError.js"
import { BoxkitConfig, type BoxkitOptions } from "../../src/Client/BoxkitConfig.js"
import * as Boxkit from "../../src/Client/Boxkit.js"
import { Clipboard } from "../../src/Client/Clipboard.js"
import { Secrets } from "../../src/Client/Secrets.js"
import { userAgent, version } from "../../src/Client/Version.js"
import { boxId } from "../support/Fixtures.js"

/** One request as the server saw it. */
interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
}

/**
 * A local HTTP server that records every request: a secret for `GET /v1/secrets/{name}`, `{}` for a clipboard write,
 * a 404 envelope for anything else; requests to `/v1/secrets/SLOW` are never answered. Closed with the scope.
 */
const recordingServer = Effect.acquireRelease(
  Effect.async<{ readonly baseUrl: string; readonly seen: Array<Seen>; readonly close: () => void }>((resume) => {
    const seen: Array<Seen> = []
    const server = createServer((request, response) => {
      seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers })
      request.resume()
      request.on("end", () => {
        const url = request.url ?? ""
        if (url === "/v1/secrets/SLOW") return
        const [status, body] = request.method === "GET" && url.startsWith("/v1/secrets/")
          ? [200, {
            org_id: "org_1",
            name: url.slice("/v1/secrets/".length),
            created_at: "2026-11-22T10:00:00.000Z",
            updated_at: "2026-11-22T10:00:00.000Z"
          }]
          : request.method === "PUT" && url.endsWith("/clipboard")
          ? [200, {}]
          : [404, { error: { type: "not_found_error", message: "Nothing here.", param: null, code: null } }]
        response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        seen,
        close: () => server.close()
      }))
    })
  }),
  (server) =>
    Effect.sync(() => {
      server.close()
    })
)

/** Runs `body` with every client service over the toolkit's own HttpClient, pointed at a fresh recording server. */
const withServer = <A, E>(
  options: Omit<BoxkitOptions, "apiKey" | "baseUrl">,
  body: (seen: ReadonlyArray<Seen>) => Effect.Effect<A, E, Boxkit.Services>,
  layer: (options: BoxkitOptions) => Layer.Layer<Boxkit.Services> = Boxkit.layer
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* recordingServer
    return yield* body(server.seen).pipe(
      Effect.provide(layer({ apiKey: Redacted.make("sk_header_test"), baseUrl: server.baseUrl, ...options }))
    )
  }))

const readSecret = Effect.flatMap(Secrets, (secrets) => secrets.retrieve("GITHUB_TOKEN"))
const writeClipboard = Effect.flatMap(Clipboard, (clipboard) => clipboard.writeText(boxId, "hello"))

describe("User-Agent", () => {
  it("names the version package.json gives", () => {
    const packageJson = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    expect(version).toBe(packageJson.version)
    expect(userAgent).toBe(`boxkit/${packageJson.version}`)
  })

  it.live("every request carries User-Agent: boxkit/<version>, on the contract's requests and raw ones", () =>
    withServer({}, (seen) =>
      Effect.gen(function*() {
        yield* readSecret
        yield* writeClipboard
        expect(seen.map((request) => `${request.method} ${request.headers["user-agent"]}`)).toEqual([
          `GET boxkit/${version}`,
          `PUT boxkit/${version}`
        ])
        expect(seen.every((request) => request.headers.authorization === "Bearer sk_header_test")).toBe(true)
      })))

  it.live("over another HttpClient too (NodeHttpClient.layerUndici)", () =>
    withServer(
      {},
      (seen) =>
        Effect.gen(function*() {
          yield* readSecret
          expect(seen[0].headers["user-agent"]).toBe(userAgent)
        }),
      (options) => Boxkit.layerWithoutHttpClient(options).pipe(Layer.provide(NodeHttpClient.layerUndici))
    ))
})

describe("default headers", () => {
  it.live("sent on every request; a caller's User-Agent wins; names are case-insensitive; Redacted values unwrapped", () =>
    withServer(
      { headers: { "X-Team": "infra", "User-Agent": "my-daemon/2.0", "x-proxy-token": Redacted.make("proxy-secret") } },
      (seen) =>
        Effect.gen(function*() {
          yield* readSecret
          yield* writeClipboard
          expect(seen).toHaveLength(2)
          for (const request of seen) {
            expect(request.headers["x-team"]).toBe("infra")
            expect(request.headers["user-agent"]).toBe("my-daemon/2.0")
            expect(request.headers["x-proxy-token"]).toBe("proxy-secret")
          }
        })
    ))

  it("an invalid name or value is refused when the client is configured, naming the header, never its value", () => {
    expect(() => Boxkit.layer({ apiKey: "k", baseUrl: "http://h/v1", headers: { "bad name": "v" } })).toThrow(
      /"bad name" is not a valid header name/
    )
    const refused = () =>
      Boxkit.layer({ apiKey: "k", baseUrl: "http://h/v1", headers: { "x-token": Redacted.make("secret\r\nx-evil: 1") } })
    expect(refused).toThrow(/value of x-token/)
    expect(refused).not.toThrow(/secret/)
  })

  it.effect("an invalid header through Config is a ConfigError naming it", () =>
    Effect.gen(function*() {
      const config = Config.succeed({ apiKey: "k", baseUrl: "http://h/v1", headers: { "x-team": "a\nb" } })
      const exit = yield* Effect.exit(Layer.build(BoxkitConfig.layerConfig(config)).pipe(Effect.scoped))
      expect(Exit.isFailure(exit) ? String(Cause.squash(exit.cause)) : "").toMatch(/headers.*x-team/)
    }))

  it.live("each request's own headers and the API key win over them", () =>
    withServer(
      { headers: { authorization: "Bearer someone-else", "content-type": "application/x-default" } },
      (seen) =>
        Effect.gen(function*() {
          yield* readSecret
          yield* writeClipboard
          expect(seen.map((request) => request.headers.authorization)).toEqual([
            "Bearer sk_header_test",
            "Bearer sk_header_test"
          ])
          // The clipboard write's own media type, not the default.
          expect(seen[1].headers["content-type"]).toBe("text/plain; charset=utf-8")
        })
    ))
})

describe("transformClient", () => {
  /** A transform that counts the requests it sees, remembers their User-Agent, and adds a header of its own. */
  const counting = () => {
    const sawUserAgents: Array<string | undefined> = []
    const transformClient = (client: HttpClient.HttpClient) =>
      client.pipe(
        HttpClient.tapRequest((request) => Effect.sync(() => sawUserAgents.push(request.headers["user-agent"]))),
        HttpClient.mapRequest(HttpClientRequest.setHeader("x-transformed", "yes"))
      )
    return { sawUserAgents, transformClient }
  }

  it.live("applies to every request over the toolkit's own client, and sees the toolkit's headers", () => {
    const { sawUserAgents, transformClient } = counting()
    return withServer({ transformClient }, (seen) =>
      Effect.gen(function*() {
        yield* readSecret
        yield* writeClipboard
        yield* Effect.flip(Effect.flatMap(Secrets, (secrets) => secrets.create("BAD NAME", Redacted.make("v"))))
        expect(sawUserAgents).toEqual([userAgent, userAgent])
        expect(seen.map((request) => request.headers["x-transformed"])).toEqual(["yes", "yes"])
      }))
  })

  it.live("applies over another HttpClient (NodeHttpClient.layerUndici)", () => {
    const { sawUserAgents, transformClient } = counting()
    return withServer(
      { transformClient },
      (seen) =>
        Effect.gen(function*() {
          yield* readSecret
          yield* writeClipboard
          expect(sawUserAgents).toHaveLength(2)
          expect(seen.map((request) => request.headers["x-transformed"])).toEqual(["yes", "yes"])
        }),
      (options) => Boxkit.layerWithoutHttpClient(options).pipe(Layer.provide(NodeHttpClient.layerUndici))
    )
  })

  it.live("its requests are still bounded by the attempt timeout (the toolkit's own client, transformed)", () => {
    const { transformClient } = counting()
    return withServer(
      { transformClient, retry: { maxAttempts: 1, attemptTimeout: Duration.millis(100) } },
      () =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(Effect.flatMap(Secrets, (secrets) => secrets.retrieve("SLOW")))
          expect(error).toBeInstanceOf(ApiError.TimeoutError)
        })
    )
  })
})
