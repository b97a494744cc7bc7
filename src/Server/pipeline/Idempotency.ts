/**
 * Idempotency keys of the local service: the remembered answers of create box, upgrade and create response.
 *
 * Source: spec "Limits / Idempotency rules" and "Errors" rules 3-4: a key is at most 255 bytes (UTF-8), a blank key is
 * ignored, a retry repeating key, method, path and body byte for byte gets the remembered answer with
 * `Idempotent-Replayed: true`, a different request with the same key gets 409, keys are scoped to the sending API
 * key and remembered at least 24 hours. A 5xx answer or a failure to record leaves the key unsettled.
 *
 * Memory: the in-memory store keeps one map per API key and one flat Latin-1 string per settled key
 * (expiry, fingerprint, status, headers and body bytes): about 200 bytes for a create-box answer, no object, buffer
 * or closure per key.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Duration, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import { defaultIdempotencyBytes, defaultIdempotencyKeys } from "../Quotas.js"

/**
 * The largest answer body remembered by default, in bytes (1 MiB; Quotas.ts `idempotencyAnswerBytes`): a larger answer is not recorded and its key is left
 * unsettled, so a retry runs again (spec: a failure to record the answer can leave a key unsettled). Create-box and
 * upgrade answers are a few KiB; a model response answer that echoes a large input can pass it. Source:
 * docs/ASSUMPTIONS.md "Quotas".
 */
export const maxRememberedAnswerBytes = 1024 * 1024

/** A remembered answer: status, the headers that matter, and the body bytes. */
export interface RememberedAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

/** The store could not read or record a key (a durable store's failure); `reason` says why. */
export class IdempotencyStoreError extends Data.TaggedError("IdempotencyStoreError")<{
  readonly reason: string
  /** The store's own error, when there is one (StoreOutage.ts tells from it whether the store is unavailable). */
  readonly cause?: unknown
}> {}

/** The outcome of presenting a key. */
export type Claim =
  /**
   * First use (or an unsettled key): run the request, then `settle` (remember the answer) or `release` (forget the
   * key: a retry runs again). A failed `settle` must be followed by `release`.
   */
  | {
    readonly _tag: "Started"
    readonly settle: (answer: RememberedAnswer) => Effect.Effect<void, IdempotencyStoreError>
    readonly release: Effect.Effect<void>
  }
  /** The same request was answered before: replay `answer`. */
  | { readonly _tag: "Replay"; readonly answer: RememberedAnswer }
  /** The same key is running right now. */
  | { readonly _tag: "InFlight" }
  /** The key was used for a different request (method, path or body differ). */
  | { readonly _tag: "Mismatch" }
  /**
   * A new key while the API key holds its quota of remembered keys or answer bytes (Quotas.ts): the request must not
   * run (429 `quota_exceeded_error` code `idempotency_keys`).
   */
  | { readonly _tag: "Full" }

/** The fingerprint of a request: SHA-256 over method, path (with query) and body bytes. */
export const fingerprint = (method: string, url: string, body: Uint8Array): string =>
  createHash("sha256").update(method).update("\u0000").update(url).update("\u0000").update(body).digest("base64")

/** The store of keys. `scope` is the sending API key's id; keys of different API keys never meet. */
export class IdempotencyStore extends Context.Tag("boxkit/server/IdempotencyStore")<IdempotencyStore, {
  /**
   * Presents `key` of the API key `scope` for a request with `fingerprint`; atomic with every other claim. `inUnit`:
   * the claim and its request run in one unit of work of a store with one writer (`Transactions.claimsInUnit`), so
   * nobody else can present the key before the unit ends; a store may then write a first use only when it settles.
   */
  readonly claim: (
    scope: string,
    key: string,
    fingerprint: string,
    inUnit?: boolean
  ) => Effect.Effect<Claim, IdempotencyStoreError>
  /** How many keys are remembered (settled or running). */
  readonly size: Effect.Effect<number>
}>() {}

/** A key whose request is running: its fingerprint; the object itself tells two claims of one key apart. */
class Running {
  constructor(readonly fingerprint: string) {}
}

/**
 * The `Started` claim of the in-memory store. `settle` and `release` are own properties (a claim can be copied with
 * a spread), made without closures named per claim.
 */
class StartedClaim {
  readonly _tag = "Started"
  readonly settle: (answer: RememberedAnswer) => Effect.Effect<void, IdempotencyStoreError>
  readonly release: Effect.Effect<void>

  constructor(
    private readonly entries: Map<string, string | Running>,
    private readonly key: string,
    private readonly running: Running,
    private readonly retentionMillis: number,
    private readonly forget: () => void,
    private readonly remember: (bytes: number) => void
  ) {
    this.settle = this.settleWith.bind(this)
    this.release = Effect.sync(this.releaseNow.bind(this))
  }

  private settleWith(answer: RememberedAnswer): Effect.Effect<void> {
    return Effect.map(Clock.currentTimeMillis, (at) => {
      if (this.entries.get(this.key) === this.running) {
        const settled = encodeSettled(at + this.retentionMillis, this.running.fingerprint, answer)
        this.entries.set(this.key, settled)
        this.remember(settled.length)
      }
    })
  }

  private releaseNow(): void {
    if (this.entries.get(this.key) === this.running) {
      this.entries.delete(this.key)
      this.forget()
    }
  }
}

/**
 * A settled key as one flat Latin-1 string (one heap object per key; no object, map or buffer per answer):
 * `expiresAtMillis NUL fingerprint NUL status NUL headerCount NUL (name NUL value NUL)* body`, the body's bytes one
 * character each. Header names and values never hold NUL (HTTP forbids it); the fingerprint is base64.
 */
