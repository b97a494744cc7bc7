/**
 * Idempotency keys of the local service: the remembered answers of create box, upgrade and create response.
 *
 * Source: spec "Limits / Idempotency rules" and "Errors" rules 3-4: a key is at most 255 bytes (UTF-8), a blank key is
 * ignored, a retry repeating key, method, path and body byte for byte gets the remembered answer with
 * `Idempotent-Replayed: true`, a different request with the same key gets 409, keys are scoped to the sending API
 * key and remembered at least 24 hours. A 5xx answer or a failure to record leaves the key unsettled.
 *
 * @since 0.1.0
 */
import { Clock, Context, Data, Duration, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { LocalServiceConfig } from "./LocalServiceConfig.js"

/** The largest key, in UTF-8 bytes (spec Limits). */
export const maxKeyBytes = 255

/**
 * The size in bytes of a header value as it was sent. HTTP/1.1 servers hand header bytes over one character per byte
 * (latin1), so a key sent as UTF-8 counts each of its bytes once (a non-ASCII character counts for more than one);
 * a character above U+00FF (only possible from other adapters) counts its UTF-8 bytes.
 */
export const headerBytes = (value: string): number => {
  let bytes = 0
  for (const character of value) {
    const code = character.codePointAt(0)!
    bytes += code <= 0xff ? 1 : code <= 0x7ff ? 2 : code <= 0xffff ? 3 : 4
  }
  return bytes
}

/** A remembered answer: status, the headers that matter, and the body bytes. */
export interface RememberedAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

/** The store could not read or record a key (a durable store's failure); `reason` says why. */
export class IdempotencyStoreError extends Data.TaggedError("IdempotencyStoreError")<{ readonly reason: string }> {}

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

/** The fingerprint of a request: SHA-256 over method, path (with query) and body bytes. */
export const fingerprint = (method: string, url: string, body: Uint8Array): string =>
  createHash("sha256").update(method).update("\u0000").update(url).update("\u0000").update(body).digest("base64")

type Entry =
  | { readonly state: "running"; readonly fingerprint: string; readonly token: object }
  | { readonly state: "settled"; readonly fingerprint: string; readonly answer: RememberedAnswer; readonly expiresAtMillis: number }

/** The store of keys. `scope` is the sending API key's id; keys of different API keys never meet. */
export class IdempotencyStore extends Context.Tag("boxkit/server/IdempotencyStore")<IdempotencyStore, {
  /** Presents `key` of the API key `scope` for a request with `fingerprint`; atomic with every other claim. */
  readonly claim: (scope: string, key: string, fingerprint: string) => Effect.Effect<Claim, IdempotencyStoreError>
  /** How many keys are remembered (settled or running). */
  readonly size: Effect.Effect<number>
}>() {}

/** In-memory store; expired keys are dropped when met and swept every 1,024 claims. */
export const layerMemory = Layer.effect(
  IdempotencyStore,
  Effect.gen(function*() {
    const config = yield* LocalServiceConfig
    const retentionMillis = Duration.toMillis(config.idempotencyRetention)
    const entries = new Map<string, Entry>()
    let claims = 0
    const sweep = (now: number) => {
      for (const [id, entry] of entries) {
        if (entry.state === "settled" && entry.expiresAtMillis <= now) entries.delete(id)
      }
    }
    return {
      size: Effect.sync(() => entries.size),
      claim: (scope, key, print) =>
        Effect.map(Clock.currentTimeMillis, (now): Claim => {
          if (++claims % 1024 === 0) sweep(now)
          const id = `${scope}\u0000${key}`
          const existing = entries.get(id)
          if (existing !== undefined && existing.state === "settled" && existing.expiresAtMillis <= now) {
            entries.delete(id)
          } else if (existing !== undefined) {
            if (existing.fingerprint !== print) return { _tag: "Mismatch" }
            return existing.state === "running" ? { _tag: "InFlight" } : { _tag: "Replay", answer: existing.answer }
          }
          const token = {}
          entries.set(id, { state: "running", fingerprint: print, token })
          const ours = () => {
            const current = entries.get(id)
            return current !== undefined && current.state === "running" && current.token === token
          }
          return {
            _tag: "Started",
            settle: (answer) =>
              Effect.map(Clock.currentTimeMillis, (at) => {
                if (ours()) {
                  entries.set(id, { state: "settled", fingerprint: print, answer, expiresAtMillis: at + retentionMillis })
                }
              }),
            release: Effect.sync(() => {
              if (ours()) entries.delete(id)
            })
          }
        })
    }
  })
)
