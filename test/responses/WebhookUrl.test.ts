/**
 * How a webhook URL is shown (WebhookUrl.ts): its userinfo redacted, every other text unchanged; a text without `@` is
 * returned without being parsed, which gives what parsing gives.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { redactUserinfo } from "../../src/Server/responses/WebhookUrl.js"

/** The rule by parsing every text. */
const parsedRedaction = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.username === "" && parsed.password === "") return url
    if (parsed.username !== "") parsed.username = "REDACTED"
    if (parsed.password !== "") parsed.password = "REDACTED"
    return parsed.toString()
  } catch {
    return url
  }
}

describe("WebhookUrl.redactUserinfo", () => {
  it("redacts the user name and password, and keeps URLs without userinfo and other texts as they are", () => {
    expect(redactUserinfo("https://alice:secret@hooks.example/in")).toBe("https://REDACTED:REDACTED@hooks.example/in")
    expect(redactUserinfo("http://alice@hooks.example/")).toBe("http://REDACTED@hooks.example/")
    expect(redactUserinfo("http://:pw@hooks.example/")).toBe("http://:REDACTED@hooks.example/")
    expect(redactUserinfo("http://hooks.example/a@b?c=@d")).toBe("http://hooks.example/a@b?c=@d")
    expect(redactUserinfo("HTTP://Hooks.Example:80/x")).toBe("HTTP://Hooks.Example:80/x")
    expect(redactUserinfo("not a url @ all")).toBe("not a url @ all")
  })

  it("equals the rule by parsing on arbitrary URLs and texts", () => {
    const urls = fc.tuple(
      fc.constantFrom("http://", "https://", "HTTP://", "ftp://", ""),
      fc.option(fc.tuple(fc.webSegment(), fc.option(fc.webSegment())), { nil: undefined }),
      fc.domain(),
      fc.webPath(),
      fc.string()
    ).map(([scheme, user, host, path, tail]) =>
      `${scheme}${user === undefined ? "" : `${user[0]}${user[1] === null ? "" : `:${user[1]}`}@`}${host}${path}${tail}`
    )
    fc.assert(
      fc.property(fc.oneof(urls, fc.webUrl({ withQueryParameters: true, withFragments: true }), fc.string()), (url) => {
        expect(redactUserinfo(url)).toBe(parsedRedaction(url))
      }),
      { numRuns: 2000, seed: 5 }
    )
  })
})
