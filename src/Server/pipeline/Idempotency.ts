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
 * Bounds (every store; Quotas.ts, docs/ASSUMPTIONS.md "Quotas"): per API key at most `idempotencyKeys` keys and
 * `idempotencyBytes` bytes of remembered answer bodies, past which a new key is refused (`Full`); an answer whose
 * recording would pass the API key's answer bytes or its organization's stored-bytes quota (answers count in
 * `stored_bytes`) is not recorded and its key is released.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Duration, Effect, Layer, Option, Schedule } from "effect"
import * as ServiceClock from "../clock/ServiceClock.js"
import { createHash } from "node:crypto"
import { LocalServiceConfig } from "../LocalServiceConfig.js"
import { defaultIdempotencyBytes, defaultIdempotencyKeys } from "../Quotas.js"
import { MemoryStoredUsage, StoredUsage } from "../state/MemoryRepositories.js"
import type { RememberedKey } from "../state/StateSnapshots.js"
import type { StoreError } from "../state/StoreError.js"

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
  /** The database's failure as a `StoreError`, when there is one (StoreOutage.ts answers it). */
  readonly cause?: unknown
}> {}

/** The outcome of presenting a key. */
export type Claim =
  /**
   * First use (or an unsettled key): run the request, then `settle` (remember the answer) or `release` (forget the
   * key: a retry runs again). A failed `settle` must be followed by `release`. `settle` records nothing and releases
   * the key itself when the answer would pass a bound (the API key's answer bytes, the organization's stored bytes).
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

/**
 * Who presents a key: `scope`, the sending API key's id (keys of different API keys never meet; the key bounds are
 * per API key), and `orgId`, the organization it acts for (null when none), whose stored bytes its answers count in.
 */
export interface KeyHolder {
  readonly scope: string
  readonly orgId: string | null
}

/**
 * Where a claim is made: `Standalone`, in a write of its own; `InUnitOfWork`, in the request's unit of work on a store
 * with one writer (`Transactions.claimsInUnit`), so nobody else can present the key before the unit ends and the store
 * may write a first use only when it settles.
 */
export type ClaimUnit = "Standalone" | "InUnitOfWork"

/** The store of keys. */
export class IdempotencyStore extends Context.Tag("boxkit/server/IdempotencyStore")<IdempotencyStore, {
  /**
   * Presents `key` of `holder` for a request with `fingerprint`; atomic with every other claim. `unit` (default
   * `Standalone`): where the claim is made ({@link ClaimUnit}).
   */
  readonly claim: (
    holder: KeyHolder,
    key: string,
    fingerprint: string,
    unit?: ClaimUnit
  ) => Effect.Effect<Claim, IdempotencyStoreError>
  /** How many keys are remembered (settled or running). */
  readonly size: Effect.Effect<number, StoreError>
  /** The body bytes of the answers remembered for organization `orgId`'s API keys (part of its `stored_bytes`). */
  readonly storedBytes: (orgId: string) => Effect.Effect<number, StoreError>
}>() {}

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

/** The body bytes of an {@link encodeSettled} string's answer. */
export const settledBodyBytes = (encoded: string): number => {
  let at = encoded.indexOf("\u0000") + 1
  at = encoded.indexOf("\u0000", at) + 1
  at = encoded.indexOf("\u0000", at) + 1
  const countEnd = encoded.indexOf("\u0000", at)
  const fields = 2 * Number(encoded.slice(at, countEnd))
  at = countEnd + 1
  for (let index = 0; index < fields; index++) at = encoded.indexOf("\u0000", at) + 1
  return encoded.length - at
}

/** A key whose request is running: its fingerprint; the object itself tells two claims of one key apart. */
class Running {
  constructor(readonly fingerprint: string) {}
}

/**
 * The keys of one API key in the in-memory store (by the `Idempotency-Key` value as sent, in the order first
 * claimed), the body bytes of its settled answers, and the organization those bytes count in.
 */
class ScopeKeys {
  readonly entries = new Map<string, string | Running>()
  bytes = 0
  constructor(readonly orgId: string | null) {}
}

/** The bounds of the in-memory store, from Quotas.ts settings. */
interface MemoryBounds {
  readonly retentionMillis: number
  /** Keys per API key. */
  readonly maxKeys: number
  /** Answer body bytes per API key. */
  readonly maxBytes: number
  /** The organization's stored-bytes quota. */
  readonly maxStoredBytes: number
}

