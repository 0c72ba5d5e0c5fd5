import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { CompletedRecord, IdempotencyId, IdempotencyStore } from '../../src/http/idempotency-store.js';

export interface IdempotencyStoreFixture {
  store: IdempotencyStore;
  /** Opens a second store on the same backing storage, as a restarted or second instance would. */
  reopen: () => Promise<IdempotencyStore>;
  close: () => Promise<void>;
}

const minute = 60_000;
const day = 24 * 60 * minute;

/** A key no other test (or earlier run) has used. */
const anId = (scope = `t_${randomUUID().slice(0, 8)}|apikey:k_1`): IdempotencyId => ({
  scope,
  key: `key-${randomUUID()}`,
});

const aRecord = (status = 201): CompletedRecord => ({
  fingerprint: 'a'.repeat(64),
  response: {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', location: '/v1/things/1', etag: '"0"' },
    body: Buffer.from(JSON.stringify({ id: 'thing_1', bytes: 'é€' })),
  },
});

export const idempotencyStoreContract = (open: () => Promise<IdempotencyStoreFixture>) => {
  let fixture: IdempotencyStoreFixture;
  let store: IdempotencyStore;
  const now = Date.UTC(2026, 4, 1, 12);
  beforeEach(async () => {
    fixture = await open();
    store = fixture.store;
  });
  afterEach(async () => fixture.close());

  it('lets the first request claim a key, and answers in-flight to the next while it is pending', async () => {
    const id = anId();
    const first = await store.claim(id, now, now + 5 * minute);
    expect(first.outcome).to.equal('claimed');
    expect(await store.claim(id, now + 1, now + 5 * minute)).to.deep.equal({ outcome: 'in-flight' });
  });

  it('gives back the completed response byte for byte, with its fingerprint', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    const record = aRecord();
    expect(await store.complete(id, claim.token, record, now + day)).to.equal(true);
    const again = await store.claim(id, now + 1000, now + minute);
    expect(again.outcome).to.equal('completed');
    if (again.outcome !== 'completed') return;
    expect(again.record.fingerprint).to.equal(record.fingerprint);
    expect(again.record.response.status).to.equal(201);
    expect(again.record.response.headers).to.deep.equal(record.response.headers);
    expect(Buffer.compare(again.record.response.body, record.response.body)).to.equal(0);
  });

  it('keeps an empty body', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    const record = {
      fingerprint: 'b'.repeat(64),
      response: { status: 204, headers: {}, body: Buffer.alloc(0) },
    };
    await store.complete(id, claim.token, record, now + day);
    const again = await store.claim(id, now, now + minute);
    if (again.outcome !== 'completed') throw new Error(`expected completed, got ${again.outcome}`);
    expect(again.record.response.status).to.equal(204);
    expect(again.record.response.body.length).to.equal(0);
  });

  it('keeps keys apart per scope: the same key in another scope is free', async () => {
    const id = anId();
    expect((await store.claim(id, now, now + minute)).outcome).to.equal('claimed');
    expect((await store.claim({ ...id, scope: `${id.scope}-other` }, now, now + minute)).outcome).to.equal(
      'claimed',
    );
    expect((await store.claim({ ...id, key: `${id.key}-other` }, now, now + minute)).outcome).to.equal(
      'claimed',
    );
  });

  it('forgets a completed record once it expired, and lets the key be claimed afresh', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    await store.complete(id, claim.token, aRecord(), now + 1000);
    expect((await store.claim(id, now + 999, now + minute)).outcome).to.equal('completed');
    expect((await store.claim(id, now + 1000, now + 1000 + minute)).outcome).to.equal('claimed');
  });

  it('frees a pending claim whose lease ran out (its process died), and refuses the old holder', async () => {
    const id = anId();
    const dead = await store.claim(id, now, now + minute);
    if (dead.outcome !== 'claimed') throw new Error('not claimed');
    const next = await store.claim(id, now + minute, now + 2 * minute);
    if (next.outcome !== 'claimed') throw new Error(`expected claimed, got ${next.outcome}`);
    expect(await store.complete(id, dead.token, aRecord(500), now + day)).to.equal(false);
    await store.release(id, dead.token);
    expect((await store.claim(id, now + minute + 1, now + 2 * minute)).outcome).to.equal('in-flight');
    expect(await store.complete(id, next.token, aRecord(), now + day)).to.equal(true);
    const replay = await store.claim(id, now + minute + 2, now + 2 * minute);
    if (replay.outcome !== 'completed') throw new Error(`expected completed, got ${replay.outcome}`);
    expect(replay.record.response.status).to.equal(201);
  });

  it('releases a pending claim, so that the next request with the key runs afresh', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    await store.release(id, claim.token);
    expect((await store.claim(id, now + 1, now + minute)).outcome).to.equal('claimed');
  });

  it('never releases a completed record', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    await store.complete(id, claim.token, aRecord(), now + day);
    await store.release(id, claim.token);
    expect((await store.claim(id, now + 1, now + minute)).outcome).to.equal('completed');
  });

  it('completes a claim only once', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    expect(await store.complete(id, claim.token, aRecord(201), now + day)).to.equal(true);
    expect(await store.complete(id, claim.token, aRecord(200), now + day)).to.equal(false);
    const replay = await store.claim(id, now + 1, now + minute);
    if (replay.outcome !== 'completed') throw new Error(`expected completed, got ${replay.outcome}`);
    expect(replay.record.response.status).to.equal(201);
  });

  it('lets exactly one of many racing claims win, also across two stores on the same storage', async () => {
    const id = anId();
    const other = await fixture.reopen();
    try {
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).claim(id, now, now + minute)),
      );
      expect(claims.filter((claim) => claim.outcome === 'claimed')).to.have.length(1);
      expect(claims.filter((claim) => claim.outcome === 'in-flight')).to.have.length(9);
    } finally {
      await other.close();
    }
  });

  it('lets exactly one of many racing claims take over an expired record', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    await store.complete(id, claim.token, aRecord(), now + 1000);
    const later = now + 2000;
    const claims = await Promise.all(
      Array.from({ length: 10 }, () => store.claim(id, later, later + minute)),
    );
    expect(claims.filter((c) => c.outcome === 'claimed')).to.have.length(1);
    expect(claims.filter((c) => c.outcome === 'in-flight')).to.have.length(9);
  });

  it('keeps records across a restart', async () => {
    const id = anId();
    const claim = await store.claim(id, now, now + minute);
    if (claim.outcome !== 'claimed') throw new Error('not claimed');
    await store.complete(id, claim.token, aRecord(), now + day);
    const reopened = await fixture.reopen();
    try {
      expect((await reopened.claim(id, now + 1, now + minute)).outcome).to.equal('completed');
    } finally {
      await reopened.close();
    }
  });
};
