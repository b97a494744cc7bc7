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
import { AddDomainRequest, GuestPort, type Listener, PublishListenerRequest } from "../Domain/Box.js"
import type { BoxId } from "../Domain/Ids.js"
import type { BoxCallOptions } from "./Boxes.js"
import * as LostAnswer from "./LostAnswer.js"
import { Transport, validate } from "./Transport.js"

/**
 * The call options of a listener operation, and a record of whether one of its attempts may have been carried out
 * before the call repeated it (`LostAnswer.mayHaveRun`): then an answer that finds the work already done is the
 * repeat's, not a failure of the call.
 */
const tracked = (options: BoxCallOptions, safeByDefault: boolean) => {
  const call = {
    repeatedAfterLostAnswer: false,
    options: {
      safeToRepeat: options.safeToRepeat ?? safeByDefault,
      retry: options.retry,
      ownerOverrideReason: options.ownerOverrideReason,
      onRetry: (error: unknown) => {
        if (LostAnswer.mayHaveRun(error)) call.repeatedAfterLostAnswer = true
      }
    }
  }
  return call
}

/**
 * After a repeat answered `error` (409 `already_exists`): the listener of `guestPort` on the box, read through
 * `transport`, when it is what the call asked for (`wanted`), else `error`.
 */
const listenerAlreadyPublished = <E>(
  transport: Transport,
  boxId: BoxId,
  guestPort: number,
  options: BoxCallOptions,
  wanted: (listener: Listener) => boolean,
  error: E
) =>
  Effect.flatMap(
    transport.operation("boxes", "retrieve", { path: { box_id: boxId } }, {
      safeToRepeat: true,
      retry: options.retry,
      ownerOverrideReason: options.ownerOverrideReason
    }),
    (box) => {
      const listener = box.listeners.find((candidate) => candidate.guest_port === guestPort && wanted(candidate))
      return listener === undefined ? Effect.fail(error) : Effect.succeed(listener)
    }
  )

/** Whether `error` is a 409 `already_exists` about `param`. */
const isAlreadyExists = (error: unknown, param: string) =>
  error instanceof ApiError.ConflictError && error.code === "already_exists" && error.param === param

/**
 * The body of an add-domain request for `hostname`, or `InvalidRequestError` (`param` hostname) when it is not a
 * DNS name.
 */
const addDomainPayload = (hostname: string) =>
  Schema.decode(AddDomainRequest)({ hostname }).pipe(
    Effect.mapError(() =>
      new ApiError.InvalidRequestError({
        message: "Invalid hostname: must be a DNS name (checked by the client)",
        param: "hostname",
        code: null,
        status: 400
      })
    )
  )

/**
 * `publish` over `transport` (documented on {@link Listeners}): a repeat after a lost answer that finds the port
 * published with the protocol asked for answers its listener.
 */
const publishWith = (transport: Transport) =>
  Effect.fn("Listeners.publish")(function*(
    boxId: BoxId,
    guestPort: number,
    protocol: "http" | "tcp" = "http",
    options: BoxCallOptions = {}
  ) {
    const payload = yield* validate(PublishListenerRequest, { guest_port: guestPort, protocol })
    const call = tracked(options, false)
    return yield* transport.operation("listeners", "publish", { path: { box_id: boxId }, payload }, call.options).pipe(
      Effect.catchIf(
        (error) => call.repeatedAfterLostAnswer && isAlreadyExists(error, "guest_port"),
        (error) =>
          listenerAlreadyPublished(
            transport,
            boxId,
            payload.guest_port,
            options,
            (listener) => listener.protocol === protocol,
            error
          )
      )
    )
  })

/**
 * The Listeners service (`yield* Listeners`): `publish` a box's port, `addDomain` to an http port, `unpublish` a port.
 * Each method fails with `ListenersError` (`OperationErrors["listeners"]`). Provided by `Boxkit.layer`; source: spec
 * "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}", publish and domains: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 * @category Services
 */
