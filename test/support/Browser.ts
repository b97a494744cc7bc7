/**
 * A real headless browser for the page tests: Debian's `chromium` (installed by .ci/run) driven by `playwright-core`,
 * launched once per test file with {@link flags}. Screenshots go to `BOXKIT_SCREENSHOTS` (e.g. `docs/screenshots` to
 * refresh the README's), else to a temporary directory.
 */
import { Context, Effect, Layer } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Browser as PlaywrightBrowser, chromium } from "playwright-core"

/** Debian's chromium, where its package puts it. */
export const chromiumPath = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"].find((path) => existsSync(path))

/**
 * The flags the browser runs with: headless, without the sandbox (the tests may run as root in a container), without
 * a GPU, first-run screens or background networking (so that the only requests are the pages' own).
 */
export const flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

/** The launched browser. */
export class Browser extends Context.Tag("test/Browser")<Browser, PlaywrightBrowser>() {}

/** Chromium, launched for as long as the layer lasts. */
export const layer = Layer.scoped(
  Browser,
  Effect.acquireRelease(
    Effect.promise(() => {
      if (chromiumPath === undefined) {
        throw new Error("Debian's chromium is not installed: `bash .ci/run` installs it (apt-get install chromium)")
      }
      return chromium.launch({ executablePath: chromiumPath, args: flags, headless: true })
    }),
    (browser) => Effect.promise(() => browser.close())
  )
)

/** Where screenshots go: `BOXKIT_SCREENSHOTS`, else a temporary directory. Created when missing. */
export const screenshotPath = (name: string): string => {
  const directory = process.env.BOXKIT_SCREENSHOTS ?? join(tmpdir(), "boxkit-screenshots")
  mkdirSync(directory, { recursive: true })
  return join(directory, name)
}
