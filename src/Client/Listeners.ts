/**
 * Listeners (published ports): publish a port, add a custom domain to an http port, unpublish a port. Only the box's
 * creator may do any of these (no admin override); a box without persistence answers `ConflictError`.
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}"; publish and custom domains are named by the
 * spec without a shape (docs/ASSUMPTIONS.md).
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import * as ApiError from "../ApiError.js"
import { AddDomainRequest, GuestPort, PublishListenerRequest } from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import type { BoxCallOptions } from "./Boxes.js"
import { Transport, validate } from "./Transport.js"
import * as Tracing from "./Tracing.js"

/** The Listeners service. */
export class Listeners extends Effect.Service<Listeners>()("boxkit/Listeners", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport
    return {
      /**
       * Publishes `guestPort` (1 to 65535) with `protocol` `http` (default) or `tcp`. Answers the listener
       * `{ guest_port, protocol, address, custom_domains? }`: a tcp port takes an address the organization kept from
       * an earlier unpublish when it has one, else a fresh one. `ConflictError` when the port is already published
       * (code `already_exists`) or the box has no persistence. Not retried after a server error (not idempotent).
       */
      publish: Tracing.fn("Listeners.publish")(function*(
        boxId: BoxId,
        guestPort: number,
        protocol: "http" | "tcp" = "http",
        options: BoxCallOptions = {}
      ) {
        const payload = yield* validate(PublishListenerRequest, { guest_port: guestPort, protocol })
        return yield* transport.operation(
          "listeners",
          "publish",
          { path: { box_id: boxId }, payload },
          { safeToRepeat: false, retry: options.retry, ownerOverrideReason: options.ownerOverrideReason }
        )
      }),
      /**
       * Registers `hostname` (a DNS name, lowercased) as a custom domain of the http port `guestPort`. Answers the
       * listener with its `custom_domains`. `ConflictError` for a tcp port, a hostname already registered in the
       * organization (code `already_exists`), or a box without persistence; `NotFoundError` when the port is not
       * published. Custom domains go when the port is unpublished.
       */
      addDomain: Tracing.fn("Listeners.addDomain")(function*(
        boxId: BoxId,
        guestPort: number,
        hostname: string,
        options: BoxCallOptions = {}
      ) {
        const port = yield* validate(GuestPort, guestPort)
        const payload = yield* Schema.decode(AddDomainRequest)({ hostname }).pipe(
          Effect.mapError(() =>
            new ApiError.InvalidRequestError({
              message: "Invalid hostname: must be a DNS name (checked by the client)",
              param: "hostname",
              code: null,
              status: 400
            })
          )
        )
        return yield* transport.operation(
          "listeners",
          "addDomain",
          { path: { box_id: boxId, guest_port: port }, payload },
          { safeToRepeat: true, retry: options.retry, ownerOverrideReason: options.ownerOverrideReason }
        )
      }),
      /**
       * Unpublishes `guestPort` (1 to 65535). Answers `{ box_id, guest_port }`. Works on running, paused and
       * sleeping boxes without waking them. `ConflictError` when the box has no persistence; `NotFoundError` when
       * the port is not published.
       */
      unpublish: Tracing.fn("Listeners.unpublish")(function*(boxId: BoxId, guestPort: number, options: BoxCallOptions = {}) {
        const port = yield* validate(GuestPort, guestPort)
        return yield* transport.operation(
          "listeners",
          "unpublish",
          { path: { box_id: boxId, guest_port: port } },
          { safeToRepeat: true, retry: options.retry, ownerOverrideReason: options.ownerOverrideReason }
        )
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
