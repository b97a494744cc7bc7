/**
 * The lean contract client (ContractClient.ts) against `HttpApiClient.makeWith` as the oracle: for every kind of
 * endpoint of the contract (JSON payload, path parameters, headers, URL params, a raw byte payload, DELETE, 201 and
 * 202 answers, `withResponse`) both send the same request (method, URL, headers, body bytes) over the same recording
 * `HttpClient` and decode the same value. Then its own rules: answers of 400 or more go to `onErrorStatus`, a success
 * status the endpoint does not declare is a `ResponseError`, bad JSON and schema mismatches are `ParseError`s, an input
 * that does not encode fails before any request, and a retried effect sends the same request again.
 */
import { HttpApiClient, HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, ParseResult, Schema } from "effect"
import * as ContractClient from "../../src/Client/ContractClient.js"
import { BoxServiceApi } from "../../src/Contract/Api.js"
import { EgressPolicyId } from "../../src/Domain/Ids.js"
import { SecretName } from "../../src/Domain/Secret.js"
import { appId, boxId, boxRecord } from "../support/Fixtures.js"

const policyId = EgressPolicyId.make("ep_00000000-0000-4000-8000-0000000000bb")
const modelResponse = { id: "resp_1", object: "response", created_at: 1, status: "queued", model: "m" }

/** The canned answer for a path: status and JSON body. */
const answerFor = (path: string): { readonly status: number; readonly body: unknown } => {
  if (path.endsWith("/apps/find")) return { status: 200, body: { id: appId, name: "a", created_at: 1 } }
  if (path.includes("/secrets/")) {
    return { status: 200, body: { org_id: "org_acme", name: "A", created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" } }
  }
  if (path.includes("/egress-policies/")) {
    return {
      status: 200,
      body: { id: policyId, org_id: "org_acme", name: "n", document: {}, created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" }
    }
  }
  if (path.endsWith("/v1/boxes")) return { status: 201, body: { box_id: boxId, status: "creating" } }
  if (path.includes("/listeners/")) return { status: 200, body: { box_id: boxId, guest_port: 8080 } }
  if (path.endsWith("/resize") || path.endsWith("/clipboard")) return { status: 200, body: {} }
  if (path.endsWith("/v1/responses")) return { status: 202, body: modelResponse }
  return { status: 200, body: boxRecord }
}

interface Sent {
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string
}

/** An HttpClient that records what is sent and answers {@link answerFor} (or `answer` when given). */
const recording = (answer?: (url: URL) => Response) => {
  const sent: Array<Sent> = []
  const client = HttpClient.make((request, url) =>
    Effect.sync(() => {
      sent.push({
        method: request.method,
        url: url.toString(),
        // (The platform's HttpClient.make adds a fresh trace context to each request: left out of the comparison.)
        headers: Object.fromEntries(Object.entries(request.headers).filter(([name]) => name !== "traceparent" && name !== "b3")),
        body: request.body._tag === "Uint8Array" ? Buffer.from(request.body.body).toString("latin1") : ""
      })
      if (answer !== undefined) return HttpClientResponse.fromWeb(request, answer(url))
      const { body, status } = answerFor(url.pathname)
      return HttpClientResponse.fromWeb(request, new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } }))
    })
  )
  return { sent, client }
}

const baseUrl = "http://box.test"
const onErrorStatus = (response: HttpClientResponse.HttpClientResponse) => Effect.fail(`status ${response.status}` as const)

/** Every kind of call the contract has, as a function of a client (both clients have the same shape). */
const calls = (client: any): Record<string, Effect.Effect<any, any>> => ({
  appsFind: client.apps.find({ payload: { name: "a", mint_if_missing: true } }),
  secretRetrieve: client.secrets.retrieve({ path: { name: SecretName.make("A_1") } }),
  boxRetrieve: client.boxes.retrieve({ path: { box_id: boxId }, headers: { "x-box-owner-override-reason": "audit 1" } }),
  boxCreate: client.boxes.create({
    payload: { name: " b ", app_id: appId, image: { base: "debian" }, max_lifetime_seconds: null },
    headers: { "idempotency-key": "key-1" },
    withResponse: true
  }),
  resize: client.exec.resize({
    path: { box_id: boxId, exec_id: "-" },
    urlParams: { exec_request_id: "exec/1 2?&" },
    headers: {},
    payload: { cols: 80, rows: 24 }
  }),
  unpublish: client.listeners.unpublish({ path: { box_id: boxId, guest_port: 8080 }, headers: {} }),
  clipboard: client.clipboard.write({ path: { box_id: boxId }, headers: {}, payload: new Uint8Array([0, 1, 254, 255]) }),
  rename: client.egressPolicies.rename({ path: { policy_id: policyId }, payload: { name: "renamed" } }),
  responseCreate: client.responses.create({
    payload: { model: "m", input: "hi", background: true, metadata: { a: "b" } },
    headers: { "idempotency-key": "key-2", "x-completion-window": "flex" },
    withResponse: true
  })
})

/** A value as compared: `[value, response]` answers keep the value and the status. */
const comparableValue = (value: unknown) =>
  Array.isArray(value) && value.length === 2 && typeof (value[1] as any)?.status === "number"
    ? [value[0], (value[1] as HttpClientResponse.HttpClientResponse).status]
    : value

