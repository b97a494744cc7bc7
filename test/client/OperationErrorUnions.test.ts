/**
 * The named error unions of Operation.ts (`CallError`, `BoxesCreateError`, ...) are exactly what each endpoint lists
 * in the contract plus the client's own errors, for every endpoint: checked by the type checker (`npm run typecheck`
 * fails on a mismatch), and at run time against the classes the transport keeps for each endpoint.
 */
import { describe, expect, expectTypeOf, it } from "vitest"
import * as ApiError from "../../src/ApiError.js"
import { BoxServiceApi } from "../../src/Contract/Api.js"
import type * as Operation from "../../src/Client/Operation.js"
import { errorsListedBy } from "../../src/Client/Operation.js"

/** True when `A` and `B` have the same members. */
type Same<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false

/** The endpoints (`group.name`) whose named union differs from the contract's errors. */
type Mismatches = {
  [G in Operation.GroupName]: {
    [N in Operation.EndpointName<G>]: Same<Operation.OperationError<G, N>, Operation.ContractOperationError<G, N>> extends
      true ? never
      : `${G}.${N}`
  }[Operation.EndpointName<G>]
}[Operation.GroupName]

/** The `_tag`s of the API errors in the named union of each endpoint (its class names). */
const namedUnion: Record<string, ReadonlyArray<string>> = (() => {
  const common = ["InvalidRequestError", "AuthenticationError", "BillingError", "PermissionError", "NotFoundError", "RateLimitError", "ServerError"]
  const conflict = [...common, "ConflictError"]
  const quota = [...conflict, "QuotaExceededError"]
  const countQuota = [...common, "QuotaExceededError"]
  return {
    "apps.find": countQuota,
    "boxes.create": quota,
    "boxes.retrieve": common,
    "boxes.upgrade": quota,
    "boxes.pause": conflict,
    "boxes.resume": conflict,
    "boxes.sleep": conflict,
    "boxes.terminate": common,
    "exec.resize": common,
    "listeners.publish": conflict,
    "listeners.unpublish": conflict,
    "listeners.addDomain": conflict,
    "clipboard.write": [...quota, "NotImplementedError"],
    "secrets.retrieve": common,
    "secrets.create": countQuota,
    "egressPolicies.retrieve": common,
    "egressPolicies.create": countQuota,
    "egressPolicies.rename": common,
    "responses.create": quota,
    "responses.retrieve": common
  }
})()

describe("the named error unions of the operations", () => {
  it("equal the contract's errors of every endpoint (type level)", () => {
    expectTypeOf<Mismatches>().toEqualTypeOf<never>()
    expectTypeOf<Operation.OperationError<"boxes", "create">>().toEqualTypeOf<Operation.BoxesCreateError>()
    expectTypeOf<ApiError.NotFoundError | ApiError.TransportError>().toMatchTypeOf<Operation.CallError>()
  })

  it("name the classes the transport keeps for every endpoint of the contract (run time)", () => {
    const endpoints = Object.values(BoxServiceApi.groups).flatMap((group) =>
      Object.keys(group.endpoints).map((name) => `${group.identifier}.${name}`)
    )
    expect([...endpoints].sort()).toEqual(Object.keys(namedUnion).sort())
    for (const endpoint of endpoints) {
      const [group, name] = endpoint.split(".") as [string, string]
      const kept = errorsListedBy(group, name).map((errorClass) => errorClass._tag)
      expect([endpoint, [...new Set(kept)].sort()]).toEqual([endpoint, [...namedUnion[endpoint]!].sort()])
    }
  })
})
