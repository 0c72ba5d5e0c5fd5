import type { CvJob, CvJobState } from '../src/cv/decider.js';
import { cvJobDecider, cvJobEventTypes } from '../src/cv/decider.js';
import { aggregateProjection, platformPartition } from '../src/readmodels/aggregate-projection.js';
import type { Filter, ListQuery } from '../src/readmodels/port.js';
import { textFields } from '../src/readmodels/fields.js';

const toState = (doc: CvJob | null): CvJobState =>
  doc ? { status: 'present', job: doc } : { status: 'absent' };

/** A tenant's CV jobs, for the list endpoint: each document is the job resource itself. */
export const cvJobsProjection = aggregateProjection({
  name: 'cv_jobs',
  collection: {
    name: 'cv_jobs',
    fields: textFields('createdAt', 'status', 'model', 'observationId'),
    indexes: [['createdAt'], ['status', 'createdAt'], ['model', 'createdAt'], ['observationId', 'createdAt']],
  },
  decider: cvJobDecider,
  eventTypes: cvJobEventTypes,
  key: (event) => ({ tenantId: event.metadata.tenantId, id: event.data.jobId }),
  toState,
  toDoc: (state) => (state.status === 'present' ? state.job : null),
});

/** What the worker's sweep needs of a job that has not finished. */
export interface PendingCvJob {
  id: string;
  tenantId: string;
  status: 'queued' | 'running';
  createdAt: string;
  startedAt: string | null;
}

/**
 * Jobs that have not finished, across tenants: what the sweep reads to find runs abandoned by a dead
 * worker. A job leaves it when it completes or fails, so it stays as small as the backlog.
 */
export const pendingCvJobsProjection = aggregateProjection({
  name: 'cv_jobs_pending',
  collection: {
    name: 'cv_jobs_pending',
    fields: textFields('status', 'createdAt', 'startedAt'),
    indexes: [
      ['status', 'createdAt'],
      ['status', 'startedAt'],
    ],
  },
  decider: cvJobDecider,
  eventTypes: cvJobEventTypes,
  key: (event) => ({ tenantId: platformPartition, id: event.data.jobId }),
  toState: (doc: PendingCvJob | null): CvJobState =>
    doc ? { status: 'present', job: doc as unknown as CvJob } : { status: 'absent' },
  toDoc: (state): PendingCvJob | null => {
    if (state.status === 'absent') return null;
    const { id, tenantId, status, createdAt, startedAt } = state.job;
    if (status !== 'queued' && status !== 'running') return null;
    return { id, tenantId, status, createdAt, startedAt };
  },
});

/** The list query for `GET .../cv-jobs`: newest first, optionally by observation, status and model. */
export const cvJobsQuery = (
  tenantId: string,
  params: { observationId?: string; status?: string; model?: string },
): Omit<ListQuery, 'limit' | 'after'> => {
  const filters: Filter[] = [];
  if (params.observationId) filters.push({ op: 'eq', field: 'observationId', value: params.observationId });
  if (params.status) filters.push({ op: 'eq', field: 'status', value: params.status });
  if (params.model) filters.push({ op: 'eq', field: 'model', value: params.model });
  return { tenantId, filters, sort: { field: 'createdAt', direction: 'desc' } };
};
