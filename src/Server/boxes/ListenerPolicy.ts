/**
 * The listener policy of the local service, in one place: when a box may have published ports (listeners), and the
 * addresses they take. Create box (its `ingress_ports`), publish, custom domains, unpublish and termination apply it.
 *
 * Rules:
 * 1. Listeners require persistence: a listener operation on a box without persistence, and a create with
 *    `ingress_ports` on an image without persistence, answer 409 `conflict_error` code `failed_precondition`
 *    ({@link requirePersistence}). Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}" errors
 *    (409: listeners require persistence), Errors table (409); at create: docs/ASSUMPTIONS.md "Boxes (local service)".
 * 2. A box that is gone (a BoxLifecycle end status) has no listeners: 409 `failed_precondition`
 *    ({@link requireListenable}). Source: docs/ASSUMPTIONS.md "Boxes (local service)".
 * 3. `no_network` against published ports, two situations with two answers:
 *    - no network at creation: `no_network: true` with a non-empty `ingress_ports` is a request rejected, 400
 *      `invalid_request_error` param `ingress_ports` (spec: Egress policy, "Cannot be combined with ingress_ports at
 *      box creation"; Create a box, egress_policy). An inline document is refused by the request's schema
 *      (`Box.CreateBoxRequest`, through `EgressPolicy.cutsNetwork`) before any handler runs; a saved policy by
 *      {@link refuseNoNetworkAtCreation}.
 *    - no network on publish: publishing a port later on a box whose policy has `no_network: true` is a 409
 *      `failed_precondition` ({@link refuseNoNetworkOnPublish}): the request is well formed, the box's state refuses
 *      it. The spec does not show this case (docs/ASSUMPTIONS.md "Boxes (local service)").
 * 4. Addresses: an http listener is `https://{port}-{uuid}.boxes.localhost` ({@link httpAddress}); a tcp listener
 *    takes an address from its organization's pool ({@link takeListener}), and every tcp address goes back to that
 *    pool when its listener goes ({@link releaseAddresses}): unpublished, its box terminated, its create refused, or
 *    a concurrent publish of the same port won. Source: spec "DELETE .../listeners/{guest_port}" rule 3 (an
 *    unpublished tcp address stays inside the organization); address forms: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import type { IngressPort } from "../../Domain/Box.js"
import * as BoxLifecycle from "../../Domain/BoxLifecycle.js"
import { cutsNetwork, type PolicyDocument } from "../../Domain/EgressPolicy.js"
import type { BoxRecord, EgressPolicies, ListenerRecord, TcpAddresses } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"

/**
 * Rule 1, listeners require persistence: fails with 409 `conflict_error` `failed_precondition` when `persistent` is
 * false. `subject` names what lacks persistence in the message (`Box sb_…`, `The image boxkit/ephemeral`); `param`
 * names the request field the refusal is about, when one is (`ingress_ports` at create).
 *
 * @since 0.1.0
 * @category Rules
 */
export const requirePersistence = (
  persistent: boolean,
  subject: string,
  param: string | null = null
): Effect.Effect<void, ApiError.ConflictError> =>
  persistent
    ? Effect.void
    : Effect.fail(ApiError.make.conflict(
      `${subject} has no persistence: listeners require persistence.`,
      "failed_precondition",
      param
    ))

/**
 * Rules 1 and 2 for a listener operation on `box`: 409 `failed_precondition` when the box has no persistence, or is
 * gone (BoxLifecycle `isEnded`).
 *
 * @since 0.1.0
 * @category Rules
 */
export const requireListenable = (box: BoxRecord): Effect.Effect<void, ApiError.ConflictError> =>
  Effect.zipRight(
    requirePersistence(box.persistent, `Box ${box.id}`),
    BoxLifecycle.isEnded(box.status)
      ? Effect.fail(ApiError.make.conflict(`Box ${box.id} is ${box.status}; it has no listeners.`, "failed_precondition"))
      : Effect.void
  )

/**
 * Rule 3, no network at creation, for a saved policy's `document`: 400 `invalid_request_error` param `ingress_ports`
 * when it sets `no_network: true` and the request publishes `ingressPorts` ports (more than none).
 *
 * @since 0.1.0
 * @category Rules
 */
export const refuseNoNetworkAtCreation = (
  document: PolicyDocument,
  ingressPorts: number
): Effect.Effect<void, ApiError.InvalidRequestError> =>
  cutsNetwork(document) && ingressPorts > 0
    ? Effect.fail(ApiError.make.invalidRequest(
      "ingress_ports: the egress policy sets no_network: true, which cannot be combined with ingress_ports.",
      "ingress_ports"
    ))
    : Effect.void

/**
 * Rule 3, no network on publish: 409 `failed_precondition` when `box`'s egress policy (inline, or saved in `policies`)
 * sets `no_network: true`. A saved policy that no longer exists gives the box no such restriction. `StoreError` when
 * the store fails to read the saved policy.
 *
 * @since 0.1.0
 * @category Rules
 */
export const refuseNoNetworkOnPublish = (
  box: BoxRecord,
  policies: EgressPolicies["Type"]
): Effect.Effect<void, ApiError.ConflictError | StoreError> =>
  Effect.gen(function*() {
    if (box.egressPolicy === null) return
    const document = typeof box.egressPolicy === "string"
      ? Option.getOrUndefined(Option.map(yield* policies.get(box.orgId, box.egressPolicy), (saved) => saved.document))
      : box.egressPolicy
    if (document !== undefined && cutsNetwork(document)) {
      return yield* Effect.fail(ApiError.make.conflict(
        `Box ${box.id} has an egress policy with no_network: true; it cannot publish ports.`,
        "failed_precondition"
      ))
    }
  })

/**
 * Rule 4: the public address of http listener `port` of box `boxId` (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 * @category Addresses
 */
export const httpAddress = (boxId: string, port: number): string =>
  `https://${port}-${boxId.slice(3)}.boxes.localhost`

/**
 * Rule 4: the listener of `port` (protocol `http` when not given) on box `boxId` of organization `orgId`, with its
 * address: a tcp port takes one from the organization's pool in `tcpAddresses` (give it back with
 * {@link releaseAddresses} if the listener is not kept). `StoreError` when the store fails to take the address.
 *
 * @since 0.1.0
 * @category Addresses
 */
export const takeListener = (
  tcpAddresses: TcpAddresses["Type"],
  orgId: string,
  boxId: string,
  port: IngressPort
): Effect.Effect<ListenerRecord, StoreError> => {
  const protocol = port.protocol ?? "http"
  return Effect.map(
    protocol === "tcp" ? tcpAddresses.take(orgId) : Effect.succeed(httpAddress(boxId, port.guest_port)),
    (address): ListenerRecord => ({ guest_port: port.guest_port, protocol, address, customDomains: [] })
  )
}

/**
 * Rule 4: gives the tcp addresses of `listeners` (of a box of organization `orgId`) back to its pool; `StoreError`
 * when the store fails to keep them.
 *
 * @since 0.1.0
 * @category Addresses
 */
export const releaseAddresses = (
  tcpAddresses: TcpAddresses["Type"],
  orgId: string,
  listeners: ReadonlyArray<ListenerRecord>
): Effect.Effect<void, StoreError> =>
  Effect.forEach(
    listeners,
    (listener) => listener.protocol === "tcp" ? tcpAddresses.release(orgId, listener.address) : Effect.void,
    { discard: true }
  )
