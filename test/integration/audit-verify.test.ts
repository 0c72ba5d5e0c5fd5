import { expect } from 'chai';
import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { digestStream, type AuditDigest } from '../../src/audit/digest.js';
import { merkleRoot, type StreamHead } from '../../src/audit/merkle.js';
import { verifyTenant, type BrokenLink, type VerifyReport } from '../../src/audit/verify.js';
import type { RecordedEvent } from '../../src/core/events.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';
import { anEvent, uniqueTenant } from '../support/events.js';

/**
 * The definition verifyTenant must agree with: the tenant's history walked by position, every stream's head
 * in memory, stopping at the first event that is not its stream's next version or does not match its hash,
 * or at the first digest (checked once every event up to its position was) whose root is not the heads'.
 */
const verifyInCommitOrder = async (store: EventStore, tenantId: string): Promise<VerifyReport> => {
  const digests = (await store.readStream(digestStream(tenantId), { raw: true }))
    .map((event) => ({
      ...(event.data as AuditDigest),
      position: event.position,
      version: event.streamVersion,
    }))
    .sort((a, b) => a.upToPosition - b.upToPosition);
  const heads = new Map<string, StreamHead>();
  let events = 0;
  const report = (broken: BrokenLink | null) => ({
    tenantId,
    events,
    streams: heads.size,
    digests: digests.length,
    broken,
  });
  let next = 0;
  const digestBroken = (upTo: number): BrokenLink | null => {
    for (; next < digests.length && digests[next]!.upToPosition < upTo; next += 1) {
      const digest = digests[next]!;
      const covered = [...heads.values()].filter((head) => head.streamName !== digestStream(tenantId));
      if (merkleRoot(covered) !== digest.root) {
        return {
          streamName: digestStream(tenantId),
          version: digest.version,
          position: digest.position,
          reason: `the digest of the stream heads up to position ${digest.upToPosition} does not match the history`,
        };
      }
    }
    return null;
  };
  const history = (await store.readAll({ maxCount: 1_000_000, filter: { tenantId }, raw: true })).events;
  for (const event of history) {
    const digest = digestBroken(event.position);
    if (digest) return report(digest);
    const previous = heads.get(event.streamName) ?? { version: -1, hash: genesisHash };
    if (event.streamVersion !== previous.version + 1) {
      return report({
        streamName: event.streamName,
        version: previous.version + 1,
        position: event.position,
        reason: `version ${previous.version + 1} is missing: the next stored event is version ${event.streamVersion}`,
      });
    }
    if (event.hash !== eventHash(previous.hash, event)) {
      return report({
        streamName: event.streamName,
        version: event.streamVersion,
        position: event.position,
        reason: 'the event does not match its hash',
      });
    }
    heads.set(event.streamName, {
      streamName: event.streamName,
      version: event.streamVersion,
      hash: event.hash,
    });
    events += 1;
  }
  return report(digestBroken(Infinity));
};

/** A deterministic generator, so that a failing round can be run again. */
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};

/** Appends a digest of the tenant's stream heads as of its newest event, as the digest job would. */
const appendDigest = async (store: EventStore, tenantId: string) => {
  const history: RecordedEvent[] = (
    await store.readAll({ maxCount: 1_000_000, filter: { tenantId }, raw: true })
  ).events;
  const heads = new Map<string, StreamHead>();
  for (const event of history) {
    if (event.streamName === digestStream(tenantId)) continue;
    heads.set(event.streamName, {
      streamName: event.streamName,
      version: event.streamVersion,
      hash: event.hash!,
    });
  }
  const digest: AuditDigest = {
    upToPosition: history.at(-1)!.position,
    streams: heads.size,
    root: merkleRoot([...heads.values()]),
  };
  await store.appendToStream(
    digestStream(tenantId),
    [anEvent('AuditDigestRecorded', { ...digest }, tenantId)],
    'any',
  );
};

