/**
 * The prompt cache of the local Responses engine: which prompt prefixes were seen before under one organization and
 * prompt-cache routing key (`prompt_cache_key`), so usage can report `cached_tokens`.
 *
 * Source: spec "POST {api_url}/responses" ("a prompt-cache routing hint string (same key prefers same cache
 * locality)"), "Model response object" (usage `cached_tokens`, metadata `supercached_input_tokens` and
 * `supercache_write_input_tokens`); docs/ASSUMPTIONS.md (the accounting rule).
 *
 * @since 0.1.0
 */

/** Limits of a {@link PromptCache}: prompts kept per key, keys kept, and tokens kept over all keys. */
export interface PromptCacheLimits {
  /** Prompts remembered per (organization, key), newest first (default 16). */
  readonly promptsPerKey: number
  /** Keys remembered; the least recently used key is forgotten first (default 10,000). */
  readonly maxKeys: number
  /** Tokens remembered over all keys (default 32,000,000, about 128 MB). */
  readonly maxTokens: number
}

/** The default limits. */
export const defaultLimits: PromptCacheLimits = { promptsPerKey: 16, maxKeys: 10_000, maxTokens: 32_000_000 }

/** What one lookup found: `cached` tokens (the longest prefix seen before) and `written` tokens (the rest). */
export interface CacheAccounting {
  readonly cached: number
  readonly written: number
}

/** The length of the common prefix of two token arrays. */
export const commonPrefix = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  const limit = Math.min(a.length, b.length)
  let index = 0
  while (index < limit && a[index] === b[index]) index++
  return index
}

/**
 * An in-memory prompt cache. `lookupAndStore` returns how many leading tokens of `prompt` were seen before under the
 * same organization and key (the longest common prefix with one of the remembered prompts), then remembers `prompt`.
 * Without a key nothing is cached (`{cached: 0, written: 0}`).
 */
export class PromptCache {
  private readonly entries = new Map<string, Array<Int32Array>>()
  private tokens = 0

  constructor(private readonly limits: PromptCacheLimits = defaultLimits) {}

  /** Accounts `prompt` against the prompts seen under (`orgId`, `key`) and remembers it. */
  lookupAndStore(orgId: string, key: string | undefined, prompt: ReadonlyArray<number>): CacheAccounting {
    if (key === undefined) return { cached: 0, written: 0 }
    const id = `${orgId}\u0000${key}`
    const seen = this.entries.get(id) ?? []
    let cached = 0
    for (const previous of seen) cached = Math.max(cached, commonPrefix(previous, prompt))
    // Re-insert to mark the key most recently used.
    this.entries.delete(id)
    const stored = Int32Array.from(prompt)
    const kept = [stored, ...seen]
    while (kept.length > this.limits.promptsPerKey) this.tokens -= kept.pop()!.length
    this.tokens += stored.length
    this.entries.set(id, kept)
    this.evict()
    return { cached, written: prompt.length - cached }
  }

  /** Forgets least recently used keys while a limit is exceeded. */
  private evict() {
    while (this.entries.size > this.limits.maxKeys || this.tokens > this.limits.maxTokens) {
      const oldest = this.entries.keys().next()
      if (oldest.done === true) return
      for (const prompt of this.entries.get(oldest.value) ?? []) this.tokens -= prompt.length
      this.entries.delete(oldest.value)
    }
  }

  /** Keys remembered now. */
  get size(): number {
    return this.entries.size
  }
}
