/**
 * The answer beside an operation's value: {@link withResponse} runs client operations and answers their value with
 * the status and headers of the HTTP answer it came from; the transport records each answer in the
 * {@link ResponseSlot} of the current fiber.
 *
 * Source: docs/ASSUMPTIONS.md "Client" (answer metadata).
 *
 * @since 0.1.0
 */
import type { Headers, HttpClientResponse } from "@effect/platform"
import { Effect, FiberRef } from "effect"
import { globalValue } from "effect/GlobalValue"

/**
 * What the service answered beside an operation's value (see {@link withResponse}): the HTTP `status` and the
 * answer's `headers` (names in lower case; e.g. `idempotent-replayed`, `retry-after`, `content-type`). The spec
 * names no request-id header, so there is no request id field: a service that sends one (e.g. `x-request-id`)
 * has it in `headers` (docs/ASSUMPTIONS.md "Client").
 *
 * @since 0.1.0
 * @category Models
 */
export interface ResponseMetadata {
  readonly status: number
  readonly headers: Headers.Headers
}

/**
 * An operation's value with the {@link ResponseMetadata} of the answer it came from ({@link withResponse}).
 *
 * @since 0.1.0
 * @category Models
 */
export interface WithResponse<A> {
  readonly value: A
  readonly response: ResponseMetadata
}

/**
 * Where {@link withResponse} collects the answers of the calls it runs; also hands each one to the enclosing one.
 *
 * @since 0.1.0
 * @category Models
 */
export class ResponseSlot {
  response: HttpClientResponse.HttpClientResponse | undefined = undefined
  constructor(private readonly outer: ResponseSlot | undefined) {}
  record(response: HttpClientResponse.HttpClientResponse): void {
    this.response = response
    this.outer?.record(response)
  }
}

/**
 * The {@link withResponse} collecting the answers of the current fiber's calls, if any (none by default).
 *
 * @since 0.1.0
 * @category Fiber refs
 */
export const currentResponseSlot: FiberRef.FiberRef<ResponseSlot | undefined> = globalValue(
  Symbol.for("boxkit/Transport/currentResponseSlot"),
  () => FiberRef.unsafeMake<ResponseSlot | undefined>(undefined)
)

/**
 * Runs `self` (any client operation, e.g. `boxes.create(request)`) and answers its value with the status and
 * headers of the HTTP answer it came from: `{ value, response: { status, headers } }` (the `withResponse()` of
 * other SDKs, as a combinator: `boxes.retrieve(id).pipe(Transport.withResponse)`). After retries, the answer is
 * the last attempt's (the one that succeeded). When `self` makes several calls (a wait that polls, a workflow), the
 * answer is the last one received. Failures are `self`'s, unchanged. Dies when `self` succeeds without any HTTP
 * answer through this client (it was not a client operation).
 *
 * Source: docs/ASSUMPTIONS.md "Client" (answer metadata).
 *
 * @since 0.1.0
 * @category Combinators
 */
export const withResponse = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<WithResponse<A>, E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const slot = new ResponseSlot(fiber.getFiberRef(currentResponseSlot))
    return Effect.flatMap(Effect.locally(self, currentResponseSlot, slot), (value) => {
      const response = slot.response
      if (response === undefined) {
        return Effect.dieMessage("Transport.withResponse: the effect succeeded without an HTTP answer from the client")
      }
      return Effect.succeed({ value, response: { status: response.status, headers: response.headers } })
    })
  })
