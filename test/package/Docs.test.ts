/**
 * The API reference (`npm run docs`, TypeDoc over the package's entry points) builds from the docstrings without a
 * warning: links resolve and every entry point documents. And every export of every entry point, and of every module
 * they re-export, carries a `@category` (Effect's groups: Models, Schemas, Errors, Layers, ...), so that no page of
 * the reference lists exports under TypeDoc's "Other".
 *
 * TypeDoc runs inside the package tests' pack (test/support/PackedPackage.ts, scripts/build.mjs `BOXKIT_DOCS_CHECK`),
 * with typedoc.json's settings, over the program the declarations are emitted from: the sources are compiled once for
 * both, and a type error fails the pack as it fails `npm run docs`. It writes no pages; its messages and what the
 * plugin DocsCategories.ts read from the project in memory are kept beside the tarball, and checked here.
 */
import { expect, it } from "vitest"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as PackedPackage from "../support/PackedPackage.ts"

const checkout = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

it("npm run docs: TypeDoc finds no error and no warning, and every export has a category", async () => {
  const { docs } = await PackedPackage.packed()
  const settings = JSON.parse(readFileSync(join(checkout, "typedoc.json"), "utf8")) as { readonly entryPoints: ReadonlyArray<string> }
  expect(docs.messages.filter((logged) => logged.level !== "Info" || /warning|error/i.test(logged.message))).toEqual([])
  expect(docs.categories?.entryPoints).toBe(settings.entryPoints.length)
  expect(docs.categories?.uncategorized).toEqual([])
}, PackedPackage.packLimitMillis)
