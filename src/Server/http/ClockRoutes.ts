/**
 * The clock routes, behind the guard of every `/_local` route (LocalRoutes.ts, LocalRouteGuard.ts):
 *
 * - `GET /_local/clock` answers 200 `{"now": "<RFC 3339>", "mode": "virtual"|"real", "offset_seconds": N}` (the
 *   offset read from the store first, so an advance by another instance on the same database is seen).
 * - `POST /_local/clock/advance` with `{"seconds": N}` (a number from 0 to 315,360,000, fractions allowed) moves a
 *   virtual clock forward by N seconds and answers the same shape once everything that became due in between has
 *   run, in time order (ServiceClock.ts). A body without a valid `seconds` is 400 `invalid_request_error` with
 *   `param` `seconds`; on a real clock (`boxkit serve` without `--clock virtual`) it is 409 `conflict_error` with
 *   `code` `clock_is_real`.
 *
 * Source: docs/ASSUMPTIONS.md "The virtual clock".
 *
 * @since 0.1.0
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Exit, Schema } from "effect"
import * as ApiError from "../../ApiError.js"
import * as ServiceClock from "../clock/ServiceClock.js"
import * as RequestBody from "../pipeline/RequestBody.js"
import * as ErrorResponse from "./ErrorResponse.js"

/** The clock's paths. @since 0.1.0 @category Constants */
export const clockPath = "/_local/clock"

/** The advance's path. @since 0.1.0 @category Constants */
export const advancePath = "/_local/clock/advance"

/** Every path this module answers. @since 0.1.0 @category Constants */
export const paths: ReadonlySet<string> = new Set([clockPath, advancePath])

/** The most bytes of an advance's body. */
const maxBodyBytes = 1024

/** The advance's body: `seconds`, a finite number from 0 to `ServiceClock.maxAdvanceSeconds`. */
const AdvanceBody = Schema.Struct({
  seconds: Schema.Number.pipe(Schema.finite(), Schema.between(0, ServiceClock.maxAdvanceSeconds))
})

/** The 400 of a body that is not `{"seconds": N}` (not JSON, no `seconds`, not a number, negative, too large). */
const badSeconds = ApiError.make.invalidRequest(
  `Body must be {"seconds": N} with N a number of seconds from 0 to ${ServiceClock.maxAdvanceSeconds}.`,
  "seconds"
)

/** The advance: the body decoded (any failure to read or decode it is the 400), the clock moved, its reading. */
const advance = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const body = yield* Effect.exit(
      Effect.flatMap(RequestBody.readJson(request, maxBodyBytes), Schema.decodeUnknown(AdvanceBody))
    )
    if (Exit.isFailure(body)) return ErrorResponse.fromApiError(badSeconds)
    const clock = yield* ServiceClock.ServiceClock
    const advanced = yield* Effect.either(clock.advance(body.value.seconds * 1000))
    if (advanced._tag === "Left") {
      if (advanced.left._tag === "StoreError") return yield* advanced.left
      return ErrorResponse.fromApiError(ApiError.make.conflict(advanced.left.message, "clock_is_real"))
    }
    return HttpServerResponse.unsafeJson(ServiceClock.toJson(advanced.right))
  })

/**
 * The answer of a clock route at `path` (one of {@link paths}); 404 for another method. Fails with `StoreError`
 * when the store that keeps the offset does (LocalRoutes.ts answers it).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const answer = (request: HttpServerRequest.HttpServerRequest, path: string) =>
  Effect.gen(function*() {
    if (path === clockPath && request.method === "GET") {
      const clock = yield* ServiceClock.ServiceClock
      return HttpServerResponse.unsafeJson(ServiceClock.toJson(yield* clock.read))
    }
    if (path === advancePath && request.method === "POST") return yield* advance(request)
    return ErrorResponse.fromApiError(ApiError.make.notFound(`No local route ${request.method} ${path}.`))
  })
