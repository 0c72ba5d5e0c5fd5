import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { freePort } from './process.js';
import { request } from './server.js';
import { eventually } from './wait.js';

/**
 * The bench's peers (bench/crud-peer.ts, bench/emmett-peer.ts) are baselines the service is held to, so the
 * tests check that each does the work it is credited with; these are the steps both tests share.
 */

export const peerKey = 'peer-test-key-0123456789abcdef';
export const peerHeaders = { 'X-API-Key': peerKey };

/** Starts `file` with the one key and tenant it knows, plus `env` (where it stores). */
export const startBenchPeer = async (file: string, tenant: string, env: Record<string, string>) => {
  const port = await freePort();
  // stdin stays a pipe: the peer exits when it ends, as it does when the benchmark dies.
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      PEER_TENANT: tenant,
      PEER_API_KEY: peerKey,
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

/** 401 without a key, 404 for another tenant, 400 problem+json with the codec's field paths. */
export const expectRefusals = async (observations: string, tenant: string): Promise<void> => {
  const body = { observedAt: '2026-05-01T09:30:00Z' };
  expect((await request(observations, { method: 'POST', body })).status).to.equal(401);
  const other = await request(observations.replace(tenant, 't_other'), {
    method: 'POST',
    body,
    headers: peerHeaders,
  });
  expect(other.status).to.equal(404);
  const invalid = await request(observations, {
    method: 'POST',
    body: { observedAt: 'yesterday', position: { lat: 91, lon: 0 } },
    headers: peerHeaders,
  });
  expect(invalid.status).to.equal(400);
  expect(invalid.headers.get('content-type')).to.match(/^application\/problem\+json/);
  const paths = (invalid.body.errors as { path: string }[]).map((error) => error.path);
  expect(paths).to.include.members(['observedAt', 'position.lat']);
};

/** Twenty creations at once, each 201 with a Location and ETag; answers their ids, sorted. */
export const createTwenty = async (observations: string, tenant: string): Promise<string[]> => {
  const created = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      request(observations, {
        method: 'POST',
        body: { observedAt: new Date(Date.UTC(2026, 4, 1, 9, i)).toISOString(), notes: `n${i}` },
        headers: peerHeaders,
      }),
    ),
  );
  expect(created.map((response) => response.status)).to.deep.equal(Array(20).fill(201));
  expect(created[0]!.headers.get('location')).to.match(new RegExp(`^/v1/tenants/${tenant}/observations/o_`));
  expect(created[0]!.headers.get('etag')).to.equal('"1"');
  return created.map((response) => response.body.id as string).sort();
};

export const listedIds = async (observations: string): Promise<string[]> => {
  const listed = await request(`${observations}?limit=200`, { headers: peerHeaders });
  return (listed.body.data as { id: string }[]).map((o) => o.id).sort();
};

/** Five creations a minute apart, then every page of 2 by its cursor: they come newest first. */
export const expectNewestFirstPages = async (observations: string): Promise<void> => {
  for (let i = 0; i < 5; i += 1) {
    const observedAt = new Date(Date.UTC(2026, 4, 1, 9, i)).toISOString();
    await request(observations, { method: 'POST', body: { observedAt }, headers: peerHeaders });
  }
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await request(
      `${observations}?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { headers: peerHeaders },
    );
    expect(page.status).to.equal(200);
    seen.push(...(page.body.data as { observedAt: string }[]).map((o) => o.observedAt));
    cursor = page.body.nextCursor as string | null;
  } while (cursor);
  expect(seen).to.have.length(5);
  expect(seen).to.deep.equal([...seen].sort().reverse());
};