/**
 * The keys of every API key in memory, with what each organization stores ({@link StoredUsage}, shared with the
 * in-memory repositories). Each method runs at once (no yield inside), so claims, settles and the checks of the
 * bounds are atomic with each other and with the repositories' writes.
 */
class MemoryKeys {
  readonly scopes = new Map<string, ScopeKeys>()
  size = 0
  private claims = 0

  constructor(private readonly bounds: MemoryBounds, private readonly usage: StoredUsage) {}

  /** Forgets the settled key `key` (`encoded`) of `keys`, giving back its answer's bytes. */
  private dropSettled(keys: ScopeKeys, key: string, encoded: string): void {
    keys.entries.delete(key)
    this.size--
    const body = settledBodyBytes(encoded)
    keys.bytes -= body
    if (keys.orgId !== null) this.usage.addAnswerBytes(keys.orgId, -body)
  }

  /** Drops the expired settled keys of `keys`, oldest first, up to the first that has not expired. */
  private sweepScope(keys: ScopeKeys, now: number): void {
    for (const [key, entry] of keys.entries) {
      if (typeof entry !== "string") continue
      if (settledExpiry(entry) > now) break
      this.dropSettled(keys, key, entry)
    }
  }

  /** Drops the expired settled keys of every API key. */
  sweep(now: number): void {
    for (const [scope, keys] of this.scopes) {
      this.sweepScope(keys, now)
      if (keys.entries.size === 0) this.scopes.delete(scope)
    }
  }

  /** True when `keys` holds its quota of keys or answer bytes, once its expired keys are gone. */
  private full(keys: ScopeKeys, now: number): boolean {
    const { maxBytes, maxKeys } = this.bounds
    if (keys.entries.size < maxKeys && keys.bytes < maxBytes) return false
    this.sweepScope(keys, now)
    return keys.entries.size >= maxKeys || keys.bytes >= maxBytes
  }

  claim(holder: KeyHolder, key: string, print: string, now: number): Claim {
    if (++this.claims % 1024 === 0) this.sweep(now)
    let keys = this.scopes.get(holder.scope)
    if (keys === undefined) {
      keys = new ScopeKeys(holder.orgId)
      this.scopes.set(holder.scope, keys)
    }
    const existing = keys.entries.get(key)
    if (typeof existing === "string" && settledExpiry(existing) <= now) {
      this.dropSettled(keys, key, existing)
    } else if (existing !== undefined) {
      if (typeof existing !== "string") return existing.fingerprint === print ? { _tag: "InFlight" } : { _tag: "Mismatch" }
      return settledFingerprint(existing) === print
        ? { _tag: "Replay", answer: decodeSettled(existing) }
        : { _tag: "Mismatch" }
    }
    if (this.full(keys, now)) return { _tag: "Full" }
    const running = new Running(print)
    keys.entries.set(key, running)
    this.size++
    return new StartedClaim(this, keys, key, running)
  }

  /**
   * Records `answer` for the running key, unless it was released, or unless its body would take the API key past
   * its answer bytes or the organization past its stored-bytes quota: then the key is released (not recorded).
   */
  settle(keys: ScopeKeys, key: string, running: Running, answer: RememberedAnswer, now: number): void {
    if (keys.entries.get(key) !== running) return
    const adding = answer.body.byteLength
    const { maxBytes, maxStoredBytes, retentionMillis } = this.bounds
    if (
      keys.bytes + adding > maxBytes ||
      (keys.orgId !== null && this.usage.storedBytes(keys.orgId) + adding > maxStoredBytes)
    ) {
      return this.release(keys, key, running)
    }
    keys.entries.set(key, encodeSettled(now + retentionMillis, running.fingerprint, answer))
    keys.bytes += adding
    if (keys.orgId !== null) this.usage.addAnswerBytes(keys.orgId, adding)
  }

  /** Forgets the running key, if it is still this claim's. */
  release(keys: ScopeKeys, key: string, running: Running): void {
    if (keys.entries.get(key) !== running) return
    keys.entries.delete(key)
    this.size--
  }

  /** The settled keys not expired at `now`, of every API key (a snapshot's, StateSnapshots.ts). */
  remembered(now: number): Array<RememberedKey> {
    const found: Array<RememberedKey> = []
    for (const [scope, keys] of this.scopes) {
      for (const [key, entry] of keys.entries) {
        if (typeof entry !== "string" || settledExpiry(entry) <= now) continue
        found.push({
          keyId: scope,
          orgId: keys.orgId,
          key,
          fingerprint: settledFingerprint(entry),
          expiresAtMillis: settledExpiry(entry),
          answer: decodeSettled(entry)
        })
      }
    }
    return found
  }

