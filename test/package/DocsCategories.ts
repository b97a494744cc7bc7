/**
 * A TypeDoc plugin of Docs.test.ts, loaded by the package tests' pack (scripts/build.mjs `BOXKIT_DOCS_PLUGIN`,
 * test/support/PackedPackage.ts): once TypeDoc validates the converted project, writes to the file named by
 * `BOXKIT_DOCS_CATEGORIES` (JSON) how many entry points it documents and `path: name` of every export listed outside a
 * category (TypeDoc's "Other"), in every module and namespace. It reads the project in memory, so that the pack's
 * TypeDoc run writes no pages nor a JSON model of the whole reference (about 78 MB) to read back.
 */
import { writeFileSync } from "node:fs"
import { Application, type ContainerReflection, type ProjectReflection, ReflectionKind } from "typedoc"

/** What the plugin writes: the entry points documented, and the exports outside a category. */
export interface Categories {
  readonly entryPoints: number
  readonly uncategorized: ReadonlyArray<string>
}

/** TypeDoc's kinds of a module and of a namespace (`export * as X`), whose exports are listed by category. */
const isModule = (reflection: ContainerReflection) => reflection.kindOf(ReflectionKind.Module | ReflectionKind.Namespace)

/** `path: name` of every export listed outside a category, in `reflection` and the modules and namespaces in it. */
const uncategorized = (reflection: ContainerReflection, path: string): Array<string> => {
  const here = path === "" ? reflection.name : `${path}.${reflection.name}`
  const children = reflection.children ?? []
  const categorized = new Set(
    (reflection.categories ?? []).filter((category) => category.title !== "Other").flatMap((category) => category.children)
  )
  const own = isModule(reflection) ? children.filter((child) => !categorized.has(child)).map((child) => `${here}: ${child.name}`) : []
  return [...own, ...children.filter(isModule).flatMap((child) => uncategorized(child, here))]
}

/** TypeDoc's entry point of a plugin. */
export const load = (app: Application) => {
  app.on(Application.EVENT_VALIDATE_PROJECT, (project: ProjectReflection) => {
    const entries = project.children ?? []
    const categories: Categories = {
      entryPoints: entries.length,
      uncategorized: entries.flatMap((entry) => uncategorized(entry, ""))
    }
    writeFileSync(process.env["BOXKIT_DOCS_CATEGORIES"]!, JSON.stringify(categories))
  })
}
