/**
 * One status colour table (src/Domain/StatusTone.ts) for the inspection page (`/_local/`) and the command line's
 * output: every status of a box or a model response the spec lists, and one it does not list yet, gets the same tone
 * in both, and a box in one of BoxLifecycle's end statuses is never shown as on its way.
 */
import { describe, expect, it } from "@effect/vitest"
import { fieldLines } from "../../src/Cli/client/Output.js"
import * as Box from "../../src/Domain/Box.js"
import * as BoxLifecycle from "../../src/Domain/BoxLifecycle.js"
import { ResponseStatus } from "../../src/Domain/ModelResponse.js"
import * as StatusTone from "../../src/Domain/StatusTone.js"
import * as InspectionPage from "../../src/Server/http/InspectionPage.js"

const statuses = [...Box.knownStatuses, ...ResponseStatus.literals, "hibernating"]

/** The tone the inspection page's script gives `status`, from the lists the served page holds. */
const pageTone = (() => {
  const body = InspectionPage.response.body
  if (body._tag !== "Uint8Array") throw new Error("the page is not a byte body")
  const html = new TextDecoder().decode(body.body)
  const lists = /const good = (\[[^\]]*\]), bad = (\[[^\]]*\]);/.exec(html)
  if (lists === null) throw new Error("the page's status lists were not found")
  const good: Array<string> = JSON.parse(lists[1])
  const bad: Array<string> = JSON.parse(lists[2])
  return (status: string) => good.includes(status) ? "good" : bad.includes(status) ? "bad" : "moving"
})()

/** The tone the command line's colour says for `status`. */
const commandLineTone = (status: string) => {
  const [line] = fieldLines({ status }, { now: 0, colour: true })
  const code = /\u001b\[(\d+)m/.exec(line)?.[1]
  return ({ "32": "good", "31": "bad", "33": "moving" } as Record<string, string>)[code ?? ""]
}

describe("status tones", () => {
  it("the inspection page and the command line give every status the tone of StatusTone", () => {
    const table = Object.fromEntries(statuses.map((status) => [status, StatusTone.toneOf(status)]))
    expect(Object.fromEntries(statuses.map((status) => [status, pageTone(status)]))).toEqual(table)
    expect(Object.fromEntries(statuses.map((status) => [status, commandLineTone(status)]))).toEqual(table)
  })

  it("good: running and completed; bad: BoxLifecycle's end statuses and failed, cancelled, incomplete responses", () => {
    expect(statuses.filter((status) => StatusTone.toneOf(status) === "good")).toEqual(["running", "completed"])
    for (const status of BoxLifecycle.endStatuses) expect(StatusTone.toneOf(status)).toBe("bad")
    expect(["failed", "cancelled", "incomplete"].map(StatusTone.toneOf)).toEqual(["bad", "bad", "bad"])
    expect(["creating", "paused", "sleeping", "interrupted_restorable", "queued", "in_progress", "hibernating"]
      .map(StatusTone.toneOf)).toEqual(Array(7).fill("moving"))
  })
})
