/**
 * What the suite sends: the seed file every server starts with, the server command lines, and the request of every
 * throughput scenario (method, path, headers, body), all with the example seed's organization key `sk_acme_org`
 * (org_acme was created 2026-01-01, so it is not capped as a new organization).
 *
 * Source: BENCHMARKS.md section 1 (the scenarios); spec "POST {api_url}/apps/find", "GET {base_url}/secrets/{name}",
 * "Create a box", "POST {api_url}/responses"; docs/ASSUMPTIONS.md (paths, base images, the example seed).
 *
 * @since 0.1.0
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { IdempotencyKeyHeader } from "../src/Contract/Headers.js"
import * as DemoSeed from "../src/Server/state/DemoSeed.js"
import { outDir, root, tsxCli } from "./Child.js"
import type { LoadSpec } from "./Load.js"

/** The API key every scenario uses (organization-scoped, org_acme, has credits). */
export const apiKey = "sk_acme_org"

/** The seed file (the example seed as JSON), relative to the repository root. */
export const seedFile = relative(root, join(outDir, "seed.json"))

/** Writes {@link seedFile}. */
export const writeSeedFile = (): void => {
  mkdirSync(outDir, { recursive: true })
  writeFileSync(join(root, seedFile), JSON.stringify(DemoSeed.example, null, 2) + "\n")
}

/**
 * The quotas per organization of every service under test, far above what the suite creates: the suite measures
 * capacity (100,000 boxes of one organization in sections 5 and 6, tens of thousands in section 1, 10,000
 * background responses in section 3), not the quotas (default 1,000 boxes not terminated, 1,000 background
 * responses in flight, 50,000 remembered idempotency keys and 32 MiB of remembered answers per API key;
 * src/Server/Quotas.ts), which would answer 429 past them.
 */
export const quotaArgs: ReadonlyArray<string> = [
  "--quota-boxes",
  "100000000",
  "--quota-background-responses",
  "100000000",
  "--quota-idempotency-keys",
  "100000000",
  "--quota-idempotency-mb",
  "1000000"
]

/**
 * `node bin/boxkit.js serve --port 0 --seed <file> --quota-...`: the local service under test, as the installed command
 * runs it (the esbuild bundle with its code cache).
 */
export const serviceArgs = (): ReadonlyArray<string> => ["bin/boxkit.js", "serve", "--port", "0", "--seed", seedFile, ...quotaArgs]

/** `node <tsx cli> src/bin.ts serve --port 0 --seed <file> --quota-...`: the service from its TypeScript sources (development). */
export const tsxServiceArgs = (): ReadonlyArray<string> => [tsxCli, "src/bin.ts", "serve", "--port", "0", "--seed", seedFile, ...quotaArgs]

/** `node <tsx cli> bench/RawServer.ts --port 0 --seed <file>`: the raw node:http baseline. */
export const baselineArgs = (): ReadonlyArray<string> => [tsxCli, "bench/RawServer.ts", "--port", "0", "--seed", seedFile]

/** Headers of every JSON request: the bearer key and the JSON content type. */
export const jsonHeaders = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }

/** The app of the example seed (box creation needs one). */
export const seededAppId = DemoSeed.example.apps?.[0]?.id ?? "app_00000000-0000-4000-8000-000000000001"

/** `POST /v1/apps/find` of one name with `mint_if_missing` (found after the first call). Same for the baseline. */
export const appsFind: LoadSpec = {
  title: "POST /v1/apps/find",
  method: "POST",
  path: "/v1/apps/find",
  headers: jsonHeaders,
  body: JSON.stringify({ name: "bench-app", mint_if_missing: true })
}

/** `GET /v1/secrets/GITHUB_TOKEN` (a seeded secret). */
export const secretsRetrieve: LoadSpec = {
  title: "GET /v1/secrets/{name}",
  method: "GET",
  path: "/v1/secrets/GITHUB_TOKEN",
  headers: { authorization: `Bearer ${apiKey}` }
}

/** The body of every box creation: a bare base image, which needs no image build. */
export const createBoxBody = JSON.stringify({ name: "bench-box", app_id: seededAppId, image: { base: "debian" } })

/** `POST /v1/boxes` with a fresh `Idempotency-Key` per request (autocannon replaces `[<id>]` per request). */
export const createBox: LoadSpec = {
  title: "POST /v1/boxes (fresh Idempotency-Key)",
  method: "POST",
  path: "/v1/boxes",
  headers: { ...jsonHeaders, [IdempotencyKeyHeader]: "bench-[<id>]" },
  body: createBoxBody,
  idReplacement: true
}

/** The key of the replay scenario; {@link createBoxReplay} is primed with one request first. */
export const replayKey = "bench-replay-0001"

/** `POST /v1/boxes` repeating the same key and body: every answer is the remembered one (`Idempotent-Replayed`). */
export const createBoxReplay: LoadSpec = {
  title: "POST /v1/boxes (replay: same key and body)",
  method: "POST",
  path: "/v1/boxes",
  headers: { ...jsonHeaders, [IdempotencyKeyHeader]: replayKey },
  body: createBoxBody
}

/** `POST /v1/responses`, a foreground request (answered when finished). */
export const foregroundResponse: LoadSpec = {
  title: "POST /v1/responses (foreground)",
  method: "POST",
  path: "/v1/responses",
  headers: jsonHeaders,
  body: JSON.stringify({ model: "boxkit-bench", input: "Say hello to the benchmark." })
}
