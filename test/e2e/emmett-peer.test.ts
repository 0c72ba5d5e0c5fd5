import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createTestDatabase } from '../support/postgres.js';
import { freePort } from '../support/process.js';
import { request } from '../support/server.js';
import { eventually } from '../support/wait.js';

/**
 * bench/emmett-peer.ts is what the service's create and list are held to on PostgreSQL (issue 28), so it
 * must do the work it is credited with: validate with the service's codecs, check the key, make every
 * acknowledged creation durable and listed at once (the inline projection commits with the event), and page
 * with a keyset cursor bound to the tenant.
 */
const apiKey = 'emmett-peer-test-key-0123456789abcdef';
const tenant = 't_emmett';

const startPeer = async (databaseUrl: string) => {
  const port = await freePort();
  // stdin stays a pipe: the peer exits when it ends, as it does when the benchmark dies.
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/emmett-peer.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      PEER_TENANT: tenant,
      PEER_API_KEY: apiKey,
      CURSOR_SECRET: 'peer-test-cursor-secret-0123456789',
    },
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async () => {
    child.kill('SIGKILL');
    await exited;
  };
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => ((await fetch(`${url}/health`).catch(() => null))?.ok ? true : undefined),
    20_000,
  );
  return { kill, observations: `${url}/v1/tenants/${tenant}/observations` };
};

describe('the emmett peer of the benchmark', function () {
  this.timeout(60_000);
  let databaseUrl: string;
  let peer: Awaited<ReturnType<typeof startPeer>>;
  const headers = { 'X-API-Key': apiKey };
  beforeEach(async () => {
    databaseUrl = createTestDatabase();
    peer = await startPeer(databaseUrl);
  });
  afterEach(async () => {
    await peer?.kill();
  });

  it('refuses a missing key, another tenant, an invalid body and an unsupported filter as problems', async () => {
    const body = { observedAt: '2026-05-01T09:30:00Z' };
    expect((await request(peer.observations, { method: 'POST', body })).status).to.equal(401);
    const other = await request(peer.observations.replace(tenant, 't_other'), {
      method: 'POST',
      body,
      headers,
    });
    expect(other.status).to.equal(404);
    const invalid = await request(peer.observations, {
      method: 'POST',
      body: { observedAt: 'yesterday', position: { lat: 91, lon: 0 } },
      headers,
    });
    expect(invalid.status).to.equal(400);
    expect(invalid.headers.get('content-type')).to.match(/^application\/problem\+json/);
    const paths = (invalid.body.errors as { path: string }[]).map((error) => error.path);
    expect(paths).to.include.members(['observedAt', 'position.lat']);
    const filtered = await request(`${peer.observations}?observedFrom=2026-05-01T00:00:00Z`, { headers });
    expect(filtered.status).to.equal(400);
  });

  it('lists every acknowledged creation at once, and after a kill -9', async () => {
    const created = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        request(peer.observations, {
          method: 'POST',
          body: { observedAt: new Date(Date.UTC(2026, 4, 1, 9, i)).toISOString(), notes: `n${i}` },
          headers,
        }),
      ),
    );
    expect(created.map((response) => response.status)).to.deep.equal(Array(20).fill(201));
    expect(created[0]!.headers.get('location')).to.match(/^\/v1\/tenants\/t_emmett\/observations\/o_/);
    expect(created[0]!.headers.get('etag')).to.equal('"1"');
    const ids = created.map((response) => response.body.id as string).sort();
    const listedIds = async () => {
      const listed = await request(`${peer.observations}?limit=200`, { headers });
      return (listed.body.data as { id: string }[]).map((o) => o.id).sort();
    };
    expect(await listedIds()).to.deep.equal(ids);
    await peer.kill();
    peer = await startPeer(databaseUrl);
    expect(await listedIds()).to.deep.equal(ids);
  });

  it('pages newest first with a cursor bound to its tenant', async () => {
    for (let i = 0; i < 5; i += 1) {
      const observedAt = new Date(Date.UTC(2026, 4, 1, 9, i)).toISOString();
      await request(peer.observations, { method: 'POST', body: { observedAt }, headers });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await request(
        `${peer.observations}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { headers },
      );
      expect(page.status).to.equal(200);
      seen.push(...(page.body.data as { observedAt: string }[]).map((o) => o.observedAt));
      cursor = page.body.nextCursor as string | null;
    } while (cursor);
    expect(seen).to.have.length(5);
    expect(seen).to.deep.equal([...seen].sort().reverse());
    const forged = await request(`${peer.observations}?limit=2&cursor=not-a-cursor`, { headers });
    expect(forged.status).to.equal(400);
  });
});
