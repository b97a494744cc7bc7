/**
 * The listeners group of the contract (`ListenersGroup`).
 *
 * Source: spec "DELETE {base_url}/boxes/{box_id}/listeners/{guest_port}"; publish and custom domains: docs/ASSUMPTIONS.md.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import * as Box from "../../Domain/Box.js"
import { Errors } from "../Errors.js"
import { BoxHeaders } from "../Headers.js"
import { Authorization, BoxIdParam, operation } from "../Operation.js"

const GuestPortParam = HttpApiSchema.param("guest_port", Box.GuestPortFromPath)

/**
 * Listeners (published ports): DELETE /boxes/{box_id}/listeners/{guest_port} (spec), and the operations the spec names
 * without a shape that proving its listener rules needs (docs/ASSUMPTIONS.md): publish
 * `POST /boxes/{box_id}/listeners` `{guest_port, protocol}` (201, the listener with its address) and add a custom
 * domain `POST /boxes/{box_id}/listeners/{guest_port}/domains` `{hostname}` (the listener). All creator only: no
 * owner override (spec: "Only the creator of a box may publish or unpublish ports", "adding and removing custom
 * domains" stay with the creator). A box without persistence answers 409.
 *
 * @since 0.1.0
 * @category Contract
 */
export class ListenersGroup extends HttpApiGroup.make("listeners")
  .annotate(OpenApi.Description, "Listeners: the ports a box publishes, with their addresses and custom domains.")
  .add(
    operation(
      HttpApiEndpoint.post("publish")`/boxes/${BoxIdParam}/listeners`
        .setHeaders(BoxHeaders)
        .setPayload(Box.PublishListenerRequest)
        .addSuccess(Box.Listener, { status: 201 })
        .addError(Errors.Conflict),
      {
        summary: "Publish a port",
        description:
          "Publishes a port of the box (`http` or `tcp`) and answers the listener with its address. Only the " +
          "box's creator may."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.post("addDomain")`/boxes/${BoxIdParam}/listeners/${GuestPortParam}/domains`
        .setHeaders(BoxHeaders)
        .setPayload(Box.AddDomainRequest)
        .addSuccess(Box.Listener)
        .addError(Errors.Conflict),
      {
        summary: "Add a custom domain",
        description: "Registers a hostname as a custom domain of a published http port. Only the box's creator may."
      }
    )
  )
  .add(
    operation(
      HttpApiEndpoint.del("unpublish")`/boxes/${BoxIdParam}/listeners/${GuestPortParam}`
        .setHeaders(BoxHeaders)
        .addSuccess(Box.UnpublishResult)
        .addError(Errors.Conflict),
      {
        summary: "Unpublish a port",
        description:
          "Unpublishes a port; works on running, paused and sleeping boxes without waking them. Only the box's " +
          "creator may."
      }
    )
  )
  .middleware(Authorization) {}
