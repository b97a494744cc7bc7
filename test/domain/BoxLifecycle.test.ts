/**
 * The box lifecycle table (src/Domain/BoxLifecycle.ts): every operation from every status the spec lists. The
 * service's behaviour for each is proven over HTTP in test/conformance/Boxes.test.ts; this pins the table itself.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Box from "../../src/Domain/Box.js"
import * as BoxLifecycle from "../../src/Domain/BoxLifecycle.js"

const outcome = (status: string, operation: BoxLifecycle.Operation) => {
  const next = BoxLifecycle.transition(status, operation)
  return next._tag === "Move" ? `Move ${next.to}` : next._tag
}

describe("BoxLifecycle", () => {
  it("transitions of every operation from every known status", () => {
    const table = Object.fromEntries(Box.knownStatuses.map((status) => [
      status,
      (["pause", "sleep", "resume", "upgrade"] as const).map((operation) => outcome(status, operation)).join(", ")
    ]))
    expect(table).toEqual({
      creating: "Refused, Refused, Refused, Refused",
      running: "Move paused, Move sleeping, Unchanged, Restart",
      paused: "Unchanged, Refused, Wake, Pending",
      sleeping: "Refused, Unchanged, Wake, Pending",
      terminating: "Refused, Refused, Refused, Refused",
      terminated: "Refused, Refused, Refused, Refused",
      failed: "Refused, Refused, Refused, Refused",
      create_failed: "Refused, Refused, Refused, Refused",
      interrupted_restorable: "Refused, Refused, Refused, Refused",
      interrupted_unsafe_to_retry: "Refused, Refused, Refused, Refused"
    })
  })

  it("a status the spec does not list yet is refused, never ended", () => {
    expect(outcome("hibernating", "pause")).toBe("Refused")
    expect(BoxLifecycle.isEnded("hibernating")).toBe(false)
  })

  it("end statuses, and the boot's outcome", () => {
    expect([...BoxLifecycle.endStatuses].sort()).toEqual(
      ["create_failed", "failed", "interrupted_unsafe_to_retry", "terminated", "terminating"]
    )
    expect(BoxLifecycle.afterBoot(false)).toBe("running")
    expect(BoxLifecycle.afterBoot(true)).toBe("failed")
  })

  it("active boxes (the boxes quota) and the lifetime deadline", () => {
    expect(Box.knownStatuses.filter((status) => !BoxLifecycle.countsTowardBoxesQuota(status))).toEqual(["terminated"])
    expect(BoxLifecycle.countsTowardBoxesQuota("hibernating")).toBe(true)
    const box = { status: "paused", createdAtMillis: 1_000, maxLifetimeSeconds: 60 }
    expect(BoxLifecycle.lifetimeDeadline(box)).toBe(61_000)
    expect(BoxLifecycle.lifetimeDeadline({ ...box, maxLifetimeSeconds: null })).toBe(null)
    expect(BoxLifecycle.lifetimeDeadline({ ...box, status: "terminated" })).toBe(null)
  })
})