describe('audit verify, stream by stream', () => {
  let dir: { dir: string; remove: () => void };
  const tenant = uniqueTenant();
  const otherTenant = uniqueTenant();
  before(() => (dir = tempDir()));
  after(() => dir.remove());

  /** Interleaved appends to a few dozen streams of two tenants, with digests in between. */
  const seedHistory = async (file: string) => {
    const store = openSqliteEventStore(file);
    const next = random(7);
    const versions = new Map<string, number>();
    for (let append = 0; append < 90; append += 1) {
      const tenantId = next() < 0.8 ? tenant : otherTenant;
      const name = `${['observation', 'location', 'visit'][Math.floor(next() * 3)]}-${tenantId}_${Math.floor(next() * 12)}`;
      const count = 1 + Math.floor(next() * 3);
      const events = Array.from({ length: count }, (_, n) =>
        anEvent('ThingHappened', { append, n }, tenantId),
      );
      await store.appendToStream(name, events, versions.get(name) ?? 'no_stream');
      versions.set(name, (versions.get(name) ?? -1) + count);
      if (append % 30 === 29) await appendDigest(store, tenant);
    }
    await store.close();
  };

  type Tampering = (db: Database.Database, pick: () => number) => void;
  const tenantPositions = (db: Database.Database) =>
    (
      db.prepare('SELECT position FROM events WHERE tenant_id = ? ORDER BY position').all(tenant) as {
        position: number;
      }[]
    ).map((row) => row.position);
  const any = (db: Database.Database, pick: () => number) => {
    const positions = tenantPositions(db);
    return positions[Math.floor(pick() * positions.length)]!;
  };
  const tamperings: Record<string, Tampering> = {
    edit: (db, pick) =>
      db
        .prepare(`UPDATE events SET data = json_set(data, '$.forged', 1) WHERE position = ?`)
        .run(any(db, pick)),
    delete: (db, pick) => db.prepare('DELETE FROM events WHERE position = ?').run(any(db, pick)),
    swap: (db, pick) => {
      const [a, b] = [any(db, pick), any(db, pick)];
      if (a === b) return;
      db.prepare('UPDATE events SET position = -1 WHERE position = ?').run(a);
      db.prepare('UPDATE events SET position = ? WHERE position = ?').run(a, b);
      db.prepare('UPDATE events SET position = ? WHERE position = -1').run(b);
    },
    'move to the end': (db, pick) =>
      db
        .prepare('UPDATE events SET position = (SELECT max(position) + 1 FROM events) WHERE position = ?')
        .run(any(db, pick)),
    'skip a version': (db, pick) =>
      db
        .prepare('UPDATE events SET stream_version = stream_version + 100 WHERE position = ?')
        .run(any(db, pick)),
    'delete a stream head': (db, pick) => {
      const heads = db
        .prepare(
          `SELECT max(position) AS position FROM events WHERE tenant_id = ? AND stream_name <> ? GROUP BY stream_name`,
        )
        .all(tenant, digestStream(tenant)) as { position: number }[];
      db.prepare('DELETE FROM events WHERE position = ?').run(
        heads[Math.floor(pick() * heads.length)]!.position,
      );
    },
  };

  it('reports exactly what a walk in commit order reports, for every kind of tampering', async function () {
    this.timeout(120_000);
    const base = join(dir.dir, 'base.db');
    await seedHistory(base);
    const intact = openSqliteEventStore(base);
    const untouched = await verifyTenant(intact, tenant);
    expect(untouched).to.deep.equal(await verifyInCommitOrder(intact, tenant));
    expect(untouched).to.deep.include({ broken: null, digests: 3 });
    await intact.close();

    const kinds = Object.keys(tamperings);
    const reasons = new Set<string>();
    for (let round = 0; round < 60; round += 1) {
      const file = join(dir.dir, `round-${round}.db`);
      copyFileSync(base, file);
      const pick = random(round + 1);
      const db = new Database(file);
      const applied = [
        kinds[round % kinds.length]!,
        ...(round % 3 === 0 ? [kinds[Math.floor(pick() * kinds.length)]!] : []),
      ];
      for (const kind of applied) tamperings[kind]!(db, pick);
      db.close();
      const store = openSqliteEventStore(file);
      const report = await verifyTenant(store, tenant);
      expect(report, `round ${round}: ${applied.join(', ')}`).to.deep.equal(
        await verifyInCommitOrder(store, tenant),
      );
      await store.close();
      if (report.broken) reasons.add(report.broken.reason.replace(/\d+/g, 'N'));
    }
    expect([...reasons].sort()).to.deep.equal([
      'the digest of the stream heads up to position N does not match the history',
      'the event does not match its hash',
      'version N is missing: the next stored event is version N',
    ]);
  });

  it('finds a break in the first stream of thousands, read long before the digest that covers it', async function () {
    this.timeout(120_000);
    const file = join(dir.dir, 'thousands.db');
    const store = openSqliteEventStore(file);
    const first = `observation-${tenant}_000`;
    await store.appendToStream(
      first,
      [anEvent('A', { n: 0 }, tenant), anEvent('B', { n: 1 }, tenant)],
      'no_stream',
    );
    for (let batch = 0; batch < 30; batch += 1) {
      await Promise.all(
        Array.from({ length: 100 }, (_, n) =>
          store.appendToStream(
            `observation-${tenant}_${1000 + batch * 100 + n}`,
            [anEvent('A', { n }, tenant)],
            'no_stream',
          ),
        ),
      );
    }
    await appendDigest(store, tenant);
    await store.appendToStream(`observation-${tenant}_999999`, [anEvent('A', { n: 0 }, tenant)], 'no_stream');
    await store.close();

    const db = new Database(file);
    db.prepare('DELETE FROM events WHERE stream_name = ? AND stream_version = 1').run(first);
    db.close();
    const tampered = openSqliteEventStore(file);
    try {
      const report = await verifyTenant(tampered, tenant);
      expect(report.broken?.reason).to.match(
        /^the digest of the stream heads up to position \d+ does not match/,
      );
      expect(report).to.deep.equal(await verifyInCommitOrder(tampered, tenant));
      expect(report.streams).to.equal(3001);
    } finally {
      await tampered.close();
    }
  });
});
