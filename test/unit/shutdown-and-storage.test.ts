import { expect } from 'chai';
import { StoreUnavailableError } from '../../src/core/errors.js';
import { pino } from 'pino';
import type { ConsumerState } from '../../src/core/supervisor.js';
import { readiness, storeFailures, type HealthSources } from '../../src/http/health.js';
import { toProblem } from '../../src/http/problem.js';
import type { ExternalEvent } from '../../src/webhooks/external.js';
import {
  deliveryDecider,
  isDue,
  StaleClaimError,
  type DeliveryEvent,
} from '../../src/webhooks/delivery.decider.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(deliveryDecider);
const payload: ExternalEvent = {
  id: 'evt_1',
  type: 'observation.created',
  tenantId: 't_test',
  timestamp: '2026-01-01T00:00:00.000Z',
  data: { observationId: 'o_1' },
};
const scheduled: DeliveryEvent = {
  type: 'DeliveryScheduled',
  data: {
    deliveryId: 'd_1',
    webhookId: 'w_1',
    eventId: 'evt_1',
    eventType: 'observation.created',
    payload,
    dueAt: '2026-01-01T00:00:00.000Z',
  },
};
const claimed: DeliveryEvent = {
  type: 'DeliveryAttemptClaimed',
  data: { deliveryId: 'd_1', attempt: 1, claimedBy: 'instance:a', claimId: 'claim-a' },
};
const interrupted: DeliveryEvent = {
  type: 'DeliveryAttemptInterrupted',
  data: { deliveryId: 'd_1', attempt: 1, reason: 'the service is stopping' },
};

describe('a webhook attempt cut by a shutdown', () => {
  it('is released: DeliveryAttemptInterrupted', () => {
    given([scheduled, claimed])
      .when({ type: 'Release', claimId: 'claim-a', reason: 'the service is stopping' })
      .then([interrupted]);
  });

  it('is due again at once, without counting as an attempt', () => {
    const { state } = given([scheduled, claimed, interrupted]);
    expect(state.status).to.equal('present');
    if (state.status !== 'present') return;
    expect(state.delivery).to.deep.include({ status: 'scheduled', attempts: 0, claimedAt: null });
    // The event's time (the spec's third event) is when it is due again.
    expect(isDue(state.delivery, new Date(state.delivery.dueAt!), 10_000)).to.equal(true);
  });

  it('refuses a release when the delivery is not claimed under it (it was settled or taken over meanwhile)', () => {
    const release = { type: 'Release', claimId: 'claim-a', reason: 'x' } as const;
    given([scheduled]).when(release).thenThrows(StaleClaimError);
    given([scheduled, claimed, interrupted]).when(release).thenThrows(StaleClaimError);
    given([scheduled, claimed])
      .when({ ...release, claimId: 'claim-b' })
      .thenThrows(StaleClaimError);
  });
});

describe('a store that is full or read-only', () => {
  const sqlite = (code: string, message = 'database or disk is full') =>
    Object.assign(new Error(message), { name: 'SqliteError', code });
  const errno = (code: string) => Object.assign(new Error(`${code}: no can do`), { code });

  it('is a 503 store-unavailable problem with Retry-After', () => {
    for (const error of [
      sqlite('SQLITE_FULL'),
      sqlite('SQLITE_READONLY', 'attempt to write a readonly database'),
      sqlite('SQLITE_READONLY_DBMOVED'),
      sqlite('SQLITE_IOERR_WRITE', 'disk I/O error: ENOSPC'),
      errno('ENOSPC'),
      errno('EROFS'),
    ]) {
      expect(toProblem(error), error.message).to.deep.include({
        type: '/problems/store-unavailable',
        status: 503,
      });
      expect(StoreUnavailableError.from(error)!.headers).to.have.property('Retry-After');
    }
  });

  it('is told apart from other store errors, which stay unexpected', () => {
    expect(StoreUnavailableError.from(sqlite('SQLITE_IOERR_WRITE', 'disk I/O error'))).to.equal(null);
    expect(
      StoreUnavailableError.from(sqlite('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed')),
    ).to.equal(null);
    expect(StoreUnavailableError.from(errno('ENOENT'))).to.equal(null);
    expect(toProblem(new Error('boom'))).to.equal(null);
  });

  it('keeps readiness failing for a while after the last refused write, then lets it go', () => {
    let now = 1_000_000;
    const failures = storeFailures(5000, () => now);
    expect(failures.recent()).to.equal(null);
    failures.record(new StoreUnavailableError('SQLITE_FULL'));
    now += 4999;
    expect(failures.recent()).to.deep.include({ code: 'SQLITE_FULL' });
    now += 1;
    expect(failures.recent()).to.equal(null);
  });
});

describe('readiness', () => {
  const up = { ping: () => Promise.resolve() };
  const deps = (overrides: {
    consumers?: ReturnType<HealthSources['consumers']>;
    eventStorePing?: () => Promise<void>;
    writeProbe?: () => Promise<void>;
  }) => ({
    eventStore: { ping: overrides.eventStorePing ?? up.ping, headPosition: () => Promise.resolve(120) },
    readModels: up,
    blobs: up,
    idempotency: up,
    logger: pino({ level: 'silent' }),
    health: {
      consumers: () => overrides.consumers ?? [],
      draining: () => false,
      ...(overrides.writeProbe ? { writeProbe: overrides.writeProbe } : {}),
      storeFailures: storeFailures(),
    },
  });
  const consumer = (name: string, state: ConsumerState, checkpoint?: number) => ({
    name,
    state,
    lastError: state === 'retrying' ? 'SQLITE_FULL: database or disk is full' : null,
    lastErrorAt: null,
    recoveredAt: null,
    restarts: 0,
    ...(checkpoint === undefined ? {} : { checkpoint }),
  });

  it('is ready with every consumer running or standing by, and gives each one with a checkpoint its lag', async () => {
    const result = await readiness(
      deps({ consumers: [consumer('observations', 'running', 100), consumer('worker', 'standby')] }),
    );
    expect(result.ready).to.equal(true);
    expect(result.consumers.map((c) => ('lag' in c ? c.lag : null))).to.deep.equal([20, null]);
  });

  it('is not ready while a consumer retries, a store does not answer, or the storage refuses writes', async () => {
    const retrying = await readiness(deps({ consumers: [consumer('webhook-projector', 'retrying')] }));
    expect(retrying.ready).to.equal(false);
    expect(retrying.checks.consumers).to.deep.equal({
      status: 'fail',
      error: 'webhook-projector is retrying',
    });
    const down = await readiness(deps({ eventStorePing: () => Promise.reject(new Error('gone')) }));
    expect(down.checks.eventStore).to.deep.equal({ status: 'fail', error: 'gone' });
    const full = await readiness(
      deps({
        writeProbe: () =>
          Promise.reject(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' })),
      }),
    );
    expect(full.checks.storage).to.deep.equal({ status: 'fail', error: 'ENOSPC: no space left on device' });
  });
});
