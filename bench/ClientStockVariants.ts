/**
 * The calls section 9 (ClientStock.ts) measures: `POST /v1/apps/find` through the toolkit's own modules and through
 * the stock API each one stands in for, with the toolkit's headers (`authorization`, `user-agent`).
 *
 * Source: docs/decisions/0006-client-own-code-or-stock.md.
 *
 * @since 0.1.0
 */
import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Apps } from "../src/Client/Apps.js"
import * as Boxkit from "../src/Client/Boxkit.js"
import * as ContractClient from "../src/Client/ContractClient.js"
import { decodeErrorResponse } from "../src/Client/Transport.js"
import { userAgent } from "../src/Client/Version.js"
import { BoxServiceApi } from "../src/Contract/Api.js"
import * as UndiciHttpClient from "../src/Http/UndiciHttpClient.js"
import * as Scenarios from "./Scenarios.js"

/** A call, run again and again by each fiber of a measured run. */
export type Call = Effect.Effect<unknown, unknown>

/** Makes the call of one side from the services of its runtime. */
export type MakeCall = Effect.Effect<Call, never, HttpClient.HttpClient | Apps>

/** The toolkit's own `HttpClient` (what `Boxkit.layer` runs on). */
export const ownHttpClient: Layer.Layer<HttpClient.HttpClient> = UndiciHttpClient.layer

/** The toolkit's services on the service at `origin`, over `httpClient`, which the runtime also offers. */
export const withApps = (origin: string, httpClient: Layer.Layer<HttpClient.HttpClient>) =>
  Boxkit.layerWithoutHttpClient({ apiKey: Scenarios.apiKey, baseUrl: `${origin}/v1` }).pipe(
    Layer.provideMerge(httpClient)
  )

const headers = { authorization: `Bearer ${Scenarios.apiKey}`, "user-agent": userAgent }
const payload = { name: "bench-app", mint_if_missing: true }

/** `apps.find` through the contract's client: the toolkit's `ContractClient` and `@effect/platform`'s `HttpApiClient`. */
export const calls = (origin: string): { readonly contractClient: MakeCall; readonly httpApiClient: MakeCall } => ({
  contractClient: Effect.map(HttpClient.HttpClient, (httpClient) => {
    const client = ContractClient.make(BoxServiceApi, { httpClient, baseUrl: origin, headers, onErrorStatus: decodeErrorResponse })
    return Effect.suspend(() => client.apps.find({ payload }))
  }),
  httpApiClient: Effect.flatMap(HttpClient.HttpClient, (httpClient) =>
    Effect.map(
      HttpApiClient.makeWith(BoxServiceApi, {
        // The same headers, and the answer read whole by the toolkit's client (other clients ignore the mark).
        httpClient: HttpClient.mapRequest(httpClient, (request) =>
          UndiciHttpClient.readWhole(HttpClientRequest.setHeaders(request, headers))),
        baseUrl: origin
      }),
      (client) => Effect.suspend(() => client.apps.find({ payload }))
    ))
})

/** `make`'s call bounded by a 30 s timeout: the toolkit's client deadline, or Effect's own. */
export const timed = (make: MakeCall, kind: "deadline" | "effect"): MakeCall =>
  Effect.map(make, (call): Call => {
    const millis = 30_000
    const onExpire = () => new Error("timed out")
    switch (kind) {
      case "deadline":
        return Effect.suspend(() => UndiciHttpClient.withDeadline(call, { atMillis: Date.now() + millis, onExpire }))
      case "effect":
        return Effect.timeoutFail(call, { duration: millis, onTimeout: onExpire })
    }
  })

/** The toolkit's `Apps.find` (everything a user's call runs: validation, transport, retries, timeouts, span). */
export const appsFind: MakeCall = Effect.map(Apps, (apps) => Effect.suspend(() => apps.find("bench-app", { mintIfMissing: true })))
