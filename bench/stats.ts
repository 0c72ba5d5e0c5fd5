/** Percentiles of a handful of samples, for the phases that time single events rather than load. */

export interface LatencyFigures {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  minMs: number;
}

/** Nearest-rank percentile of an ascending array: p99 of 200 samples is the 198th. */
export const percentile = (sorted: readonly number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export const latencyFigures = (values: readonly number[]): LatencyFigures => {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? NaN,
    minMs: sorted[0] ?? NaN,
  };
};
