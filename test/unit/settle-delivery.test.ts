import { expect } from 'chai';
import type { RecordedEvent } from '../../src/core/events.js';
import { settleDelivery, settleReplay, type OutcomeRecorder } from '../../src/eventstore/handler-outcomes.js';
import type { ConsumerOutcome, PersistentHandler } from '../../src/eventstore/port.js';

const event: RecordedEvent = {
  id: 'e1',
  type: 'ObservationCreated',
  data: {},
  metadata: {
    tenantId: 't_1',
    actor: 'test',
    correlationId: 'c1',
    causationId: null,
    occurredAt: '2026-01-01T00:00:00Z',
    schemaVersion: 1,
  },
  streamName: 'observation-t_1_o1',
  streamVersion: 0,
  position: 7,
};

/** A handler answering the given outcomes in turn (a string is thrown), and what it was called with. */
const scripted = (...answers: (ConsumerOutcome | string)[]) => {
  const retryCounts: number[] = [];
  const handler: PersistentHandler = ({ retryCount }) => {
    retryCounts.push(retryCount);
    const answer = answers.shift();
    if (answer === undefined || typeof answer === 'string') return Promise.reject(new Error(answer));
    return Promise.resolve(answer);
  };
  return { handler, retryCounts };
};

/** The writes a store was asked for, in order. */
const recording = () => {
  const writes: string[] = [];
  const recorder: OutcomeRecorder = {
    retry: (count) => Promise.resolve(writes.push(`retry ${count}`)),
    park: (reason, count) => Promise.resolve(writes.push(`park ${count}: ${reason}`)),
  };
  return { recorder, writes };
};

const ack: ConsumerOutcome = { kind: 'ack' };
const retry: ConsumerOutcome = { kind: 'nack', action: 'retry', reason: 'later' };
const park: ConsumerOutcome = { kind: 'nack', action: 'park', reason: 'never' };

describe('settling a consumer group delivery', () => {
  it('acknowledges after retries, recording each raised count before the next delivery', async () => {
    const { handler, retryCounts } = scripted(retry, 'it broke', ack);
    const { recorder, writes } = recording();
    const settled = await settleDelivery(
      { handler, event, retryCount: 0, maxRetryCount: 5, stopping: () => false },
      recorder,
    );
    expect(settled).to.deep.equal({ kind: 'acknowledged', retryCount: 2 });
    expect(retryCounts).to.deep.equal([0, 1, 2]);
    expect(writes).to.deep.equal(['retry 1', 'retry 2']);
  });

  it('parks once the retries are spent, and at once on a nack with park', async () => {
    const spent = recording();
    const first = scripted(retry, retry);
    expect(
      await settleDelivery(
        { handler: first.handler, event, retryCount: 2, maxRetryCount: 3, stopping: () => false },
        spent.recorder,
      ),
    ).to.deep.equal({ kind: 'parked' });
    expect(spent.writes).to.deep.equal(['retry 3', 'park 3: later']);

    const atOnce = recording();
    const second = scripted(park);
    await settleDelivery(
      { handler: second.handler, event, retryCount: 0, maxRetryCount: 3, stopping: () => false },
      atOnce.recorder,
    );
    expect(atOnce.writes).to.deep.equal(['park 0: never']);
  });

  it('leaves a retry to the next consumer when stopping, its count kept', async () => {
    const { recorder, writes } = recording();
    const settled = await settleDelivery(
      { handler: scripted().handler, event, retryCount: 1, maxRetryCount: 3, stopping: () => true },
      recorder,
      retry,
    );
    expect(settled).to.deep.equal({ kind: 'left' });
    expect(writes).to.deep.equal([]);
  });

  it('parks a replayed event anew on any nack, without retries', async () => {
    const { recorder, writes } = recording();
    const settled = await settleReplay(scripted(retry).handler, event, recorder.park);
    expect(settled).to.deep.equal({ kind: 'parked' });
    expect(writes).to.deep.equal(['park 0: later']);
  });
});
