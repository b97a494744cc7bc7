/**
 * `boxkit state export FILE` and `boxkit state import FILE`, the built command against local services in this process
 * (docs/ASSUMPTIONS.md "Snapshots (local service)"): export writes the file with mode 0600 and leaves secret values
 * out unless `--include-secret-values`; import writes the file into another service, which then answers the same ids,
 * and says which secrets had no value; `boxkit serve --seed FILE` with a snapshot that is not valid fails with one
 * line naming the member and no stack trace.
 */
import { ManagedRuntime } from "effect"
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import * as LocalService from "../../src/Server/LocalService.js"
import { boxkit } from "../support/BoxkitCommand.js"
import * as Harness from "../support/Harness.js"

const directory = mkdtempSync(join(tmpdir(), "boxkit-state-commands-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

/** A service on the fast path in memory with the example seed; `baseUrl` ends in /v1. */
const start = async () => {
  const runtime = ManagedRuntime.make(LocalService.layerNode(Harness.seed, {}))
  return { runtime, baseUrl: await runtime.runPromise(LocalService.baseUrl) }
}

const run = (args: ReadonlyArray<string>) => Effect.runPromise(boxkit(args, { env: { NO_COLOR: undefined } }))

const post = (baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  }).then(async (response) => ({ status: response.status, json: await response.json() as any }))

describe("boxkit state", () => {
  it("exports to a 0600 file without secret values, and imports it into another service", async () => {
    const first = await start()
    const second = await start()
    try {
      const created = await post(first.baseUrl, "/boxes", {
        name: "exported",
        app_id: "app_00000000-0000-4000-8000-000000000001",
        image: { base: "debian" }
      }, { "idempotency-key": "exported-create" })
      expect(created.status).toBe(201)
      const file = join(directory, "state.json")
      // A file that exists, readable by others, is replaced by one only its owner reads.
      writeFileSync(file, "{}")
      chmodSync(file, 0o644)
      const exported = await run(["state", "export", file, "--base-url", first.baseUrl])
      expect(exported.stderr).toBe("")
      expect(exported.code).toBe(0)
      expect(exported.stdout).toContain("secret values left out")
      expect(statSync(file).mode & 0o777).toBe(0o600)
      const snapshot = JSON.parse(readFileSync(file, "utf8"))
      expect(snapshot.version).toBe(1)
      expect(snapshot.secrets.length).toBeGreaterThan(0)
      expect(snapshot.secrets.every((secret: object) => !("value" in secret))).toBe(true)
      expect(readFileSync(file, "utf8")).not.toContain("s3cr3t")

      const withValues = join(directory, "with-values.json")
      expect((await run(["state", "export", withValues, "--include-secret-values", "--base-url", first.baseUrl])).code)
        .toBe(0)
      expect(statSync(withValues).mode & 0o777).toBe(0o600)
      expect(JSON.parse(readFileSync(withValues, "utf8")).secrets).toContainEqual(
        expect.objectContaining({ name: "GITHUB_TOKEN", value: "s3cr3t" })
      )

      const imported = await run(["state", "import", file, "--base-url", second.baseUrl])
      expect(imported.stderr).toBe("")
      expect(imported.code).toBe(0)
      expect(imported.stdout).toContain("secrets without a value, not restored: org_acme/GITHUB_TOKEN")
      const replay = await post(second.baseUrl, "/boxes", {
        name: "exported",
        app_id: "app_00000000-0000-4000-8000-000000000001",
        image: { base: "debian" }
      }, { "idempotency-key": "exported-create" })
      expect(replay.status).toBe(201)
      expect(replay.json.box_id).toBe(created.json.box_id)
    } finally {
      await first.runtime.dispose()
      await second.runtime.dispose()
    }
  }, 60_000)

  it("serve --seed with a snapshot that is not valid exits 1 with one line naming the member", async () => {
    const service = await start()
    let snapshot: any
    try {
      snapshot = await fetch(`${service.baseUrl.replace(/\/v1$/, "")}/_local/snapshot`).then((response) => response.json())
    } finally {
      await service.runtime.dispose()
    }
    const file = join(directory, "bad-seed.json")
    writeFileSync(file, JSON.stringify({ ...snapshot, apps: [{ id: "app_x", org_id: "org_acme", name: 5, created_at: 0 }] }))
    const served = await run(["serve", "--port", "0", "--seed", file])
    expect(served.code).toBe(1)
    expect(served.stderr).toContain("\n  apps[0].name: expected string, got 5\n")
    expect(served.stderr).not.toMatch(/\n\s+at /)
  }, 60_000)
})
