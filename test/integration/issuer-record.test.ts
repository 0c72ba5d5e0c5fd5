import { expect } from 'chai';
import { join } from 'node:path';
import { pino } from 'pino';
import { checkFingerprints } from '../../src/fingerprints/check.js';
import { issuerFingerprint, issuerLifetimeMs, issuerRenewal } from '../../src/fingerprints/issuer.js';
import {
  openFingerprintStore,
  sqliteFingerprints,
  type FingerprintStore,
} from '../../src/fingerprints/store.js';
import { ConfigError } from '../../src/settings.js';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { describePostgres, createTestDatabase } from '../support/postgres.js';

const silent = pino({ level: 'silent' });
const start = Date.parse('2026-11-28T06:00:00.000Z');

/**
 * A store whose calls can be held, as a SIGSTOPped process holds its own: a call made while held is
 * answered once released (the renewal's timer fires at once when a process resumes).
 */
const holdable = (store: FingerprintStore) => {
  let held: Promise<void> | null = null;
  let release = () => undefined as void;
  const gate = async () => {
    if (held) await held;
  };
  return {
    store: {
      ...store,
      read: async () => (await gate(), store.read()),
      replace: async (row: Parameters<FingerprintStore['replace']>[0], expected: string) => (
        await gate(),
        store.replace(row, expected)
      ),
    } satisfies FingerprintStore,
    hold: () => {
      held = new Promise<void>((resolve) => {
        release = resolve;
      });
    },
    release: () => {
      held = null;
      release();
    },
  };
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The PUBLIC_URL record on a real store, with a test clock: it holds while its process renews it, is taken
 * over once not renewed for the lifetime, and the process that stalled past that finds out on its next
 * renewal and answers not ready.
 */
const issuerRecord = (open: () => { store: () => Promise<FingerprintStore>; close: () => void }) => {
  let stores: ReturnType<typeof open>;
  beforeEach(() => {
    stores = open();
  });
  afterEach(() => stores.close());
  const url = (port: number) => `http://127.0.0.1:${port}`;

  it('refuses another PUBLIC_URL while the first is renewed, takes over one not renewed for the lifetime, and the stalled process finds out', async () => {
    let now = start;
    const clock = () => new Date(now);
    const first = holdable(await stores.store());
    await checkFingerprints(first.store, [issuerFingerprint(url(3001), false)], 'first', clock);
    const renewal = issuerRenewal({
      store: first.store,
      publicUrl: url(3001),
      by: 'first',
      logger: silent,
      now: clock,
      intervalMs: 10,
    });
    const second = await stores.store();
    try {
      // Renewed a moment ago: the record stands, however old its first recording.
      now += issuerLifetimeMs * 3;
      await eventually(async () =>
        (await second.read()).some((row) => row.recordedAt === clock().toISOString()),
      );
      const refused = await checkFingerprints(
        second,
        [issuerFingerprint(url(3002), false)],
        'second',
        clock,
      ).catch((error: unknown) => error);
      expect(refused).to.be.instanceOf(ConfigError);
      expect((refused as Error).message).to.include(
        `PUBLIC_URL is not set, so it is this process's own address, ${url(3002)}, but it is ${url(3001)} in a process that runs (first, last seen`,
      );
      // The same PUBLIC_URL is welcome at any time.
      expect(
        await checkFingerprints(second, [issuerFingerprint(url(3001), true)], 'third', clock),
      ).to.deep.equal({ recorded: [], updated: [] });
      expect(renewal.check()).to.deep.equal({ status: 'pass' });

      // The first process stalls past the lifetime: a process with another PUBLIC_URL may start.
      first.hold();
      await pause(50);
      now += issuerLifetimeMs + 1;
      expect(
        await checkFingerprints(second, [issuerFingerprint(url(3002), false)], 'second', clock),
      ).to.deep.equal({ recorded: [], updated: ['PUBLIC_URL'] });
      expect(renewal.check()).to.deep.equal({ status: 'pass' });
      // It comes back: its renewal fails, it answers not ready, and the record stays the new process's.
      first.release();
      await eventually(() => renewal.check().status === 'fail');
      const check = renewal.check();
      expect(check.status).to.equal('fail');
      expect(check.error).to.include(
        `a process with PUBLIC_URL ${url(3002)} (second) started while this one, with ${url(3001)}, did not renew its record`,
      );
      await renewal.stop();
      const record = (await second.read()).find((row) => row.name === 'PUBLIC_URL');
      expect(record?.fingerprint).to.equal(url(3002));
    } finally {
      await second.close();
    }
  });

  it('gives the record up on a clean stop, so another PUBLIC_URL may start at once', async () => {
    const first = await stores.store();
    await checkFingerprints(first, [issuerFingerprint(url(3001), false)], 'first');
    const renewal = issuerRenewal({ store: first, publicUrl: url(3001), by: 'first', logger: silent });
    await renewal.stop();
    const second = await stores.store();
    try {
      expect(await checkFingerprints(second, [issuerFingerprint(url(3002), false)], 'second')).to.deep.equal({
        recorded: [],
        updated: ['PUBLIC_URL'],
      });
    } finally {
      await second.close();
    }
  });
};

describe('the PUBLIC_URL record (SQLite)', () => {
  issuerRecord(() => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.db');
    return { store: () => Promise.resolve(sqliteFingerprints(file)), close: remove };
  });
});

describePostgres('the PUBLIC_URL record (PostgreSQL)', () => {
  issuerRecord(() => {
    const databaseUrl = createTestDatabase();
    return {
      store: async () =>
        (await openFingerprintStore({
          dataDir: '/nonexistent',
          eventStoreUrl: null,
          mongodbUrl: null,
          databaseUrl,
          databasePoolSize: 2,
        }))!,
      close: () => undefined,
    };
  });
});
