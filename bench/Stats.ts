/**
 * Small statistics helpers of the benchmark suite: median and percentiles of samples, and rounding for tables.
 *
 * Source: BENCHMARKS.md (medians of several runs, p50 and p99 latency in every throughput table).
 *
 * @since 0.1.0
 */

/** The `p`-th percentile (0..100) of `samples` by nearest rank; `NaN` for no samples. Input is not modified. */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1]
}

/** The median of `samples` (mean of the two middle values for an even count); `NaN` for no samples. */
export const median = (samples: ReadonlyArray<number>): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/** `value / baseline`, or `NaN` when the baseline is zero or missing. */
export const ratio = (value: number, baseline: number): number =>
  Number.isFinite(value) && Number.isFinite(baseline) && baseline !== 0 ? value / baseline : Number.NaN

/** Rounds to `digits` decimal places (for JSON results). */
export const round = (value: number, digits = 2): number => {
  if (!Number.isFinite(value)) return value
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}
