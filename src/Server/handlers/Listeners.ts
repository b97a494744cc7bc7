/**
 * Handlers of the listeners group: publish a port, add a custom domain to an http port, unpublish a port.
 *
 * - Only the creator of a box may publish or unpublish ports or add custom domains (no admin override).
 * - When a box may have listeners (persistence, not gone, `no_network` on publish) and the addresses they take and
 *   give back: ListenerPolicy.ts.
 * - Unpublish works on running, paused and sleeping boxes and never wakes them; custom domains of the port go with
 *   it (republishing leaves them to register again); a republished port answers its new address.
 * - Publishing a port that is already published, or a hostname already registered in the organization, answers 409
 *   `already_exists`.
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
import * as ListenerPolicy from "../boxes/ListenerPolicy.js"
import * as HandlerGroups from "../http/HandlerGroups.js"
import { EgressPolicies, type BoxRecord, Boxes, type ListenerRecord, TcpAddresses } from "../state/Repositories.js"
import { toListener } from "./Boxes.js"

const notPublished = (box: BoxRecord, port: number) =>
  ApiError.make.notFound(`Port ${port} is not published on box ${box.id}.`, "guest_port")

/** The listeners handlers. */
export const layer = HandlerGroups.group(BoxServiceApi, "listeners", (handlers) =>
  Effect.gen(function*() {
    const boxes = yield* Boxes
    const tcpAddresses = yield* TcpAddresses
    const policies = yield* EgressPolicies

    return handlers
      .handle("publish", ({ headers, path, payload }) =>
        Effect.flatMap(Principal, (principal) =>
          operate(principal, path.box_id, "publish ports", headers[OwnerOverrideHeader], "creatorOnly", (box) =>
            Effect.gen(function*() {
              yield* ListenerPolicy.requireListenable(box)
              if (box.listeners.some((listener) => listener.guest_port === payload.guest_port)) {
                return yield* Effect.fail(ApiError.make.conflict(
                  `Port ${payload.guest_port} is already published on box ${box.id}.`,
                  "already_exists",
                  "guest_port"
                ))
              }
              yield* ListenerPolicy.refuseNoNetworkOnPublish(box, policies)
              const listener = yield* ListenerPolicy.takeListener(tcpAddresses, box.orgId, box.id, payload)
              const outcome = { added: false }
              yield* boxes.update(box.id, (record) => {
                if (record.listeners.some((entry) => entry.guest_port === listener.guest_port)) return record
                outcome.added = true
                return { ...record, listeners: [...record.listeners, listener] }
              })
              if (!outcome.added) {
                // A concurrent publish of the same port won: give the address back.
                yield* ListenerPolicy.releaseAddresses(tcpAddresses, box.orgId, [listener])
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
              yield* ListenerPolicy.requireListenable(box)
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
              yield* ListenerPolicy.requireListenable(box)
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
              yield* ListenerPolicy.releaseAddresses(tcpAddresses, box.orgId, [removed])
              return { box_id: BoxId.make(box.id, true), guest_port: path.guest_port }
            }))))
  }))
