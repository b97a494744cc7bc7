#!/usr/bin/env node
// The `boxkit` command. Runs the esbuild bundle of src/bin.ts (dist/boxkit.mjs) in this process, building it first
// when it is missing or older than the sources (scripts/bundle.mjs). Signals reach the service directly.
import { pathToFileURL } from "node:url"
import { ensureBundle } from "../scripts/bundle.mjs"

const bundle = await ensureBundle()
await import(pathToFileURL(bundle).href)
