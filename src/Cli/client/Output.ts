/**
 * What the client commands print on stdout: with `--json` the resource as the API answered it (encoded back to its
 * wire form by the contract's schema, one JSON document, nothing else on stdout); otherwise its fields for a person,
 * one per line with the values aligned, times with how long ago they were (`2026-11-24T10:00:00.000Z (3 min ago)`),
 * nested values as compact JSON, and the status in colour on a terminal only (never when `NO_COLOR` is set to a
 * non-empty value).
 *
 * Source: docs/ASSUMPTIONS.md "Command line (client commands)".
 *
 * @since 0.1.0
 */
import { Clock, Console, Effect, Schema } from "effect"
import * as StatusTone from "../../Domain/StatusTone.js"

/**
 * True when `stream` (default stdout) is a terminal that takes colours and other ANSI escapes: a TTY, `NO_COLOR`
 * unset or empty (any other value turns them off, as no-color.org asks), `TERM` not `dumb`. Settings that force
 * colours (`FORCE_COLOR`, `CLICOLOR_FORCE`) are not read: a pipe or a file never gets escapes.
 */
export const colours = (
  stream: { readonly isTTY?: boolean } = process.stdout,
  env: Readonly<Record<string, string | undefined>> = process.env
): boolean => stream.isTTY === true && (env.NO_COLOR ?? "") === "" && env.TERM !== "dumb"

const ansi = { green: 32, yellow: 33, red: 31, dim: 2 } as const

/** `text` in an ANSI colour when `on`. */
export const paint = (text: string, colour: keyof typeof ansi, on: boolean): string =>
  on ? `\u001b[${ansi[colour]}m${text}\u001b[0m` : text

/** The colour of each status tone (StatusTone.ts, the table the inspection page shows too). */
const toneColours: Readonly<Record<StatusTone.Tone, keyof typeof ansi>> = { good: "green", bad: "red", moving: "yellow" }

/** `then` relative to `now` (both Unix ms) in words: `just now`, `12 s ago`, `3 min ago`, `in 5 h`, `2 d ago`. */
export const relativeTime = (then: number, now: number): string => {
  const seconds = Math.round((now - then) / 1000)
  const magnitude = Math.abs(seconds)
  if (magnitude < 2) return "just now"
  const [amount, unit] = magnitude < 60
    ? [magnitude, "s"]
    : magnitude < 3600
    ? [Math.floor(magnitude / 60), "min"]
    : magnitude < 86400
    ? [Math.floor(magnitude / 3600), "h"]
    : [Math.floor(magnitude / 86400), "d"]
  return seconds >= 0 ? `${amount} ${unit} ago` : `in ${amount} ${unit}`
}

/**
 * A time field's value as Unix ms: fields named `*_at` holding an ISO date-time string or Unix seconds (the spec's
 * `created_at` of responses), else undefined.
 */
const timeOf = (field: string, value: unknown): number | undefined => {
  if (!field.endsWith("_at")) return undefined
  if (typeof value === "number" && Number.isFinite(value)) return value * 1000
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const millis = Date.parse(value)
    return Number.isNaN(millis) ? undefined : millis
  }
  return undefined
}

/** One value as a person reads it. */
const show = (field: string, value: unknown, now: number, colour: boolean): string => {
  if (value === null || value === undefined) return "-"
  const time = timeOf(field, value)
  if (time !== undefined) return `${typeof value === "number" ? new Date(time).toISOString() : value} (${relativeTime(time, now)})`
  if (field === "status" && typeof value === "string") return paint(value, toneColours[StatusTone.toneOf(value)], colour)
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value.length === 0 ? "-" : value.join(", ")
  return JSON.stringify(value)
}

/**
 * The fields of a resource for a person: one `name  value` line per field, names padded to the longest. Pure:
 * `now` (Unix ms) is when the times are relative to.
 */
export const fieldLines = (
  resource: Readonly<Record<string, unknown>>,
  options: { readonly now: number; readonly colour: boolean }
): ReadonlyArray<string> => {
  const entries = Object.entries(resource).filter(([, value]) => value !== undefined)
  const width = Math.max(0, ...entries.map(([field]) => field.length))
  return entries.map(([field, value]) => `${field.padEnd(width)}  ${show(field, value, options.now, options.colour)}`)
}

/** How a command prints its result: `--json` or for a person. */
export interface Mode {
  readonly json: boolean
}

/**
 * Prints a resource decoded by `schema`: with `--json` its wire form (`schema` encodes it back) as JSON, else the
 * fields for a person (`forPerson` chooses which, from the wire form; default all), then `after` lines if any.
 */
export const printResource = <A, I>(
  schema: Schema.Schema<A, I>,
  resource: A,
  mode: Mode,
  options: {
    readonly forPerson?: (wire: I) => Readonly<Record<string, unknown>>
    readonly after?: ReadonlyArray<string>
  } = {}
) =>
  Effect.gen(function*() {
    const wire = yield* Schema.encode(schema)(resource).pipe(Effect.orDie)
    if (mode.json) return yield* Console.log(JSON.stringify(wire, null, 2))
    const now = yield* Clock.currentTimeMillis
    const shown = options.forPerson !== undefined ? options.forPerson(wire) : wire as Record<string, unknown>
    yield* Console.log([...fieldLines(shown, { now, colour: colours() }), ...(options.after ?? [])].join("\n"))
  })
