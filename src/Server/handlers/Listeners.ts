/**
 * Handlers of the listeners group: publish a port, add a custom domain to an http port, unpublish a port.
 *
 * - Only the creator of a box may publish or unpublish ports or add custom domains (no admin override).
 * - A box without persistence (`image.base: "boxkit/ephemeral"`) answers 409 `conflict_error`: listeners require
 *   persistence.
 * - Unpublish works on running, paused and sleeping boxes and never wakes them; custom domains of the port go with
 *   it (republishing leaves them to register again); a tcp address returns to the organization's pool, from which
 *   the next tcp publish of any of its boxes takes it; a republished port answers its new address.
 * - Boxes that are gone (terminated, failed, ...) answer 409 `failed_precondition`; publishing a port that is already
 *   published, or a hostname already registered in the organization, answers 409 `already_exists`.
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}" rules 1-3, States table, "Authentication" 7.
 * Publish and custom-domain shapes: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as ApiError from "../../ApiError.js"
import { BoxServiceApi, OwnerOverrideHeader } from "../../Contract/Api.js"
import { Principal } from "../../Contract/Principal.js"
import { BoxId } from "../../Domain/Ids.js"
import { operate } from "../boxes/BoxAccess.js"
import * as ContractRoutes from "../http/fast/ContractRoutes.js"
import { EgressPolicies, type BoxRecord, Boxes, type ListenerRecord, TcpAddresses } from "../state/Repositories.js"
import { httpAddress, toListener } from "./Boxes.js"

/** Statuses in which a box keeps listeners: every status but the ones of a box that is gone or never started. */
const goneStatuses: ReadonlySet<string> = new Set([
  "terminating",
  "terminated",
  "failed",
  "create_failed",
  "interrupted_unsafe_to_retry"
])

/** 409 for boxes without persistence or that are gone. */
const requireListenable = (box: BoxRecord): Effect.Effect<void, ApiError.ConflictError> => {
  if (!box.persistent) {
    return Effect.fail(ApiError.make.conflict(
      `Box ${box.id} has no persistence: listeners require persistence.`,
      "failed_precondition"
    ))
  }
  if (goneStatuses.has(box.status)) {
    return Effect.fail(ApiError.make.conflict(`Box ${box.id} is ${box.status}; it has no listeners.`, "failed_precondition"))
  }
  return Effect.void
}

const notPublished = (box: BoxRecord, port: number) =>
  ApiError.make.notFound(`Port ${port} is not published on box ${box.id}.`, "guest_port")

/** The listeners handlers. */
export const layer = ContractRoutes.group(BoxServiceApi, "listeners", (handlers) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    const tcpAddresses = yield* TcpAddresses
    const policies = yield* EgressPolicies

    /** True when the box's egress policy (inline or saved) sets `no_network: true`. */
    const hasNoNetwork = (box: BoxRecord) =>
      Effect.gen(function*() {
        if (box.egressPolicy === null) return false
        if (typeof box.egressPolicy !== "string") return box.egressPolicy.no_network === true
        const saved = yield* policies.get(box.orgId, box.egressPolicy)
        return saved._tag === "Some" && saved.value.document.no_network === true
      })

    return handlers
      .handle("publish", ({ headers, path, payload }) =>
        Effect.flatMap(Principal, (principal) =>
          operate(principal, path.box_id, "publish ports", headers[OwnerOverrideHeader], "creatorOnly", (box) =>
            Effect.gen(function*() {
              yield* requireListenable(box)
              if (box.listeners.some((listener) => listener.guest_port === payload.guest_port)) {
                return yield* Effect.fail(ApiError.make.conflict(
                  `Port ${payload.guest_port} is already published on box ${box.id}.`,
                  "already_exists",
                  "guest_port"
                ))
              }
              if (yield* hasNoNetwork(box)) {
                return yield* Effect.fail(ApiError.make.conflict(
                  `Box ${box.id} has an egress policy with no_network: true; it cannot publish ports.`,
                  "failed_precondition"
                ))
              }
              const protocol = payload.protocol ?? "http"
              const listener: ListenerRecord = {
                guest_port: payload.guest_port,
                protocol,
                address: protocol === "tcp"
                  ? yield* tcpAddresses.take(box.orgId)
                  : httpAddress(box.id, payload.guest_port),
                customDomains: []
              }
              const outcome = { added: false }
              yield* boxes.update(box.id, (record) => {
                if (record.listeners.some((entry) => entry.guest_port === listener.guest_port)) return record
                outcome.added = true
                return { ...record, listeners: [...record.listeners, listener] }
              })
              if (!outcome.added) {
                // A concurrent publish of the same port won: give the address back.
                if (protocol === "tcp") yield* tcpAddresses.release(box.orgId, listener.address)
                return yield* Effect.fail(ApiError.make.conflict(
                  `Port ${payload.guest_port} is already published on box ${box.id}.`,
                  "already_exists",
                  "guest_port"
                ))
              }
              return toListener(listener)
            }))))
      .handle("addDomain", ({ headers, path, payload }) =>
        Effect.flatMap(Principal, (principal) =>
          operate(principal, path.box_id, "add custom domains", headers[OwnerOverrideHeader], "creatorOnly", (box) =>
            Effect.gen(function*() {
              yield* requireListenable(box)
              const listener = box.listeners.find((entry) => entry.guest_port === path.guest_port)
              if (listener === undefined) return yield* Effect.fail(notPublished(box, path.guest_port))
              if (listener.protocol !== "http") {
                return yield* Effect.fail(ApiError.make.conflict(
                  `Port ${path.guest_port} of box ${box.id} is a tcp port; custom domains serve http ports.`,
                  "failed_precondition"
                ))
              }
              if (yield* boxes.hasCustomDomain(box.orgId, payload.hostname)) {
                return yield* Effect.fail(ApiError.make.conflict(
                  `The hostname ${payload.hostname} is already registered in this organization.`,
                  "already_exists",
                  "hostname"
                ))
              }
              const outcome: { updated?: ListenerRecord } = {}
              yield* boxes.update(box.id, (record) => ({
                ...record,
                listeners: record.listeners.map((entry) => {
                  if (entry.guest_port !== path.guest_port) return entry
                  outcome.updated = { ...entry, customDomains: [...entry.customDomains, payload.hostname] }
                  return outcome.updated
                })
              }))
              if (outcome.updated === undefined) return yield* Effect.fail(notPublished(box, path.guest_port))
              return toListener(outcome.updated)
            }))))
      .handle("unpublish", ({ headers, path }) =>
        Effect.flatMap(Principal, (principal) =>
          operate(principal, path.box_id, "unpublish ports", headers[OwnerOverrideHeader], "creatorOnly", (box) =>
            Effect.gen(function*() {
              yield* requireListenable(box)
              // Removed in one atomic update (status left as it is: unpublishing never wakes a box), so a concurrent
              // unpublish of the same port finds nothing and the address is released once.
              const outcome: { removed?: ListenerRecord } = {}
              yield* boxes.update(box.id, (record) => {
                outcome.removed = record.listeners.find((entry) => entry.guest_port === path.guest_port)
                return outcome.removed === undefined
                  ? record
                  : { ...record, listeners: record.listeners.filter((entry) => entry.guest_port !== path.guest_port) }
              })
              const removed = outcome.removed
              if (removed === undefined) return yield* Effect.fail(notPublished(box, path.guest_port))
              if (removed.protocol === "tcp") yield* tcpAddresses.release(box.orgId, removed.address)
              return { box_id: BoxId.make(box.id, true), guest_port: path.guest_port }
            }))))
  }))
