/**
 * Two `boxkit orchestrate --database-url` runners on one PostgreSQL database share the work
 * (docs/decisions/0004-durable-orchestration.md; BENCHMARKS.md section 8, the split between two runners): each runs
 * workflows of its own (its final progress line's `ran here`: the workflows whose last step ran in it), and the
 * service ends with exactly N boxes, all terminated.
 *
 * Neither runner may start its workflows before the other holds shards, or the first could run them all: the runners
 * reach the service through a gate that holds every connection until both hold shard locks (PostgreSQL advisory locks
 * of @effect/cluster's SqlRunnerStorage, one session per runner). The test waits for that state, not for a time; the
 * N workflows then spread over both runners' shards by the hash of their execution ids.
 */
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Crash from "../durability/support/Crash.js"
import * as Orchestrate from "../durability/support/Orchestrate.js"
import * as Postgres from "../support/Postgres.js"

let server: Postgres.TestDatabase
beforeAll(async () => {
  server = await Postgres.startTestDatabase()
}, 180_000)
afterAll(async () => {
  await server?.stop()
}, 120_000)

/** A TCP gate in front of `target`: connections are accepted and held, then passed through once `open` is called. */
const gate = async (target: URL) => {
  const held: Array<() => void> = []
  let opened = false
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    const pass = () => {
      const upstream = net.connect(Number(target.port), target.hostname)
      sockets.add(upstream)
      socket.pipe(upstream).pipe(socket)
      socket.on("error", () => upstream.destroy())
      upstream.on("error", () => socket.destroy())
    }
    if (opened) pass()
    else held.push(pass)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as net.AddressInfo).port
  return {
    url: new URL(`http://127.0.0.1:${port}`),
    open: () => {
      opened = true
      for (const pass of held.splice(0)) pass()
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/**
 * How many sessions of the database at `url` hold shard locks: @effect/cluster's SqlRunnerStorage takes shard `s` of
 * the first shard group as advisory lock 1,000,000 + s, on one connection per runner.
 */
const shardLockHolders = (url: string) =>
  Postgres.withPostgresClient(url, async (client) => {
    const { rows } = await client.query<{ holders: number }>(`SELECT count(DISTINCT pid)::int AS holders FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND classid = 0 AND objid BETWEEN 1000001 AND 1999999
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
    return rows[0]?.holders ?? 0
  })

/** The final `ran here` of a runner's output (src/Workflow/Orchestration.ts `formatProgress`). */
const ranHere = (output: string) => {
  const counts = [...output.matchAll(/ran here (\d+)/g)].map((match) => Number(match[1]))
  return counts[counts.length - 1]
}

describe("boxkit orchestrate --database-url, two runners", () => {
  it("both run workflows of their own, together all N, each box once and terminated", async () => {
    const url = await Postgres.createDatabase(server, "two_runners_share")
    const boxes = 24
    const service = await Crash.serve([])
    const entrance = await gate(service.url)
    try {
      const args = ["--boxes", String(boxes), "--concurrency", "4", "--database-url", url]
      const first = Orchestrate.start(entrance.url, args)
      const second = Orchestrate.start(entrance.url, args)
      await Promise.all([first.ready, second.ready])
      await Crash.waitFor(async () => (await shardLockHolders(url)) >= 2, "both runners holding shards", 120_000)
      entrance.open()
      const codes = await Promise.all([first.exited, second.exited])
      const counted = await Orchestrate.count(service.url)
      const shares = [ranHere(first.output()), ranHere(second.output())]
      console.log(`two runners: ran here ${shares.join(" + ")} of ${boxes}; ${JSON.stringify(counted)}`)
      expect(codes).toEqual([0, 0])
      expect(first.output()).toContain(`orchestrated ${boxes} boxes`)
      expect(second.output()).toContain(`orchestrated ${boxes} boxes`)
      expect(shares[0]).toBeGreaterThan(0)
      expect(shares[1]).toBeGreaterThan(0)
      expect(shares[0] + shares[1]).toBeGreaterThanOrEqual(boxes)
      expect({ boxes: counted.boxes, duplicates: counted.duplicates, orphans: counted.orphans }).toEqual({
        boxes,
        duplicates: 0,
        orphans: 0
      })
    } finally {
      await entrance.close()
      await Crash.kill(service)
    }
  }, 300_000)
})
