/**
 * The `/_local/*` routes of the local service, shared by both serving paths: `GET /_local/` (the inspection page,
 * InspectionPage.ts), `GET /_local/state` (the whole state as JSON, without secret values, API keys or webhook
 * tokens; `faults` counts injected faults and client aborts; `recent_requests` the last `/v1` requests,
 * RecentRequests.ts), `POST /_local/runtime` (`{"guest_schema_version": N}` raises the current runtime version) and
 * `GET`/`POST /_local/snapshot` (the whole state as a snapshot, and restoring one: SnapshotRoutes.ts), `GET
 * /_local/clock` and `POST /_local/clock/advance` (the service's clock, and moving a virtual one: ClockRoutes.ts).
 * They answer only on the loopback interface unless `exposeLocalRoutes` is set, and never to another site's page
 * (LocalRouteGuard.ts).
 *
 * Source: docs/ASSUMPTIONS.md "Local service" (the inspection page).
 *
 * @since 0.1.0
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import * as ApiError from "../../ApiError.js"
import * as BoxRuntime from "../boxes/BoxRuntime.js"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import * as Admission from "../pipeline/Admission.js"
import * as Quotas from "../Quotas.js"
import * as FaultInjection from "../pipeline/FaultInjection.js"
import * as Idempotency from "../pipeline/Idempotency.js"
import * as RequestBody from "../pipeline/RequestBody.js"
import * as ResponseEngine from "../responses/ResponseEngine.js"
import * as Repositories from "../state/Repositories.js"
import * as StateSnapshots from "../state/StateSnapshots.js"
import * as StoreOutage from "../state/StoreOutage.js"
import * as ClockRoutes from "./ClockRoutes.js"
import * as ErrorResponse from "./ErrorResponse.js"
import * as InspectionPage from "./InspectionPage.js"
import * as LocalRouteGuard from "./LocalRouteGuard.js"
import * as RecentRequests from "./RecentRequests.js"
import * as SnapshotRoutes from "./SnapshotRoutes.js"

/**
 * The state as `GET /_local/state` shows it: no secret values, no API keys, no webhook tokens.
 *
 * @since 0.1.0
 * @category Inspection
 */
export const inspectState = Effect.gen(function*() {
  const identity = yield* Repositories.Identity
  const boxes = yield* Repositories.Boxes
  const apps = yield* Repositories.Apps
  const policies = yield* Repositories.EgressPolicies
  const secrets = yield* Repositories.Secrets
  const logs = yield* Repositories.Logs
  const responses = yield* Repositories.Responses
  const idempotency = yield* Idempotency.IdempotencyStore
  const runtime = yield* BoxRuntime.BoxRuntime
  const admission = yield* Admission.Admission
  const engine = yield* ResponseEngine.ResponseEngine
  const config = yield* LocalServiceConfig
  const usageOf = (orgId: string) =>
    Effect.gen(function*() {
      const held = yield* boxes.usage(orgId)
      return {
        boxes: held.activeBoxes,
        background_responses: yield* engine.backgroundInFlight(orgId),
        stored_bytes: held.clipboardBytes + (yield* responses.storedBytes(orgId)) + (yield* idempotency.storedBytes(orgId)),
        secrets: yield* secrets.count(orgId),
        egress_policies: yield* policies.count(orgId),
        apps: yield* apps.count(orgId)
      }
    })
  return {
    guest_schema_version: yield* runtime.currentVersion,
    in_flight: yield* admission.inFlight,
    draining: yield* admission.isDraining,
    idempotency_keys: yield* idempotency.size,
    quotas: {
      boxes: config.quotas.boxes,
      background_responses: config.quotas.backgroundResponses,
      stored_bytes: config.quotas.storedBytes,
      secrets: Quotas.countLimit(config.quotas, "secrets"),
      egress_policies: Quotas.countLimit(config.quotas, "egress_policies"),
      apps: Quotas.countLimit(config.quotas, "apps"),
      idempotency_keys_per_api_key: config.quotas.idempotencyKeys ?? Quotas.defaultIdempotencyKeys,
      idempotency_bytes_per_api_key: config.quotas.idempotencyBytes ?? Quotas.defaultIdempotencyBytes
    },
    organizations: yield* Effect.forEach(yield* identity.organizations, (organization) =>
      Effect.map(usageOf(organization.id), (usage) => ({
        id: organization.id,
        credits: organization.credits,
        created_at: new Date(organization.createdAtMillis).toISOString(),
        usage
      }))),
    boxes: (yield* boxes.list).map((box) => ({
      id: box.id,
      org_id: box.orgId,
      name: box.name,
      app_id: box.appId,
      status: box.status,
      error_message: box.errorMessage ?? null,
      visibility: box.visibility,
      guest_schema_version: box.guestSchemaVersion,
      pending_upgrade: box.pendingUpgrade,
      boot_count: box.bootCount,
      listeners: box.listeners,
      clipboard: box.clipboard === null ? null : { media_type: box.clipboard.mediaType, bytes: box.clipboard.bytes.byteLength },
      created_at: new Date(box.createdAtMillis).toISOString(),
      max_lifetime_seconds: box.maxLifetimeSeconds
    })),
    apps: (yield* apps.list).map((app) => ({ id: app.id, org_id: app.orgId, name: app.name, created_at: app.createdAt })),
    egress_policies: (yield* policies.list).map(StateSnapshots.egressPolicyOf),
    responses: (yield* responses.list).map((record) => ({
      id: record.id,
      org_id: record.orgId,
      status: record.object.status,
      webhook: record.webhookUrl !== null,
      first_delivered_at: record.firstDeliveredAtMillis === null ? null : new Date(record.firstDeliveredAtMillis).toISOString()
    })),
    audit_log: yield* logs.auditLog,
    webhook_deliveries: yield* logs.deliveries
  }
})

