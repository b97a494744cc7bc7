/**
 * `/_local/snapshot`, behind the guard of every `/_local` route (LocalRoutes.ts, LocalRouteGuard.ts):
 *
 * - `GET /_local/snapshot` answers the whole state as a snapshot (Snapshot.ts, `"version": 1`), read in one
 *   consistent view of the store; secret values and webhook tokens only with `?secret_values=include`.
 * - `POST /_local/snapshot` with a snapshot as its JSON body (at most 64 MiB) writes its records into the running
 *   service, each under its own id (a record of the same id is replaced, the others are kept), and answers 200
 *   `{"restored": {...counts}, "secrets_without_value": ["org_id/name", ...]}`; a body that is not a snapshot is
 *   400 `invalid_request_error` naming each member that is not valid.
 *
 * Source: docs/ASSUMPTIONS.md "Snapshots (local service)".
 *
 * @since 0.1.0
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import * as ApiError from "../../ApiError.js"
import * as ParseIssues from "../../ParseIssues.js"
import * as ServiceClock from "../clock/ServiceClock.js"
import * as RequestBody from "../pipeline/RequestBody.js"
import * as Snapshot from "../state/Snapshot.js"
import * as StateSnapshots from "../state/StateSnapshots.js"
import * as ErrorResponse from "./ErrorResponse.js"

/** The route's path. @since 0.1.0 @category Constants */
export const path = "/_local/snapshot"

/** The most bytes of a snapshot posted to the route (64 MiB). @since 0.1.0 @category Constants */
export const maxSnapshotBytes = 64 * 1024 * 1024

/** True when the request's query asks for secret values (`secret_values=include`). */
const wantsSecretValues = (request: HttpServerRequest.HttpServerRequest): boolean =>
  new URL(request.url, "http://localhost").searchParams.get("secret_values") === "include"

/** The snapshot of the running service as the GET answers it, with the service's clock (ServiceClock.ts). */
const answerSnapshot = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const snapshot = yield* StateSnapshots.take({ secretValues: wantsSecretValues(request) })
    const service = yield* Effect.serviceOption(ServiceClock.ServiceClock)
    if (Option.isNone(service)) return HttpServerResponse.unsafeJson(Snapshot.encode(snapshot))
    const clock = ServiceClock.toJson(yield* service.value.read)
    return HttpServerResponse.unsafeJson(Snapshot.encode({ ...snapshot, clock }))
  })

/** The body as a snapshot, or the 400 envelope naming what is not valid. */
const decodeBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(RequestBody.readJson(request, maxSnapshotBytes), (json) =>
    Schema.decodeUnknown(Snapshot.Snapshot, { onExcessProperty: "error", errors: "all" })(json).pipe(
      Effect.mapError((error) => {
        const issues = ParseIssues.issues(error)
        return ApiError.make.invalidRequest(
          `Body is not a snapshot: ${ParseIssues.lines(error, "").join("; ")}`,
          issues[0]?.path === "" || issues[0] === undefined ? null : issues[0].path
        )
      })
    ))

/** Writes a posted snapshot into the state; what it restored and which secrets had no value. */
const restoreSnapshot = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const snapshot = yield* decodeBody(request)
    const report = yield* StateSnapshots.restore(snapshot)
    return HttpServerResponse.unsafeJson({
      restored: {
        organizations: snapshot.organizations.length,
        users: snapshot.users.length,
        api_keys: snapshot.api_keys.length,
        apps: snapshot.apps.length,
        secrets: snapshot.secrets.length - report.secretsWithoutValue.length,
        egress_policies: snapshot.egress_policies.length,
        boxes: snapshot.boxes.length,
        responses: snapshot.responses.length,
        idempotency_keys: snapshot.idempotency_keys.length
      },
      secrets_without_value: report.secretsWithoutValue
    })
  }).pipe(Effect.catchTag("InvalidRequestError", (error) => Effect.succeed(ErrorResponse.fromApiError(error))))

/**
 * Answers a request to {@link path} that the guard let through: GET takes a snapshot, POST restores one, any other
 * method is 404 as an unknown local route. Fails with `StoreError` when a durable store fails.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const answer = (request: HttpServerRequest.HttpServerRequest) =>
  request.method === "GET"
    ? answerSnapshot(request)
    : request.method === "POST"
    ? restoreSnapshot(request)
    : Effect.succeed(ErrorResponse.fromApiError(ApiError.make.notFound(`No local route ${request.method} ${path}.`)))
