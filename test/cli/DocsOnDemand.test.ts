/**
 * The installed command (`node bin/boxkit.js`, the bundle) keeps Swagger UI's script and styles (about 3.7 MB of
 * strings, read from @effect/platform) off its heap until the first `GET /docs` asks for them: a service that nobody
 * asks for its reference page does not hold them (scripts/build.mjs, "swagger-ui-outside"; the budget of 100,000
 * durable keys in 150 MB: docs/decisions/0005-serve-heap.md).
 *
 * A module loaded by the process is seen through a `--require` hook that reports each load of
 * `@effect/platform/dist/cjs/internal/httpApiSwagger.js` on stderr.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const marker = "loaded httpApiSwagger.js"

const hook = `const Module = require("node:module")
const load = Module._load
Module._load = function (request) {
  if (/httpApiSwagger\\.js$/.test(request)) process.stderr.write(${JSON.stringify(marker + "\n")})
  return load.apply(this, arguments)
}
`

const waitFor = async (condition: () => boolean, what: string) => {
  const started = Date.now()
  while (!condition()) {
    if (Date.now() - started > 30_000) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("the command's Swagger UI", { timeout: 60_000 }, () => {
  it("is loaded by the first GET /docs, not when the service starts or answers the API", async () => {
    const directory = mkdtempSync(join(tmpdir(), "boxkit-docs-on-demand-"))
    const hookFile = join(directory, "hook.cjs")
    writeFileSync(hookFile, hook)
    let child: ChildProcess | undefined
    try {
      child = spawn(process.execPath, ["--require", hookFile, "bin/boxkit.js", "serve", "--port", "0"], {
        cwd: process.cwd(),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      await waitFor(() => /listening on http:\/\/\S+\/v1/.test(stdout), "the service to listen")
      const origin = /listening on (http:\/\/\S+)\/v1/.exec(stdout)![1]

      const app = await fetch(`${origin}/v1/apps/find`, {
        method: "POST",
        headers: { authorization: "Bearer sk_acme_org", "content-type": "application/json" },
        body: JSON.stringify({ name: "docs-on-demand", mint_if_missing: true })
      })
      expect(app.status).toBe(200)
      const reference = await fetch(`${origin}/openapi.json`)
      expect(reference.status).toBe(200)
      expect(stderr).not.toContain(marker)

      const page = await fetch(`${origin}/docs`)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain("SwaggerUIBundle")
      await waitFor(() => stderr.includes(marker), "Swagger UI to be loaded")
      expect(stderr.split(marker).length - 1).toBe(1)
    } finally {
      child?.kill("SIGKILL")
      rmSync(directory, { recursive: true, force: true })
    }
  })
})
