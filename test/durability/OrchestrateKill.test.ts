/**
 * `boxkit orchestrate --data-dir` killed with SIGKILL at random points and started again with the same arguments
 * (docs/decisions/0004-durable-orchestration.md, its first consequence): the last run ends with `orchestrated N boxes`;
 * the service holds exactly N boxes `orchestrate-<i>`, all terminated (no duplicate, no orphan), and N responses, all
 * completed; the ownership ledger has each box terminated and each response awaited once.
 */
import { createClient } from "@libsql/client"
import { afterAll, describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Crash from "./support/Crash.js"
import * as Orchestrate from "./support/Orchestrate.js"

const directories: Array<string> = []
afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true })
})

const boxes = 12

describe("boxkit orchestrate --data-dir, killed with SIGKILL and restarted", () => {
  it("makes exactly N boxes, terminates them all, awaits every response once", async () => {
    const directory = mkdtempSync(join(tmpdir(), "boxkit-orchestrate-"))
    directories.push(directory)
    const service = await Crash.serve([])
    try {
      const args = ["--boxes", String(boxes), "--concurrency", "4", "--data-dir", directory]
      // Each kill within a second of the start: a fresh run of these 12 takes about 1.7 s after it is up.
      const result = await Orchestrate.killAndRestart(service.url, args, { kills: 3, minMillis: 100, maxMillis: 1000 })
      expect(result.output).toContain(`orchestrated ${boxes} boxes`)
      expect(result.code).toBe(0)
      expect(result.kills).toBeGreaterThan(0)
      const counted = await Orchestrate.count(service.url)
      const ledger = createClient({ url: `file:${join(directory, "workflows.db")}`, intMode: "bigint" })
      const ownedRows = await ledger.execute(Orchestrate.ledgerQueries.boxes)
      const awaitedRows = await ledger.execute(Orchestrate.ledgerQueries.responses)
      ledger.close()
      const owned = Orchestrate.ledgerCounts(ownedRows.rows[0], awaitedRows.rows[0])
      console.log(`orchestrate kill test (SQLite): N ${boxes}, kills ${result.kills} (after ${result.delays.join(", ")} ms), ` +
        `${JSON.stringify(counted)}; last run: ${result.output.trim().split("\n").slice(-2).join(" | ")}`)
      expect({ counted, ledger: owned }).toEqual(Orchestrate.clean(boxes))
    } finally {
      await Crash.kill(service)
    }
  }, 180_000)
})
