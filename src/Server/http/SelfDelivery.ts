/**
 * A completion webhook never reaches the service that sends it (docs/ASSUMPTIONS.md "Webhooks"). Every delivery carries the header
 * {@link deliveryHeader}; the service refuses any request that carries it, before routing, authentication or the
 * loopback check of `/_local` (a delivery to its own address would otherwise come from 127.0.0.1), whatever spelling
 * of its address the URL uses (`http://0`, `[::1]`, `2130706433`, `0x7f000001`, a name that resolves to it). The
 * refusal carries {@link refusedHeader}, and the delivery gives up at once instead of retrying its rounds. A user's
 * receiver on loopback (another port, another process) gets deliveries as before.
 *
 * Source: docs/ASSUMPTIONS.md "Webhooks".
 *
 * @since 0.1.0
 */
import { HttpServerResponse } from "@effect/platform"
import * as ApiError from "../../ApiError.js"
import * as ErrorResponse from "./ErrorResponse.js"

/** The header every webhook delivery of a boxkit service carries (lower case). */
export const deliveryHeader = "boxkit-webhook-delivery"

/** The header of the refusal, telling the sender not to retry (lower case). */
export const refusedHeader = "boxkit-webhook-refused"

/** The answer to a request that carries {@link deliveryHeader}: 403 `permission_error`, marked {@link refusedHeader}. */
export const refusal = (): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.setHeader(
    ErrorResponse.fromApiError(
      ApiError.make.permission("A completion webhook of this service cannot be delivered to the service itself.")
    ),
    refusedHeader,
    "self"
  )
