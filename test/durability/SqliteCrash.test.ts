/**
 * `boxkit serve --data-dir` killed with SIGKILL under load and started again on the same directory keeps what it
 * acknowledged (issue 13; docs/ASSUMPTIONS.md "Durable state"): see support/Crash.ts for what is checked.
 */
import { afterAll, describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Crash from "./support/Crash.js"

const directories: Array<string> = []
afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true })
})

describe("boxkit serve --data-dir, killed with SIGKILL mid-load", () => {
  it("keeps every acknowledged record, replays every acknowledged create, makes one box per key, finishes every background response", async () => {
    const directory = mkdtempSync(join(tmpdir(), "boxkit-crash-"))
    directories.push(directory)
    const hook = await Crash.receiver()
    try {
      // Every webhook is refused before the kill, so every delivery is waiting in its retry rounds when it comes:
      // after the restart they go on from the stored schedule.
      hook.control.refusing = true
      const first = await Crash.serve(["--data-dir", directory])
      let killed = false
      const loading = Crash.load([first.url], { prefix: "crash", workers: 16, webhookUrl: hook.url, stop: () => killed })
      // Killed once enough was acknowledged, while the loops have requests in flight.
      await Crash.waitFor(() => loading.acknowledged.responses.size >= 40, "40 acknowledged background responses")
      await Crash.kill(first)
      killed = true
      await loading.done
      const acknowledged = loading.acknowledged
      expect(hook.received.size).toBe(0)
      expect(hook.refused()).toBeGreaterThan(0)
      hook.control.refusing = false
      const second = await Crash.serve(["--data-dir", directory])
      try {
        expect(second.output()).toContain("existing")
        const found = await Crash.verify(second.url, "crash", acknowledged, hook.received)
        console.log(`SQLite crash test: ${JSON.stringify(found)}`)
        expect(found.duplicates).toBe(0)
        expect(found.replayed).toBe(acknowledged.creates.size)
        expect(found.secretsFound).toBe(acknowledged.secrets.size)
        expect(found.responsesCompleted).toBe(acknowledged.responses.size)
        expect(found.webhooksDelivered).toBe(acknowledged.responses.size)
        expect(acknowledged.creates.size).toBeGreaterThan(0)
      } finally {
        await Crash.kill(second)
      }
    } finally {
      await hook.close()
    }
  }, 180_000)
})
