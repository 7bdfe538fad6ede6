/** The p-th percentile (nearest rank) of some numbers. */
export function percentile (values: number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/** `n` rounded to `digits` decimals. */
export const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits
