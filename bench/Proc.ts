/**
 * Reads CPU time and memory of child processes from Linux `/proc`: `utime + stime` of `/proc/<pid>/stat` (in clock
 * ticks, `getconf CLK_TCK`, 100 per second = 10 ms here) and `VmRSS` / `VmHWM` of `/proc/<pid>/status`.
 *
 * Every server under test runs in its own process group (spawned `detached`), so "the server" is the group: the tsx
 * CLI wrapper, the node process it starts and tsx's esbuild service. CPU is summed over the group (the others are
 * idle while serving); RSS is the one of the serving process, the deepest node process of the group.
 *
 * Source: BENCHMARKS.md section 1 (server CPU: utime + stime from `/proc/<pid>/stat` before and after, 10 ms ticks).
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync, readlinkSync } from "node:fs"

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 when it cannot be read). */
export const clockTicksPerSecond: number = (() => {
  try {
    const value = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim())
    return Number.isInteger(value) && value > 0 ? value : 100
  } catch {
    return 100
  }
})()

/**
 * The fields of `/proc/<pid>/stat` the suite uses: state (`Z` zombie, `X` dead), parent pid, process group, CPU ticks
 * in user and kernel mode, and those of its children it has reaped (`cutime`, `cstime`: children that ended).
 */
export interface ProcStat {
  readonly pid: number
  readonly state: string
  readonly ppid: number
  readonly pgrp: number
  readonly utime: number
  readonly stime: number
  readonly cutime: number
  readonly cstime: number
}

/** The text of `/proc/<pid>/<name>`; `undefined` when the process is gone. */
const readProcFile = (pid: number, name: string): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/${name}`, "utf8")
  } catch {
    return undefined
  }
}

/** Parses `/proc/<pid>/stat`; `undefined` when the process is gone. The command name may contain spaces. */
export const readStat = (pid: number): ProcStat | undefined => {
  const text = readProcFile(pid, "stat")
  if (text === undefined) return undefined
  // Fields after the command name, which is in parentheses: state(3) ppid(4) pgrp(5) ... utime(14) stime(15)
  // cutime(16) cstime(17).
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ")
  return {
    pid,
    state: rest[0],
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    utime: Number(rest[11]),
    stime: Number(rest[12]),
    cutime: Number(rest[13]),
    cstime: Number(rest[14])
  }
}

/** Every live process whose process group is `pgid` (zombies, which wait to be reaped, left out). */
export const groupMembers = (pgid: number): Array<ProcStat> => {
  const members: Array<ProcStat> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(Number(entry))
    if (stat !== undefined && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") members.push(stat)
  }
  return members
}

/** CPU time of a process group so far, in clock ticks (`utime + stime` summed over its live members). */
export const groupCpuTicks = (pgid: number): number =>
  groupMembers(pgid).reduce((sum, member) => sum + member.utime + member.stime, 0)

/** Converts clock ticks to microseconds. */
export const ticksToMicros = (ticks: number): number => (ticks * 1_000_000) / clockTicksPerSecond

/** True when `pid` runs the same node executable as this process (and is not, e.g., tsx's esbuild service). */
const isNode = (pid: number): boolean => {
  try {
    return readlinkSync(`/proc/${pid}/exe`) === process.execPath
  } catch {
    return false
  }
}

/**
 * The serving process of a group: the deepest node process in it (under `node bin/boxkit.js` -> tsx CLI -> node, the
 * last one). Other members (tsx's esbuild service) are not node processes.
 */
export const servingPid = (pgid: number): number | undefined => {
  const members = groupMembers(pgid)
  const byPid = new Map(members.map((member) => [member.pid, member] as const))
  const depth = (member: ProcStat): number => {
    const parent = byPid.get(member.ppid)
    return parent === undefined ? 0 : 1 + depth(parent)
  }
  const nodes = members.filter((member) => isNode(member.pid))
  return nodes.length === 0 ? undefined : nodes.reduce((a, b) => (depth(b) > depth(a) ? b : a)).pid
}

/** Memory of one process: resident set now (`VmRSS`) and its peak (`VmHWM`), in bytes. */
export interface Memory {
  readonly rssBytes: number
  readonly peakRssBytes: number
}

/** Reads `VmRSS` and `VmHWM` of `pid`; `undefined` when the process is gone. */
export const readMemory = (pid: number): Memory | undefined => {
  const text = readProcFile(pid, "status")
  if (text === undefined) return undefined
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN)
  return { rssBytes: kib("VmRSS") * 1024, peakRssBytes: kib("VmHWM") * 1024 }
}

/** The arguments of `pid` (`/proc/<pid>/cmdline`); `undefined` when the process is gone. */
export const commandLine = (pid: number): ReadonlyArray<string> | undefined =>
  readProcFile(pid, "cmdline")?.split("\0").filter((arg) => arg !== "")

/** The live processes whose arguments satisfy `predicate` (e.g. a PostgreSQL server by its `-p PORT`). */
export const findProcesses = (predicate: (args: ReadonlyArray<string>, stat: ProcStat) => boolean): Array<ProcStat> => {
  const found: Array<ProcStat> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(Number(entry))
    if (stat === undefined || stat.state === "Z" || stat.state === "X") continue
    const args = commandLine(stat.pid)
    if (args !== undefined && predicate(args, stat)) found.push(stat)
  }
  return found
}

/**
 * CPU time of a process and all its live descendants so far, in clock ticks (e.g. a PostgreSQL server and its
 * backends, which are not in a process group of ours).
 */
export const treeCpuTicks = (pid: number): number => {
  const all: Array<ProcStat> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(Number(entry))
    if (stat !== undefined && stat.state !== "Z" && stat.state !== "X") all.push(stat)
  }
  const children = new Map<number, Array<ProcStat>>()
  for (const stat of all) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat])
  const self = all.find((stat) => stat.pid === pid)
  if (self === undefined) return 0
  let ticks = 0
  const pending = [self]
  while (pending.length > 0) {
    const next = pending.pop()!
    ticks += next.utime + next.stime
    pending.push(...(children.get(next.pid) ?? []))
  }
  return ticks
}

/**
 * CPU time of a process, its live descendants and the children it has reaped so far, in clock ticks: the whole CPU of
 * a server that starts and ends a process per connection (PostgreSQL's backends), whose ended backends
 * {@link treeCpuTicks} no longer sees. 0 when the process is gone.
 */
export const treeCpuTicksWithEnded = (pid: number): number => {
  const self = readStat(pid)
  return self === undefined ? 0 : treeCpuTicks(pid) + self.cutime + self.cstime
}
