/**
 * How every command of `boxkit` reports a failure: a first line that says what failed and why in plain words, a
 * second line with the fix when there is an obvious one, and an exit code scripts can rely on (2: the command line
 * was wrong; 1: anything else failed). No stack unless `--verbose` (or `BOXKIT_DEBUG=1`), which adds the cause chain
 * with its stack.
 *
 * Source: docs/ASSUMPTIONS.md "Errors on the command line and in logs"; exit codes: README "The local box service".
 *
 * @since 0.1.0
 */
import { HelpDoc, ValidationError } from "@effect/cli"
import { HttpServerError } from "@effect/platform"
import { Cause, ConfigError, Duration, Option, Predicate } from "effect"
import * as ApiError from "../ApiError.js"
import { IdempotencyKeyHeader } from "../Contract/Headers.js"
import * as FaultInjection from "../Server/pipeline/FaultInjection.js"
import * as Seed from "../Server/state/Seed.js"
import * as StateStore from "../Server/state/StateStore.js"
import * as Orchestrate from "./Orchestrate.js"
import * as Serve from "./Serve.js"
import * as SqlDriver from "../Sql/SqlDriver.js"
import { ClientCommandError } from "./client/ClientOptions.js"

/**
 * What a failed command prints on stderr (`lines`) and the exit code it ends with.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Report {
  readonly lines: ReadonlyArray<string>
  readonly exitCode: number
}

/** Exit code of a command line that was wrong (unknown flag, bad value): nothing ran. */
export const usageExitCode = 2
/** Exit code of every other failure. */
export const failureExitCode = 1

interface Explained {
  /** What failed and why, after `boxkit COMMAND: `. */
  readonly what: string
  /** Further lines (e.g. one per problem of a file), indented. */
  readonly details?: ReadonlyArray<string>
  /** What to do, when there is an obvious fix. */
  readonly fix?: string
  readonly exitCode?: number
}

const systemErrorCode = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined

/** A listening failure, by the Node error behind it. */
const serveFailure = (error: HttpServerError.ServeError): Explained => {
  const cause = error.cause as { readonly address?: string; readonly port?: number } | undefined
  const at = cause?.port !== undefined ? `port ${cause.port}${cause.address !== undefined ? ` on ${cause.address}` : ""}` : "the port"
  switch (systemErrorCode(error.cause)) {
    case "EADDRINUSE":
      return { what: `${at} is in use`, fix: "pass --port 0 (any free port) or another port" }
    case "EACCES":
      return { what: `no permission to listen on ${at}`, fix: "pass a port above 1023, or --port 0" }
    case "EADDRNOTAVAIL":
      return { what: `cannot listen on ${at}: the address is not on this machine`, fix: "pass --host 127.0.0.1" }
    default:
      return { what: `cannot listen on ${at}: ${cause instanceof Error ? cause.message : String(error.cause)}` }
  }
}

/** Why a connection failed, in words, from the transport error's text. */
const connectionReason = (message: string): string => {
  if (/ECONNREFUSED/.test(message)) return "connection refused"
  if (/ENOTFOUND|EAI_AGAIN/.test(message)) return "host not found"
  if (/ECONNRESET|other side closed|socket hang up/i.test(message)) return "the connection was closed before an answer"
  if (/ETIMEDOUT|timeout/i.test(message)) return "the connection timed out"
  return message
}

/**
 * A transport failure in words. Only a request that never left the client (`requestSent: false`: refused, host not
 * found) means "no service"; a connection lost after the request was sent means the service may have carried it out,
 * so the fix is to look before repeating it.
 */
const transportFailure = (error: ApiError.TransportError): Explained => {
  const origin = URL.canParse(error.url) ? new URL(error.url).origin : error.url
  const reason = connectionReason(error.message)
  if (!error.requestSent) {
    return {
      what: `no service at ${origin}: ${reason} (${error.method} ${error.url})`,
      fix: "start one with \"boxkit serve\", or check --base-url (BOX_BASE_URL)"
    }
  }
  return {
    what: `the connection to ${origin} was lost after the request was sent: ${reason} (${error.method} ${error.url}); ` +
      "the service may have carried it out",
    fix: "check whether it took effect (e.g. read or list what it creates or changes) before running it again; " +
      "a command with --idempotency-key can be run again with the same key"
  }
}

const apiFailure = (error: ApiError.AnyApiError): Explained => {
  const said = `(${ApiError.summary(error)}): ${error.message}`
  if (error instanceof ApiError.AuthenticationError) {
    return { what: `the API key was refused ${said}`, fix: "check --api-key or BOX_API_KEY" }
  }
  if (error instanceof ApiError.PermissionError) {
    return { what: `the API key may not do this ${said}`, fix: "use an organization-scoped key (or an admin's, for owner overrides)" }
  }
  if (error instanceof ApiError.BillingError) {
    return {
      what: `the organization is out of credits ${said}`,
      ...(error.billing_url !== undefined ? { fix: `add credits at ${error.billing_url}` } : {})
    }
  }
  if (error instanceof ApiError.ConflictError && error.param?.toLowerCase() === IdempotencyKeyHeader) {
    return {
      what: `the idempotency key was already used for another request ${said}`,
      fix: "repeat the first request unchanged, or use a new --idempotency-key for new work"
    }
  }
  if (error instanceof ApiError.RateLimitError) {
    return {
      what: `rate limited ${said}`,
      fix: error.retryAfter !== undefined
        ? `try again in ${Duration.format(error.retryAfter)}`
        : "try again later, or fewer requests at once"
    }
  }
  return { what: `${ApiError.summary(error)}: ${error.message}` }
}

