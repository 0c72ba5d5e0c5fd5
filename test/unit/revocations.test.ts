import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { revocations, type Revocations } from '../../src/auth/revocations.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { testClock, type TestClock } from '../support/clock.js';
import { anEvent, uniqueTenant } from '../support/events.js';
import { eventually } from '../support/wait.js';

/**
 * The revocations every request is checked against, on a real store: credentials revoked for good, and
 * ended sessions only while an access token of theirs may still be valid, so that sign-outs, which end a
 * session each, do not make the set grow for ever.
 */
describe('the revocations set', () => {
  const ttlSeconds = 900;
  const window = ttlSeconds * 1000 + 60_000;
  const tenantId = uniqueTenant();
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let clock: TestClock;
  let revoked: Revocations;

  const append = (type: string, data: Record<string, string>, occurredAt = clock()) => {
    const event = anEvent(type, data, tenantId);
    event.metadata.occurredAt = occurredAt.toISOString();
    return store.appendToStream(`revocations-${tenantId}_${data.id ?? data.sessionId}`, [event], 'any');
  };
  const started = async () => {
    const set = revocations(store, pino({ level: 'silent' }), { clock, accessTokenTtlSeconds: ttlSeconds });
    await set.start();
    return set;
  };

  beforeEach(async () => {
    dir = tempDir();
    store = openSqliteEventStore(join(dir.dir, 'events.db'));
    clock = testClock();
    revoked = await started();
  });
  afterEach(async () => {
    await revoked.stop();
    await store.close();
    dir.remove();
  });

  it('remembers an ended session until its access tokens have all expired, then forgets it', async () => {
    await append('SessionRevoked', { sessionId: 's_1', userId: 'u_1', reason: 'signed out' });
    await eventually(() => Promise.resolve(revoked.isRevoked(['s_1']) || undefined), 2000, 's_1 revoked');
    clock.advance(window - 1000);
    expect(revoked.isRevoked(['s_1'])).to.equal(true);
    clock.advance(2000);
    expect(revoked.isRevoked(['s_1'])).to.equal(false);
  });

  it('keeps revoked keys, clients and disabled users for good', async () => {
    await append('ApiKeyRevoked', { id: 'k_1' });
    await append('OAuthClientRevoked', { id: 'c_1' });
    await append('UserDisabled', { userId: 'u_2' });
    await eventually(() => Promise.resolve(revoked.isRevoked(['u_2']) || undefined), 2000, 'u_2 revoked');
    clock.advance(365 * 24 * 3600 * 1000);
    expect(['k_1', 'c_1', 'u_2'].map((id) => revoked.isRevoked([id]))).to.deep.equal([true, true, true]);
  });

  it('reads, on start, only the session ends whose access tokens may still be valid', async () => {
    const now = clock().getTime();
    await append(
      'SessionRevoked',
      { sessionId: 's_old', userId: 'u_1', reason: 'signed out' },
      new Date(now - window - 1000),
    );
    await append(
      'SessionRevoked',
      { sessionId: 's_new', userId: 'u_1', reason: 'signed out' },
      new Date(now - 1000),
    );
    const restarted = await started();
    try {
      expect(restarted.isRevoked(['s_old'])).to.equal(false);
      expect(restarted.isRevoked(['s_new'])).to.equal(true);
    } finally {
      await restarted.stop();
    }
  });
});
