/**
 * No request is held while the service starts (docs/ASSUMPTIONS.md "Serving"; spec "Errors" rule 2): the server
 * listens before its state store is open, and a request that arrives in between is answered 503 `server_error` with
 * `Retry-After`, then served once the service is ready — as a client that polls a service from the moment it is
 * spawned would see it.
 *
 * - In process, on both serving paths: the state store's opening is held by the test, requests sent meanwhile are
 *   answered 503 with the envelope and `Retry-After: 1`, and served (200) once it opens.
 * - `boxkit serve --data-dir` spawned: requests from the first millisecond of the process, every 20 ms, each allowed
 *   15 s; every request that connected is answered (200 or 503 with `Retry-After`), none waits out its time.
 */
import { describe, expect, it } from "vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Scope } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as DemoSeed from "../../src/Server/state/DemoSeed.js"
import * as LocalService from "../../src/Server/LocalService.js"
import * as Seed from "../../src/Server/state/Seed.js"
import * as StateStore from "../../src/Server/state/StateStore.js"

const seed = Schema.decodeUnknownSync(Seed.Seed)(DemoSeed.example)
const bin = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "bin", "boxkit.js")

/** A port no one listens on now (the kernel's choice for port 0, released). */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

const secretPath = "/v1/secrets/GITHUB_TOKEN"
const authorization = { authorization: "Bearer sk_acme_org" }

describe.each(["fast", "platform"] as const)("a request while the service starts (%s path)", (server) => {
  it("is answered 503 with Retry-After while the state store opens, and served once it is open", async () => {
    const port = await freePort()
    const opened = Effect.runSync(Deferred.make<void>())
    const state = Layer.unwrapEffect(Effect.as(Deferred.await(opened), StateStore.layerMemory()))
    const scope = Effect.runSync(Scope.make())
    const starting = Effect.runFork(
      Layer.buildWithScope(LocalService.layerNode(seed, { port, server, state }), scope)
    )
    try {
      // The server listens before the store is open: wait for the first answer instead of guessing when.
      let early: Response | undefined
      while (early === undefined) {
        early = await fetch(`http://127.0.0.1:${port}${secretPath}`, { headers: authorization }).catch(() => undefined)
        if (early === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
      }
      expect(early.status).toBe(503)
      expect(early.headers.get("retry-after")).toBe("1")
      const envelope = await early.json()
      expect(envelope.error.type).toBe("server_error")
      expect(envelope.error.message).toContain("starting")

      Effect.runSync(Deferred.succeed(opened, undefined))
      const exit = await Effect.runPromise(Fiber.await(starting))
      expect(Exit.isSuccess(exit)).toBe(true)
      const served = await fetch(`http://127.0.0.1:${port}${secretPath}`, { headers: authorization })
      expect(served.status).toBe(200)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})

describe("boxkit serve --data-dir polled from its first millisecond", () => {
  it("answers every request that connected: none is held", async () => {
    const port = await freePort()
    const directory = mkdtempSync(join(tmpdir(), "boxkit-starting-"))
    const child = spawn(process.execPath, [bin, "serve", "--port", String(port), "--data-dir", directory], {
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const outcomes: Array<string> = []
    try {
      const pending: Array<Promise<void>> = []
      // Until the service has answered 200, and at most 20 s: one request every 20 ms, each allowed 15 s.
      const until = Date.now() + 20_000
      let served = false
      while (!served && Date.now() < until && child.exitCode === null) {
        pending.push(
          fetch(`http://127.0.0.1:${port}${secretPath}`, { headers: authorization, signal: AbortSignal.timeout(15_000) })
            .then(async (answer) => {
              await answer.arrayBuffer()
              if (answer.status === 200) served = true
              outcomes.push(answer.status === 503 ? `503 retry-after ${answer.headers.get("retry-after")}` : String(answer.status))
            })
            .catch((error: Error) => {
              const code = (error.cause as NodeJS.ErrnoException | undefined)?.code
              outcomes.push(error.name === "TimeoutError" ? "held" : code === "ECONNREFUSED" ? "refused" : `failed ${code ?? error.message}`)
            })
        )
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      await Promise.all(pending)
      expect(served, `never served; stderr: ${stderr}`).toBe(true)
      const unexpected = outcomes.filter((outcome) => !["200", "503 retry-after 1", "refused"].includes(outcome))
      expect(unexpected).toEqual([])
    } finally {
      child.kill("SIGTERM")
      await new Promise((resolve) => child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve))
      rmSync(directory, { recursive: true, force: true })
    }
  }, 60_000)
})
