/**
 * Reads a V8 `.cpuprofile` (as written by `node --cpu-prof`): self time per frame, aggregated over the profile's nodes
 * by function name, file, line and column. Positions in the repository's `.ts` files are mapped back to the source
 * through a {@link SourceMapper} (V8 reports positions in tsx's transpiled output, whole modules on one line).
 *
 * Source: CONTRIBUTING.md "Benchmarks" (`npm run bench:profile`: the top self-time frames of the service, to see
 * where its CPU goes).
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { createRequire, SourceMap } from "node:module"
import { fileURLToPath } from "node:url"
import { root } from "./Child.js"

/** The parts of a V8 `.cpuprofile` used here. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number }
  }>
  /** Monotonic clock (CLOCK_MONOTONIC on Linux, as `process.hrtime`) at the start, in microseconds. */
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A time window on the monotonic clock (`process.hrtime.bigint() / 1000n`), in microseconds. */
export interface Window {
  readonly fromMicros: number
  readonly toMicros: number
}

/** `process.hrtime` now, in microseconds: the clock of {@link CpuProfile.startTime} on Linux. */
export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n)

/** One frame's self time, in microseconds, and its share of the sampled time. */
export interface Frame {
  readonly frame: string
  readonly selfMicros: number
  readonly share: number
}

/** Maps a 0-based position in the code V8 ran back to `file:line:column` (1-based) of the source. */
export type SourceMapper = (url: string, line: number, column: number) => string

/** Positions as V8 reports them, the repository root left out of the path. */
export const generatedPositions: SourceMapper = (url, line, column) =>
  `${url.replace(`file://${root}/`, "")}:${line + 1}:${column + 1}`

/**
 * Maps positions in `.ts` files through the transpilation tsx does (esbuild, the options of tsx 4: target this node,
 * `minifyWhitespace`, `keepNames`, ESM, source map), applied to `sources` (path → the file's text when the profiled
 * process loaded it). A function's start maps to the nearest mapped token, usually the line of its parameters or the
 * first line of its body. Other positions, or when esbuild cannot be loaded, stay as V8 reports them.
 */
export const tsxSourceMapper = (sources: ReadonlyMap<string, string>): SourceMapper => {
  type Transform = (code: string, options: Record<string, unknown>) => { readonly map: string }
  let transformSync: Transform | undefined
  try {
    // esbuild comes with tsx (a dependency); resolved from tsx's own location.
    const fromTsx = createRequire(createRequire(import.meta.url).resolve("tsx/package.json"))
    transformSync = (fromTsx("esbuild") as { transformSync: Transform }).transformSync
  } catch {
    transformSync = undefined
  }
  const maps = new Map<string, SourceMap | null>()
  const mapOf = (path: string): SourceMap | null => {
    if (!maps.has(path)) {
      const text = sources.get(path)
      maps.set(
        path,
        transformSync === undefined || text === undefined ? null : new SourceMap(JSON.parse(transformSync(text, {
          target: `node${process.versions.node}`,
          loader: "ts",
          format: "esm",
          sourcemap: "external",
          minifyWhitespace: true,
          keepNames: true,
          sourcefile: path
        }).map))
      )
    }
    return maps.get(path) ?? null
  }
  return (url, line, column) => {
    if (!url.startsWith(`file://${root}/`) || !url.endsWith(".ts")) return generatedPositions(url, line, column)
    const path = fileURLToPath(url)
    const entry = mapOf(path)?.findEntry(line, column)
    if (entry === undefined || !("originalLine" in entry)) return generatedPositions(url, line, column)
    return `${path.slice(root.length + 1)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`
  }
}

/** Reads the current text of `paths` (to snapshot them before a profiled process loads them). */
export const snapshot = (paths: ReadonlyArray<string>): Map<string, string> =>
  new Map(paths.map((path) => [path, readFileSync(path, "utf8")] as const))

/**
 * Self time per frame (function, file, line, column), or per file with `by: "file"` (V8's own entries such as
 * `(garbage collector)` and native functions are listed by name), largest first; only samples inside `window` when
 * given.
 */
export const selfTimes = (
  profile: CpuProfile,
  window?: Window,
  mapper: SourceMapper = generatedPositions,
  by: "frame" | "file" = "frame"
): Array<Frame> => {
  const keyOf = new Map<number, string>()
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber, columnNumber } = node.callFrame
    const name = functionName === "" ? "(anonymous)" : functionName
    const where = url === "" ? "" : mapper(url, lineNumber, columnNumber)
    keyOf.set(
      node.id,
      by === "file" ? (where === "" ? name : where.replace(/:\d+:\d+$/, "")) : where === "" ? name : `${name} ${where}`
    )
  }
  const self = new Map<string, number>()
  let total = 0
  let at = profile.startTime
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0
    at += delta
    if (window !== undefined && (at < window.fromMicros || at > window.toMicros)) return
    const key = keyOf.get(id) ?? "(unknown)"
    self.set(key, (self.get(key) ?? 0) + delta)
    total += delta
  })
  return [...self.entries()]
    .map(([frame, selfMicros]) => ({ frame, selfMicros, share: selfMicros / total }))
    .sort((a, b) => b.selfMicros - a.selfMicros)
}