export const encodeSettled = (expiresAtMillis: number, fingerprint: string, answer: RememberedAnswer): string => {
  let head = `${expiresAtMillis}\u0000${fingerprint}\u0000${answer.status}\u0000`
  const names = Object.keys(answer.headers)
  head += `${names.length}\u0000`
  for (const name of names) head += `${name}\u0000${answer.headers[name]}\u0000`
  const headBytes = Buffer.from(head, "latin1")
  const body = answer.body
  const bytes = Buffer.allocUnsafe(headBytes.byteLength + body.byteLength)
  headBytes.copy(bytes, 0)
  bytes.set(body, headBytes.byteLength)
  // Built from a buffer, the string is flat: no chain of concatenations stays behind it.
  return bytes.toString("latin1")
}

const field = (encoded: string, from: number): [string, number] => {
  const end = encoded.indexOf("\u0000", from)
  return [encoded.slice(from, end), end + 1]
}

/** The expiry (Unix ms) of an {@link encodeSettled} string. */
export const settledExpiry = (encoded: string): number => Number(encoded.slice(0, encoded.indexOf("\u0000")))

/** The fingerprint of an {@link encodeSettled} string. */
export const settledFingerprint = (encoded: string): string => field(encoded, encoded.indexOf("\u0000") + 1)[0]

/** The answer of an {@link encodeSettled} string. */
export const decodeSettled = (encoded: string): RememberedAnswer => {
  let at = encoded.indexOf("\u0000") + 1
  let value: string
  ;[, at] = field(encoded, at)
  ;[value, at] = field(encoded, at)
  const status = Number(value)
  ;[value, at] = field(encoded, at)
  const count = Number(value)
  const headers: Record<string, string> = {}
  for (let index = 0; index < count; index++) {
    let name: string
    ;[name, at] = field(encoded, at)
    ;[value, at] = field(encoded, at)
    headers[name] = value
  }
  return { status, headers, body: new Uint8Array(Buffer.from(encoded.slice(at), "latin1")) }
}

/**
 * In-memory store: one map per API key (keyed by the `Idempotency-Key` value as sent), each settled key one flat
 * string ({@link encodeSettled}), a running key one small object. Expired keys are dropped when met, and swept
 * oldest first every 1,024 claims (keys are kept in the order they were first claimed, which is also, give or take
 * the running time of a request, the order they expire in).
 *
 * Bounded per API key (Quotas.ts `idempotencyKeys`, `idempotencyBytes`): a new key while the API key has that many
 * keys, or that many bytes of settled answers, is refused (`Full`) after its expired keys are swept, whatever the
 * answers were (a 4xx answer is remembered too, spec "Errors" rule 3), so keys on failing requests cannot grow the
 * process without bound.
 */
export const layerMemory = Layer.effect(
  IdempotencyStore,
  Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const retentionMillis = Duration.toMillis(config.idempotencyRetention)
    const maxKeys = config.quotas.idempotencyKeys ?? defaultIdempotencyKeys
    const maxBytes = config.quotas.idempotencyBytes ?? defaultIdempotencyBytes
    const scopes = new Map<string, Map<string, string | Running>>()
    /** The bytes of the settled answers of each API key. */
    const bytes = new Map<string, number>()
    const account = (scope: string, delta: number) => {
      const next = (bytes.get(scope) ?? 0) + delta
      if (next === 0) bytes.delete(scope)
      else bytes.set(scope, next)
    }
    let size = 0
    let claims = 0
    const sweepScope = (scope: string, entries: Map<string, string | Running>, now: number) => {
      for (const [key, entry] of entries) {
        if (typeof entry !== "string") continue
        if (settledExpiry(entry) > now) break
        entries.delete(key)
        account(scope, -entry.length)
        size--
      }
    }
    const sweep = (now: number) => {
      for (const [scope, entries] of scopes) {
        sweepScope(scope, entries, now)
        if (entries.size === 0) scopes.delete(scope)
      }
    }
    /** True when API key `scope` holds its quota of keys or answer bytes, once its expired keys are gone. */
    const full = (scope: string, entries: Map<string, string | Running>, now: number) => {
      if (entries.size < maxKeys && (bytes.get(scope) ?? 0) < maxBytes) return false
      sweepScope(scope, entries, now)
      return entries.size >= maxKeys || (bytes.get(scope) ?? 0) >= maxBytes
    }
    return {
      size: Effect.sync(() => size),
      claim: (scope, key, print) =>
        Effect.map(Clock.currentTimeMillis, (now): Claim => {
          if (++claims % 1024 === 0) sweep(now)
          let entries = scopes.get(scope)
          if (entries === undefined) {
            entries = new Map()
            scopes.set(scope, entries)
          }
          const existing = entries.get(key)
          if (typeof existing === "string" && settledExpiry(existing) <= now) {
            entries.delete(key)
            account(scope, -existing.length)
            size--
          } else if (existing !== undefined) {
            if (typeof existing !== "string") return existing.fingerprint === print ? { _tag: "InFlight" } : { _tag: "Mismatch" }
            return settledFingerprint(existing) === print
              ? { _tag: "Replay", answer: decodeSettled(existing) }
              : { _tag: "Mismatch" }
          }
          if (full(scope, entries, now)) return { _tag: "Full" }
          const running = new Running(print)
          entries.set(key, running)
          size++
          return new StartedClaim(
            entries,
            key,
            running,
            retentionMillis,
            () => size--,
            (settled) => account(scope, settled)
          )
        })
    }
  })
)
