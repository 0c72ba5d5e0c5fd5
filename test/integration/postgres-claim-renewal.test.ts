import { expect } from 'chai';
import pg from 'pg';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { anEvent, eventually, uniqueTenant } from '../support/events.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';

/**
 * A consumer's claims are renewed while its handler works; a renewal that fails is told to the service
 * (which logs `consumer group claims not renewed` and counts obs_consumer_claim_renewal_failures_total),
 * where it used to be swallowed: a consumer whose renewals fail loses its events to another one unseen.
 */
describePostgres('PostgreSQL: a consumer whose claims cannot be renewed', () => {
  it('reports each failed renewal with its group, and goes on once renewals succeed again', async function () {
    this.timeout(20_000);
    const url = createTestDatabase();
    const failures: { group: string; error: unknown }[] = [];
    const store = await openPostgresEventStore(url, {
      claimTtlMs: 600,
      onClaimRenewalFailed: (group, error) => failures.push({ group, error }),
    });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const tenant = uniqueTenant();
    const group = 'renewals';
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let handled = 0;
    try {
      await store.ensurePersistentSubscription(group, {
        startFrom: 'start',
        maxRetryCount: 1,
        filter: { tenantId: tenant },
      });
      await store.appendToStream(`thing-${tenant}_a`, [anEvent('Happened', {}, tenant)], 'no_stream');
      const consumer = store.subscribePersistent(group, async () => {
        handled += 1;
        await gate;
        return { kind: 'ack' };
      });
      await eventually(() => handled === 1);
      // The claims' table is away while the handler works: every renewal fails, as on a store that fails.
      await admin.query('ALTER TABLE consumer_group_events RENAME TO consumer_group_events_away');
      try {
        await eventually(() => failures.length >= 2, 5_000);
      } finally {
        await admin.query('ALTER TABLE consumer_group_events_away RENAME TO consumer_group_events');
      }
      expect(failures.every((failure) => failure.group === group)).to.equal(true);
      expect(String(failures[0]!.error)).to.include('consumer_group_events');
      release();
      await consumer.stop();
      expect(handled).to.equal(1);
    } finally {
      release();
      await admin.end();
      await store.close();
    }
  });
});