const RuntimeVersionBody = Schema.Struct({ guest_schema_version: Schema.Int.pipe(Schema.positive()) })

/**
 * The state as `GET /_local/state` answers it: {@link inspectState}, the fault report (`faults`: requests seen,
 * faults injected, client aborts) and the last `/v1` requests answered (`recent_requests`, newest first).
 *
 * @since 0.1.0
 * @category Inspection
 */
export const localState = Effect.gen(function*() {
  const state = yield* inspectState
  const faults = yield* FaultInjection.FaultInjection
  const recent = yield* RecentRequests.RecentRequests
  return { ...state, faults: yield* faults.report, recent_requests: yield* recent.list }
})

/** Options of the HTTP app beyond the service settings. @since 0.1.0 @category Models */
export interface AppOptions {
  /** Serve `/_local/*` to any address, not only loopback (default false). */
  readonly exposeLocalRoutes?: boolean | undefined
}

/** The most bytes of a `/_local/*` request body. */
const localBodyMaxBytes = 1024 * 1024

/**
 * The `/_local/*` routes (loopback only unless `exposeLocalRoutes`), as a function of a request and its path
 * without the query; a body is read with RequestBody.ts (at most 1 MiB). Shared by both serving paths.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const localRoutes = (options: AppOptions = {}) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<
      | Repositories.Identity
      | Repositories.Boxes
      | Repositories.Apps
      | Repositories.EgressPolicies
      | Repositories.Secrets
      | Repositories.Logs
      | Repositories.Responses
      | Idempotency.IdempotencyStore
      | BoxRuntime.BoxRuntime
      | Admission.Admission
      | FaultInjection.FaultInjection
      | ResponseEngine.ResponseEngine
      | LocalServiceConfig
      | RecentRequests.RecentRequests
      | Effect.Effect.Context<ReturnType<typeof SnapshotRoutes.answer>>
      | Effect.Effect.Context<ReturnType<typeof ClockRoutes.answer>>
    >()
    const runtime = yield* BoxRuntime.BoxRuntime
    return (request: HttpServerRequest.HttpServerRequest, path: string) =>
      Effect.gen(function*() {
        const refusal = LocalRouteGuard.check({
          method: request.method,
          remoteAddress: Option.getOrUndefined(request.remoteAddress),
          headers: request.headers
        }, options)
        if (refusal !== undefined) {
          return ErrorResponse.fromApiError(
            refusal._tag === "NotLoopback"
              ? ApiError.make.notFound(refusal.message)
              : refusal._tag === "Foreign"
              ? ApiError.make.permission(refusal.message)
              : ApiError.make.invalidRequest(refusal.message, "Content-Type")
          )
        }
        if (path === InspectionPage.path && request.method === "GET") return InspectionPage.response
        if (path === "/_local/state" && request.method === "GET") {
          return HttpServerResponse.unsafeJson(yield* Effect.provide(localState, context))
        }
        if (path === SnapshotRoutes.path) return yield* Effect.provide(SnapshotRoutes.answer(request), context)
        if (path === "/_local/runtime" && request.method === "POST") {
          const body = yield* Effect.either(
            Effect.flatMap(RequestBody.readJson(request, localBodyMaxBytes), Schema.decodeUnknown(RuntimeVersionBody))
          )
          if (body._tag === "Left") {
            return ErrorResponse.fromApiError(ApiError.make.invalidRequest(
              "Body must be {\"guest_schema_version\": N} with N a positive integer.",
              "guest_schema_version"
            ))
          }
          yield* runtime.setCurrentVersion(body.right.guest_schema_version)
          return HttpServerResponse.unsafeJson({ guest_schema_version: body.right.guest_schema_version })
        }
        if (ClockRoutes.paths.has(path)) return yield* Effect.provide(ClockRoutes.answer(request, path), context)
        return ErrorResponse.fromApiError(ApiError.make.notFound(`No local route ${request.method} ${path}.`))
      }).pipe(
        // A failed state store is answered as on /v1 (StoreOutage.ts): 503 with Retry-After, or 500.
        Effect.catchTag("StoreError", (error) => Effect.map(StoreOutage.answer(error), ErrorResponse.fromApiError))
      )
  })

