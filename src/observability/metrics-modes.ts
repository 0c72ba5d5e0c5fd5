/**
 * METRICS: where /metrics is served (docs/operations.md). Apart from the server that serves it, so that
 * reading the configuration loads no metrics library.
 */
export const metricsModes = ['platform', 'port', 'off'] as const;
export type MetricsMode = (typeof metricsModes)[number];