describe("ContractClient", () => {
  it.effect("sends and decodes exactly what HttpApiClient.makeWith does, for every kind of endpoint", () =>
    Effect.gen(function*() {
      const viaOracle = recording()
      const oracle = yield* HttpApiClient.makeWith(BoxServiceApi, {
        httpClient: viaOracle.client.pipe(HttpClient.mapRequest(HttpClientRequest.setHeader("authorization", "Bearer sk"))),
        baseUrl
      })
      const viaLean = recording()
      const lean = ContractClient.make(BoxServiceApi, {
        httpClient: viaLean.client,
        baseUrl,
        headers: { authorization: "Bearer sk" },
        onErrorStatus
      })
      const oracleCalls = calls(oracle)
      const leanCalls = calls(lean)
      for (const name of Object.keys(oracleCalls)) {
        const expected = yield* Effect.either(oracleCalls[name])
        const actual = yield* Effect.either(leanCalls[name])
        expect(Either.isRight(actual), name).toBe(true)
        expect(Either.isRight(expected), name).toBe(true)
        if (Either.isRight(actual) && Either.isRight(expected)) {
          expect(comparableValue(actual.right), name).toEqual(comparableValue(expected.right))
        }
        expect(viaLean.sent.at(-1), name).toEqual(viaOracle.sent.at(-1))
      }
      expect(viaLean.sent).toHaveLength(Object.keys(oracleCalls).length)
    }))

  it.effect("answers of 400 or more go to onErrorStatus; an undeclared success status is a ResponseError", () =>
    Effect.gen(function*() {
      for (const status of [400, 401, 404, 409, 429, 500, 503]) {
        const { client } = recording(() => new Response("{}", { status }))
        const lean = ContractClient.make(BoxServiceApi, { httpClient: client, baseUrl, onErrorStatus })
        expect(yield* Effect.flip(lean.apps.find({ payload: { name: "a", mint_if_missing: true } }))).toBe(`status ${status}`)
      }
      const { client } = recording(() => new Response("{}", { status: 203 }))
      const lean = ContractClient.make(BoxServiceApi, { httpClient: client, baseUrl, onErrorStatus })
      const failure = yield* Effect.flip(lean.apps.find({ payload: { name: "a", mint_if_missing: true } }))
      expect(failure).toBeInstanceOf(HttpClientError.ResponseError)
      expect((failure as HttpClientError.ResponseError).reason).toBe("Decode")
    }))

  it.effect("bad JSON and schema mismatches are ParseErrors; an input that does not encode fails before any request", () =>
    Effect.gen(function*() {
      const badJson = recording(() => new Response("{not json", { status: 200 }))
      const lean = ContractClient.make(BoxServiceApi, { httpClient: badJson.client, baseUrl, onErrorStatus })
      expect(ParseResult.isParseError(yield* Effect.flip(lean.apps.find({ payload: { name: "a", mint_if_missing: true } }))))
        .toBe(true)
      const mismatch = recording(() => new Response(JSON.stringify({ id: 1 }), { status: 200 }))
      const other = ContractClient.make(BoxServiceApi, { httpClient: mismatch.client, baseUrl, onErrorStatus })
      expect(ParseResult.isParseError(yield* Effect.flip(other.apps.find({ payload: { name: "a", mint_if_missing: true } }))))
        .toBe(true)
      const unsent = recording()
      const third = ContractClient.make(BoxServiceApi, { httpClient: unsent.client, baseUrl, onErrorStatus })
      const failure = yield* Effect.flip(third.exec.resize({
        path: { box_id: boxId, exec_id: "x" },
        urlParams: {},
        headers: {},
        payload: { cols: 0, rows: 24 } as any
      }))
      expect(ParseResult.isParseError(failure)).toBe(true)
      expect(unsent.sent).toEqual([])
    }))

  it.effect("a call's effect run again (a retry) sends the same request again", () =>
    Effect.gen(function*() {
      const { client, sent } = recording()
      const lean = ContractClient.make(BoxServiceApi, { httpClient: client, baseUrl, onErrorStatus })
      const create = lean.boxes.create({
        payload: { name: "b", app_id: appId, image: { base: "debian" } },
        headers: { "idempotency-key": "same" }
      })
      yield* create
      yield* create
      expect(sent).toHaveLength(2)
      expect(sent[1]).toEqual(sent[0])
      expect(Schema.is(Schema.Struct({ "idempotency-key": Schema.Literal("same") }))(sent[0].headers)).toBe(true)
    }))
})

describe("ContractClient.pathOf", () => {
  it("is the contract's path of an endpoint, with its parameters put in", () => {
    expect(ContractClient.pathOf(BoxServiceApi, "clipboard", "write")({ box_id: "sb_1" })).toBe("/v1/boxes/sb_1/clipboard")
    expect(ContractClient.pathOf(BoxServiceApi, "apps", "find")({})).toBe("/v1/apps/find")
    expect(() => ContractClient.pathOf(BoxServiceApi, "clipboard", "read")).toThrow("no endpoint clipboard.read")
  })
})
