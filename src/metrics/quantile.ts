/**
 * The one quantile rule of the codebase: numpy's default ("linear", Hyndman & Fan type 7), so that every median and
 * p95 a report, a summary or a log line shows is the same number for the same values.
 */

/** The q-th percentile (q in [0, 100]) of values sorted ascending; NaN when there are none. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = ((sorted.length - 1) * q) / 100;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

/** The q-th percentile of unsorted values; null when there are none. */
export function percentileOf(values: readonly number[], q: number): number | null {
  return values.length === 0 ? null : percentile(Float64Array.from(values).sort(), q);
}

/** The median of unsorted values (the mean of the two middle ones for an even count); null when there are none. */
export const median = (values: readonly number[]): number | null => percentileOf(values, 50);