/** A configuration error in words: `BOX_API_KEY is not set`, `BOX_BASE_URL: <why it is invalid>`, joined by `; `. */
const configurationProblems = (error: ConfigError.ConfigError): string => {
  const leaves = (node: ConfigError.ConfigError): ReadonlyArray<string> => {
    switch (node._op) {
      case "And":
      case "Or":
        return [...leaves(node.left), ...leaves(node.right)]
      case "MissingData":
        return [`${node.path.join(".")} is not set`]
      case "InvalidData":
      case "SourceUnavailable":
      case "Unsupported":
        return [`${node.path.join(".")}: ${node.message}`]
    }
  }
  return [...new Set(leaves(error))].join("; ")
}

const explain = (error: unknown, command: string): Explained => {
  if (ValidationError.isValidationError(error)) {
    // @effect/cli has printed the error itself, as its help text does. A client command without a key: where to give one.
    const missingKey = error._tag === "MissingValue" && HelpDoc.toAnsiText(error.error).includes("'--api-key'")
    return {
      what: "",
      fix: missingKey
        ? "pass --api-key KEY or set BOX_API_KEY"
        : `run "boxkit ${command === "" ? "" : `${command} `}--help" for the usage`,
      exitCode: usageExitCode
    }
  }
  if (error instanceof FaultInjection.FaultSpecError) {
    return { what: error.message, fix: `run "boxkit serve --help" for the format`, exitCode: usageExitCode }
  }
  if (error instanceof Seed.SeedError) {
    return {
      what: error.issues.length > 0 ? `invalid seed file ${error.path}` : error.message,
      details: error.issues,
      fix: error.issues.length > 0
        ? "correct the file (its format: the README, \"The local box service\"), or leave out --seed for the example seed"
        : "pass the path of a JSON seed file to --seed, or leave it out for the example seed"
    }
  }
  if (error instanceof HttpServerError.ServeError) return serveFailure(error)
  if (error instanceof StateStore.StateStoreError) {
    return {
      what: `cannot open the state store: ${error.message}`,
      // A damaged SQLite file's error says what to do itself: one line.
      fix: error.message.endsWith(SqlDriver.damagedFileRemedy)
        ? undefined
        : error.message.includes("npm install")
        ? "install them next to boxkit, then run the command again"
        : "check --data-dir (a directory this user can write, used by no other boxkit serve) or --database-url " +
        "(BOXKIT_DATABASE_URL: a PostgreSQL database that exists and accepts the user)"
    }
  }
  if (error instanceof Orchestrate.OrchestrateOptionsError) {
    return { what: error.message, fix: `run "boxkit orchestrate --help" for the usage`, exitCode: usageExitCode }
    }
  if (error instanceof ClientCommandError) {
    return {
      what: error.message,
      fix: error.fix ?? (error.usage ? `run "boxkit ${command} --help" for the usage` : undefined),
      exitCode: error.usage ? usageExitCode : failureExitCode
    }
  }
  // Boxes.ts's BoxFailedError and WaitTimeoutError, by tag: this module does not load the client toolkit.
  if (Predicate.isTagged(error, "BoxFailedError") || Predicate.isTagged(error, "WaitTimeoutError")) {
    const failed = error as unknown as { readonly message: string; readonly box_id: string }
    return { what: failed.message, fix: `see it with "boxkit boxes get ${failed.box_id}"` }
  }
  if (error instanceof Serve.ServeOptionsError) {
    return { what: error.message, fix: `run "boxkit serve --help" for the usage`, exitCode: usageExitCode }
  }
  if (ApiError.isApiError(error) || error instanceof ApiError.UnknownApiError) return apiFailure(error)
  if (error instanceof ApiError.TransportError) return transportFailure(error)
  if (error instanceof ApiError.TimeoutError) {
    return { what: `no answer in time: ${error.message}`, fix: "check that the service is up and not overloaded" }
  }
  if (error instanceof ApiError.UnexpectedResponseError) {
    return { what: `unexpected answer (HTTP ${error.status}): ${error.message}`, fix: "check that --base-url points at a Box Service" }
  }
  if (ConfigError.isConfigError(error)) {
    return { what: configurationProblems(error), fix: "set it in the environment, or pass the matching flag (see --help)" }
  }
  const message = error instanceof Error ? error.message : String(error)
  const tag = typeof error === "object" && error !== null && "_tag" in error ? `${String(error._tag)}: ` : ""
  return { what: `${tag}${message}`, fix: "run it again with --verbose for the cause and its stack" }
}

/**
 * The report of a failed command: `boxkit COMMAND: what failed and why`, its details, `fix: …` when there is an
 * obvious fix, and with `verbose` the whole cause (`Cause.pretty`: the cause chain and stacks, mapped to the
 * TypeScript sources when the command runs with source maps). A usage error (exit 2) prints only the fix line:
 * `@effect/cli` has printed the error already.
 *
 * @since 0.1.0
 */
export const report = (cause: Cause.Cause<unknown>, options: { readonly command: string; readonly verbose: boolean }): Report => {
  const failure = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
  const explained: Explained = Option.isSome(failure)
    ? explain(failure.value, options.command)
    : { what: "interrupted" }
  const prefix = options.command === "" ? "boxkit" : `boxkit ${options.command}`
  const lines = [
    ...(explained.what === "" ? [] : [`${prefix}: ${explained.what}`]),
    ...(explained.details ?? []).map((line) => `  ${line}`),
    ...(explained.fix !== undefined ? [`fix: ${explained.fix}`] : []),
    ...(options.verbose ? ["", Cause.pretty(cause, { renderErrorCause: true })] : [])
  ]
  return { lines, exitCode: explained.exitCode ?? failureExitCode }
}
