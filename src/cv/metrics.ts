import type { Metrics } from '../observability/metrics.js';
import type { CvObserver } from './worker.js';

/** The CV runs as Prometheus counts them (src/observability/metrics.ts). */
export const cvMetrics = (metrics: Pick<Metrics, 'cvDuration' | 'cvOutcomes'>): CvObserver => ({
  finished: ({ model, outcome, seconds }) => {
    metrics.cvDuration.observe({ model }, seconds);
    metrics.cvOutcomes.inc({ model, outcome });
  },
});
