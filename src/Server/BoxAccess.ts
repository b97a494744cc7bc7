/**
 * Who may operate a box: organization-scoped keys only; private boxes only by their creator, or by an organization
 * admin with `X-Box-Owner-Override-Reason` on the operations that accept it (each use written to the audit log);
 * publishing and unpublishing ports only by the creator.
 *
 * Source: spec "Authentication" 2, 3, 7 and "DELETE .../listeners/{guest_port}" ("Only the creator of a box may
 * publish or unpublish ports (no admin override)").
 *
 * @since 0.1.0
 */
import { DateTime, Effect, Option } from "effect"
import * as ApiError from "../ApiError.js"
import type { PrincipalShape } from "../Contract/Principal.js"
import { type BoxRecord, Boxes, Logs } from "./Repositories.js"

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
 * How an operation treats the owner override: `accepts` (pause, resume, sleep, upgrade, terminate, clipboard, exec,
 * read), or `creatorOnly` (publishing and unpublishing ports: no override, and only the creator even on org boxes).
 */
export type OverridePolicy = "accepts" | "creatorOnly"

/**
 * Loads a box the caller may operate, or fails: 403 for keys that are not organization-scoped, 404 when the box is
 * not in the caller's organization, 403 for someone else's private box (unless an admin sends the override reason
 * on an operation that accepts it; that use is audited), 403 for port operations by anyone but the creator.
 */
export const operableBox = (
  principal: PrincipalShape,
  boxId: string,
  operation: string,
  overrideReason: string | undefined,
  policy: OverridePolicy = "accepts"
): Effect.Effect<BoxRecord, ApiError.PermissionError | ApiError.NotFoundError, Boxes | Logs> =>
  Effect.gen(function*() {
    const orgId = yield* requireOrganization(principal)
    const boxes = yield* Boxes
    const found = yield* boxes.get(boxId)
    if (Option.isNone(found) || found.value.orgId !== orgId) {
      return yield* Effect.fail(ApiError.make.notFound(`No box ${boxId} in this organization.`, "box_id"))
    }
    const box = found.value
    if (isCreator(principal, box)) return box
    if (policy === "creatorOnly") {
      return yield* Effect.fail(ApiError.make.permission(
        `Only the creator of box ${boxId} may ${operation}; there is no admin override for this operation.`
      ))
    }
    if (box.visibility === "org") return box
    if (!principal.admin) {
      return yield* Effect.fail(ApiError.make.permission(`Box ${boxId} is private: only its creator may ${operation} it.`))
    }
    if (overrideReason === undefined || overrideReason.trim() === "") {
      return yield* Effect.fail(ApiError.make.permission(
        `Box ${boxId} is private: an organization admin must send X-Box-Owner-Override-Reason to ${operation} it.`
      ))
    }
    const logs = yield* Logs
    yield* logs.audit({
      at: DateTime.formatIso(yield* DateTime.now),
      org_id: orgId,
      user_id: principal.userId,
      box_id: box.id,
      operation,
      reason: overrideReason
    })
    return box
  })
