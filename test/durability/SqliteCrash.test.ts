/**
 * `boxkit serve --data-dir` killed with SIGKILL under load and started again on the same directory keeps what it
 * acknowledged (docs/ASSUMPTIONS.md "Durable state (local service)"): see support/Crash.ts for what is checked.
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
      const first = await Crash.serve(["--data-dir", directory])
      const acknowledged = await Crash.loadThenKill([first.url], first, hook, "crash")
      expect(hook.received.size).toBe(0)
      expect(hook.refused()).toBeGreaterThan(0)
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