  /** Remembers a settled key as it is (no bound checked), unless its API key has this key already. */
  remember(entry: RememberedKey): void {
    let keys = this.scopes.get(entry.keyId)
    if (keys === undefined) {
      keys = new ScopeKeys(entry.orgId)
      this.scopes.set(entry.keyId, keys)
    }
    if (keys.entries.has(entry.key)) return
    keys.entries.set(entry.key, encodeSettled(entry.expiresAtMillis, entry.fingerprint, entry.answer))
    this.size++
    const body = entry.answer.body.byteLength
    keys.bytes += body
    if (keys.orgId !== null) this.usage.addAnswerBytes(keys.orgId, body)
  }
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
    private readonly store: MemoryKeys,
    private readonly keys: ScopeKeys,
    private readonly key: string,
    private readonly running: Running
  ) {
    this.settle = this.settleWith.bind(this)
    this.release = Effect.sync(this.releaseNow.bind(this))
  }

  private settleWith(answer: RememberedAnswer): Effect.Effect<void> {
    return Effect.map(Clock.currentTimeMillis, (now) => this.store.settle(this.keys, this.key, this.running, answer, now))
  }

  private releaseNow(): void {
    this.store.release(this.keys, this.key, this.running)
  }
}

/**
 * The settled keys of the in-memory store, for the in-memory snapshot store (MemorySnapshots.ts): `remembered` lists
 * those not expired at a time (Unix ms), `remember` adds one as it is. {@link layerMemory} provides it.
 *
 * @since 0.1.0
 */
export class MemoryRememberedKeys extends Context.Tag("boxkit/server/MemoryRememberedKeys")<MemoryRememberedKeys, {
  readonly remembered: (nowMillis: number) => ReadonlyArray<RememberedKey>
  readonly remember: (entry: RememberedKey) => void
}>() {}

/**
 * In-memory store: one map per API key (keyed by the `Idempotency-Key` value as sent), each settled key one flat
 * string ({@link encodeSettled}), a running key one small object. Expired keys are dropped when met, swept oldest
 * first every 1,024 claims and every `sweepInterval` (keys are kept in the order they were first claimed, which is
 * also, give or take the running time of a request, the order they expire in).
 *
 * Bounded per API key (Quotas.ts `idempotencyKeys`, `idempotencyBytes`): a new key while the API key has that many
 * keys, or that many bytes of settled answer bodies, is refused (`Full`) after its expired keys are swept, whatever
 * the answers were (a 4xx answer is remembered too, spec "Errors" rule 3), so keys on failing requests cannot grow
 * the process without bound. Answer bodies count in the organization's stored bytes: with the in-memory
 * repositories' {@link MemoryStoredUsage} in context (StateStore.ts `layerMemory`) the quota is checked against
 * clipboards, response records and answers together; without it (other repositories), against answers alone.
 */
export const layerMemory: Layer.Layer<IdempotencyStore | MemoryRememberedKeys, never, LocalServiceConfig> = Layer
  .scopedContext(Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const usage = Option.getOrElse(yield* Effect.serviceOption(MemoryStoredUsage), () => new StoredUsage())
    const store = new MemoryKeys({
      retentionMillis: Duration.toMillis(config.idempotencyRetention),
      maxKeys: config.quotas.idempotencyKeys ?? defaultIdempotencyKeys,
      maxBytes: config.quotas.idempotencyBytes ?? defaultIdempotencyBytes,
      maxStoredBytes: config.quotas.storedBytes
    }, usage)
    // Expired answers give their bytes back within a sweep interval, claimed again or not; and when an advance of the
    // virtual clock ends (ServiceClock.ts).
    const sweep = Effect.map(Clock.currentTimeMillis, (now) => store.sweep(now))
    yield* ServiceClock.registerDue({ name: "idempotency key expiry", runDue: sweep })
    yield* sweep.pipe(
      Effect.repeat(Schedule.spaced(config.sweepInterval)),
      Effect.forkScoped
    )
    return Context.make(IdempotencyStore, {
      size: Effect.sync(() => store.size),
      storedBytes: (orgId) => Effect.sync(() => usage.answerBytes.get(orgId) ?? 0),
      claim: (holder, key, print) => Effect.map(Clock.currentTimeMillis, (now) => store.claim(holder, key, print, now))
    }).pipe(Context.add(MemoryRememberedKeys, {
      remembered: (now) => store.remembered(now),
      remember: (entry) => store.remember(entry)
    }))
  }))