export class Listeners extends Effect.Service<Listeners>()("boxkit/Listeners", {
  effect: Effect.gen(function*() {
    const transport = yield* Transport

    return {
      /**
       * Publishes `guestPort` (1 to 65535) with `protocol` `http` (default) or `tcp`. Answers the listener
       * `{ guest_port, protocol, address, custom_domains? }`: a tcp port takes an address the organization kept from
       * an earlier unpublish when it has one, else a fresh one. `ConflictError` when the port is already published
       * (code `already_exists`) or the box has no persistence.
       *
       * The operation takes no `Idempotency-Key`, so by default it is not repeated after a failure that may have
       * run it (a connection lost after sending, an attempt timeout, a 500). With `safeToRepeat: true` it is; when
       * the repeat answers `ConflictError` `already_exists` for `guest_port`, the box is read, and its listener of
       * the port is the answer when it has the protocol asked for (the first attempt published it, or someone else
       * did with the same protocol), else the call fails with the conflict. Source: docs/ASSUMPTIONS.md ("Client":
       * lost answers).
       */
      publish: publishWith(transport),
      /**
       * Registers `hostname` (a DNS name, lowercased) as a custom domain of the http port `guestPort`. Answers the
       * listener with its `custom_domains`. `ConflictError` for a tcp port, a hostname already registered in the
       * organization (code `already_exists`), or a box without persistence; `NotFoundError` when the port is not
       * published. Custom domains go when the port is unpublished.
       *
       * Safe to repeat (unless `safeToRepeat: false`): when an attempt may have registered the hostname but its
       * answer was lost (a connection lost after sending, an attempt timeout, a 500) and the repeat answers
       * `ConflictError` `already_exists` for `hostname`, the box is read, and its listener of the port is the answer
       * when the hostname is among its `custom_domains`, else the call fails with the conflict. Source:
       * docs/ASSUMPTIONS.md ("Client": lost answers).
       */
      addDomain: Effect.fn("Listeners.addDomain")(function*(
        boxId: BoxId,
        guestPort: number,
        hostname: string,
        options: BoxCallOptions = {}
      ) {
        const port = yield* validate(GuestPort, guestPort)
        const payload = yield* addDomainPayload(hostname)
        const call = tracked(options, true)
        return yield* transport.operation(
          "listeners",
          "addDomain",
          { path: { box_id: boxId, guest_port: port }, payload },
          call.options
        ).pipe(
          Effect.catchIf(
            (error) => call.repeatedAfterLostAnswer && isAlreadyExists(error, "hostname"),
            (error) =>
              listenerAlreadyPublished(
                transport,
                boxId,
                port,
                options,
                (listener) => listener.custom_domains?.includes(payload.hostname) === true,
                error
              )
          )
        )
      }),
      /**
       * Unpublishes `guestPort` (1 to 65535). Answers `{ box_id, guest_port }`. Works on running, paused and
       * sleeping boxes without waking them. `ConflictError` when the box has no persistence; `NotFoundError` when
       * the port is not published.
       *
       * Safe to repeat (unless `safeToRepeat: false`): when an attempt may have unpublished the port but its answer
       * was lost (a connection lost after sending, an attempt timeout, a 500) and the repeat answers `NotFoundError`
       * for `guest_port`, the port is not published either way, and the call answers `{ box_id, guest_port }` as the
       * first attempt would have. Source: docs/ASSUMPTIONS.md ("Client": lost answers).
       */
      unpublish: Effect.fn("Listeners.unpublish")(function*(boxId: BoxId, guestPort: number, options: BoxCallOptions = {}) {
        const port = yield* validate(GuestPort, guestPort)
        const call = tracked(options, true)
        return yield* transport.operation("listeners", "unpublish", { path: { box_id: boxId, guest_port: port } }, call.options)
          .pipe(
            Effect.catchIf(
              (error) => call.repeatedAfterLostAnswer && error instanceof ApiError.NotFoundError && error.param === "guest_port",
              () => Effect.succeed({ box_id: boxId, guest_port: port })
            )
          )
      })
    }
  }),
  dependencies: [Transport.Default]
}) {}
