/**
 * Writes the OpenAPI document of the contract to `openapi.json` (or the path given as the first argument).
 * Run with `npm run openapi`.
 */
import { writeFileSync } from "node:fs"
import { openApiDocument } from "../src/Contract/Api.js"

const path = process.argv[2] ?? "openapi.json"
writeFileSync(path, JSON.stringify(openApiDocument(), null, 2) + "\n")
console.log(`wrote ${path}`)
