/**
 * The tokenizer is loaded on the first response, not at start nor by other areas: its tables are the largest part
 * of the command's start (docs/decisions/0002-what-the-fast-paths-save.md), which a service that never answers a
 * model response should not pay. It needs modules no other test file has loaded: vitest.config.ts runs this file in
 * a project of its own with `isolate: true`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Tokenizer from "../../src/Server/responses/Tokenizer.js"
import * as C from "../conformance/support/Conformance.js"
import * as Harness from "../support/Harness.js"
import { postResponse } from "../responses/support.js"

describe("the tokenizer", () => {
  it.live("is not loaded at start nor by other areas; the first response loads it and is counted with it", () =>
    Effect.gen(function*() {
      expect(Tokenizer.isLoaded()).toBe(false)
      yield* C.createBox({ name: "no-tokenizer" })
      expect(Tokenizer.isLoaded()).toBe(false)
      const answer = yield* postResponse({ model: "boxkit-local", input: "count me" })
      expect(answer.status).toBe(200)
      expect(Tokenizer.isLoaded()).toBe(true)
      expect(answer.json.usage.input_tokens).toBe(Tokenizer.countTokens("user: count me"))
    }).pipe(Effect.provide(Harness.service())))
})

