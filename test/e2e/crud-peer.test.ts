import { expect } from 'chai';
import { tempDir } from '../support/adapters.js';
import {
  createTwenty,
  expectNewestFirstPages,
  expectRefusals,
  listedIds,
  peerHeaders as headers,
  startBenchPeer,
} from '../support/bench-peer.js';
import { request } from '../support/server.js';

/**
 * bench/crud-peer.ts is the baseline the service's create and list are held to, so it must do the work it
 * is credited with: validate with the service's codecs, check the key, keep what it acknowledged across a
 * crash, and page with a keyset cursor bound to its query.
 */
const tenant = 't_peer';
const startPeer = (dataDir: string) => startBenchPeer('bench/crud-peer.ts', tenant, { DATA_DIR: dataDir });

describe('the CRUD peer of the benchmark', function () {
  this.timeout(60_000);
  let dir: { dir: string; remove: () => void };
  let peer: Awaited<ReturnType<typeof startPeer>>;
  beforeEach(async () => {
    dir = tempDir();
    peer = await startPeer(dir.dir);
  });
  afterEach(async () => {
    await peer?.kill();
    dir.remove();
  });

  it('refuses a missing key, another tenant and an invalid body as problems', async () => {
    await expectRefusals(peer.observations, tenant);
  });

  it('keeps every acknowledged creation across a kill -9', async () => {
    const ids = await createTwenty(peer.observations, tenant);
    await peer.kill();
    peer = await startPeer(dir.dir);
    expect(await listedIds(peer.observations)).to.deep.equal(ids);
  });

  it('pages newest first with a cursor bound to its query', async () => {
    await expectNewestFirstPages(peer.observations);
    const first = await request(`${peer.observations}?limit=2`, { headers });
    const elsewhere = await request(
      `${peer.observations}?limit=2&sort=createdAt&cursor=${encodeURIComponent(first.body.nextCursor as string)}`,
      { headers },
    );
    expect(elsewhere.status).to.equal(400);
    const from = (minute: number) => new Date(Date.UTC(2026, 4, 1, 9, minute)).toISOString();
    const filtered = await request(`${peer.observations}?limit=2&observedFrom=${from(0)}`, { headers });
    const otherValue = await request(
      `${peer.observations}?limit=2&observedFrom=${from(1)}&cursor=${encodeURIComponent(filtered.body.nextCursor as string)}`,
      { headers },
    );
    expect(otherValue.status).to.equal(400);
  });
});
