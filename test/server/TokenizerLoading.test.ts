/**
 * The tokenizer is loaded on the first response, not at start nor by other areas: its tables are the largest part
 * of the command's start (docs/decisions/0002-what-the-fast-paths-save.md), which a service that never answers a
 * model response should not pay. It needs modules no other test file has loaded: vitest.config.ts runs this file in
 * a project of its own with `isolate: true`, and each variant imports the service's modules afresh
 * (`vi.resetModules`), so that the first serving path's response does not load the tokenizer for the second.
 */
import { describe, expect, it, vi } from "@effect/vitest"
import { Effect } from "effect"
import * as Harness from "../support/Harness.js"

/** The modules of the test, imported afresh: none of the service's modules is shared with an earlier variant. */
const freshModules = Effect.promise(async () => {
  vi.resetModules()
  return {
    Tokenizer: await import("../../src/Server/responses/Tokenizer.js"),
    C: await import("../conformance/support/Conformance.js"),
    FreshHarness: await import("../support/Harness.js"),
    support: await import("../responses/support.js")
  }
})

describe.each(Harness.variants())("the tokenizer ($name)", (variant) => {
  it.live("is not loaded at start nor by other areas; the first response loads it and is counted with it", () =>
    Effect.flatMap(freshModules, ({ C, FreshHarness, Tokenizer, support }) =>
      Effect.gen(function*() {
        expect(Tokenizer.isLoaded()).toBe(false)
        yield* C.createBox({ name: "no-tokenizer" })
        expect(Tokenizer.isLoaded()).toBe(false)
        const answer = yield* support.postResponse({ model: "boxkit-local", input: "count me" })
        expect(answer.status).toBe(200)
        expect(Tokenizer.isLoaded()).toBe(true)
        expect(answer.json.usage.input_tokens).toBe(Tokenizer.countTokens("user: count me"))
      }).pipe(Effect.provide(FreshHarness.serviceOn(variant)))))
})
