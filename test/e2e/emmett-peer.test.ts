import { expect } from 'chai';
import {
  createTwenty,
  expectNewestFirstPages,
  expectRefusals,
  listedIds,
  peerHeaders as headers,
  startBenchPeer,
} from '../support/bench-peer.js';
import { createTestDatabase } from '../support/postgres.js';
import { request } from '../support/server.js';

/**
 * bench/emmett-peer.ts is what the service's create and list are held to on PostgreSQL (issue 28), so it
 * must do the work it is credited with: validate with the service's codecs, check the key, make every
 * acknowledged creation durable and listed at once (the inline projection commits with the event), and page
 * with a keyset cursor bound to the tenant.
 */
const tenant = 't_emmett';
const startPeer = (databaseUrl: string) =>
  startBenchPeer('bench/emmett-peer.ts', tenant, { DATABASE_URL: databaseUrl });

describe('the emmett peer of the benchmark', function () {
  this.timeout(60_000);
  let databaseUrl: string;
  let peer: Awaited<ReturnType<typeof startPeer>>;
  beforeEach(async () => {
    databaseUrl = createTestDatabase();
    peer = await startPeer(databaseUrl);
  });
  afterEach(async () => {
    await peer?.kill();
  });

  it('refuses a missing key, another tenant, an invalid body and an unsupported filter as problems', async () => {
    await expectRefusals(peer.observations, tenant);
    const filtered = await request(`${peer.observations}?observedFrom=2026-05-01T00:00:00Z`, { headers });
    expect(filtered.status).to.equal(400);
  });

  it('lists every acknowledged creation at once, and after a kill -9', async () => {
    const ids = await createTwenty(peer.observations, tenant);
    expect(await listedIds(peer.observations)).to.deep.equal(ids);
    await peer.kill();
    peer = await startPeer(databaseUrl);
    expect(await listedIds(peer.observations)).to.deep.equal(ids);
  });

  it('pages newest first with a cursor bound to its tenant', async () => {
    await expectNewestFirstPages(peer.observations);
    const forged = await request(`${peer.observations}?limit=2&cursor=not-a-cursor`, { headers });
    expect(forged.status).to.equal(400);
  });
});
