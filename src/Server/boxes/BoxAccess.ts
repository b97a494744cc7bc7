/**
 * Who may operate a box: organization-scoped keys only; private boxes only by their creator, or by an organization
 * admin with `X-Box-Owner-Override-Reason` on the operations that accept it (each use written to the audit log);
 * publishing and unpublishing ports and custom domains only by the creator.
 *
 * Source: spec "Authentication" 2, 3, 7 and "DELETE .../listeners/{guest_port}" ("Only the creator of a box may
 * publish or unpublish ports (no admin override)").
 *
 * @since 0.1.0
 */
import { DateTime, Effect, Option } from "effect"
import * as ApiError from "../../ApiError.js"
import type { PrincipalShape } from "../../Contract/Principal.js"
import { type BoxRecord, Boxes, Logs } from "../state/Repositories.js"
import type { StoreError } from "../state/StoreError.js"

/** The organization of an organization-scoped key, or 403 `permission_error`. */
export const requireOrganization = (principal: PrincipalShape): Effect.Effect<string, ApiError.PermissionError> =>
  principal.orgId !== null
    ? Effect.succeed(principal.orgId)
    : Effect.fail(ApiError.make.permission("This operation needs an organization-scoped API key."))

/** The organization a key acts in for apps and responses (its own, or its user's), or 403. */
export const actingOrganization = (principal: PrincipalShape): Effect.Effect<string, ApiError.PermissionError> =>
  principal.organizationOfUser !== null
    ? Effect.succeed(principal.organizationOfUser)
    : Effect.fail(ApiError.make.permission("This API key belongs to no organization."))

/** True when `principal` created `box` (same user for user-scoped keys, same key otherwise). */
export const isCreator = (principal: PrincipalShape, box: BoxRecord): boolean =>
  box.creatorUserId !== null ? principal.userId === box.creatorUserId : principal.keyId === box.creatorKeyId

/**
 * How an operation treats the owner override: `accepts` (read, pause, resume, sleep, upgrade, terminate, clipboard,
 * exec resize), or `creatorOnly` (publishing and unpublishing ports, custom domains: no override, and only the creator
 * even on boxes of visibility `org`).
 */
export type OverridePolicy = "accepts" | "creatorOnly"

/**
 * The outcome of an access check: the box, and the override reason when the caller needed the owner override to get
 * it (null when the caller could operate the box anyway: the header is then ignored).
 */
export interface Access {
  readonly box: BoxRecord
  readonly override: string | null
}

/**
 * Decides whether the caller may operate a box, without side effects: 403 for keys that are not organization-scoped,
 * 404 when the box is not in the caller's organization, 403 for someone else's private box unless an admin sends a
 * non-blank override reason on an operation that accepts it, 403 for creator-only operations by anyone else.
 * `StoreError` when the store fails to read the box.
 */
export const access = (
  principal: PrincipalShape,
  boxId: string,
  operation: string,
  overrideReason: string | undefined,
  policy: OverridePolicy = "accepts"
): Effect.Effect<Access, ApiError.PermissionError | ApiError.NotFoundError | StoreError, Boxes> =>
  Effect.gen(function*() {
    const orgId = yield* requireOrganization(principal)
    const boxes = yield* Boxes
    const found = yield* boxes.get(boxId)
    if (Option.isNone(found) || found.value.orgId !== orgId) {
      return yield* Effect.fail(ApiError.make.notFound(`No box ${boxId} in this organization.`, "box_id"))
    }
    const box = found.value
    if (isCreator(principal, box)) return { box, override: null }
    if (policy === "creatorOnly") {
      return yield* Effect.fail(ApiError.make.permission(
        `Only the creator of box ${boxId} may ${operation}; there is no admin override for this operation.`
      ))
    }
    if (box.visibility === "org") return { box, override: null }
    if (!principal.admin) {
      return yield* Effect.fail(ApiError.make.permission(`Box ${boxId} is private: only its creator may ${operation} it.`))
    }
    if (overrideReason === undefined || overrideReason.trim() === "") {
      return yield* Effect.fail(ApiError.make.permission(
        `Box ${boxId} is private: an organization admin must send X-Box-Owner-Override-Reason to ${operation} it.`
      ))
    }
    return { box, override: overrideReason }
  })

/**
 * Runs `use` on a box the caller may operate (see {@link access}). When the owner override was needed, its use is
 * written to the organization's audit log (time, organization, user, box, operation, reason) once `use` succeeded:
 * a refused operation changes nothing, not even the log.
 */
export const operate = <A, E, R>(
  principal: PrincipalShape,
  boxId: string,
  operation: string,
  overrideReason: string | undefined,
  policy: OverridePolicy,
  use: (box: BoxRecord) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | ApiError.PermissionError | ApiError.NotFoundError | StoreError, R | Boxes | Logs> =>
  Effect.gen(function*() {
    const granted = yield* access(principal, boxId, operation, overrideReason, policy)
    const result = yield* use(granted.box)
    if (granted.override !== null) {
      const logs = yield* Logs
      yield* logs.audit({
        at: DateTime.formatIso(yield* DateTime.now),
        org_id: granted.box.orgId,
        user_id: principal.userId,
        box_id: granted.box.id,
        operation,
        reason: granted.override
      })
    }
    return result
  })
