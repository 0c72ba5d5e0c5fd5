import { expect } from 'chai';
import Database from 'better-sqlite3';
import { compactVerify, createLocalJWKSet } from 'jose';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import {
  logRoot,
  verifyConsistency,
  verifyDigestSignature,
  verifyInclusion,
  type SignedDigest,
} from '../../client/src/audit-proofs.js';
import { digestKeysOf, signDigest } from '../../src/audit/digest-signature.js';
import { verifyTenant } from '../../src/audit/verify.js';
import { ObservationServiceClient } from '../../client/src/index.js';
import { keyringOf, readKeys, retireKey, rotateKeys } from '../../src/auth/signing-keys.js';
import { expectForbidden } from '../support/auth.js';
import { digestNow } from '../support/digests.js';
import { describePostgres, suiteDatabase } from '../support/postgres.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

const observe = (server: TestServer, tenant: { tenantId: string; adminKey: string }, notes: string) =>
  request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
    method: 'POST',
    body: { observedAt: '2026-05-01T09:30:00Z', notes },
    headers: { 'X-API-Key': tenant.adminKey },
  });

/** The tenant's events as the `/events` export lists them, in its order: the tree's leaves. */
const exportedIds = async (server: TestServer, tenant: { tenantId: string; adminKey: string }) => {
  const response = await fetch(`${server.url}/v1/tenants/${tenant.tenantId}/events`, {
    headers: { 'X-API-Key': tenant.adminKey, Accept: 'application/x-ndjson' },
  });
  return (await response.text())
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { id: string }).id);
};

const digestsSuite = (env: () => Record<string, string>, onSqlite: boolean) => {
  let server: TestServer;
  let tenant: Awaited<ReturnType<typeof withTenant>>;
  let first: SignedDigest;
  let second: SignedDigest;
  let leaves: { id: string; hash: string; position: number }[];
  const get = (path: string, key = tenant.adminKey) =>
    request(`${server.url}/v1/tenants/${tenant.tenantId}/audit/${path}`, { headers: { 'X-API-Key': key } });

  before(async function () {
    this.timeout(60_000);
    server = await startTestServer(env());
    tenant = await withTenant(server);
    for (const notes of ['one', 'two', 'three'])
      expect((await observe(server, tenant, notes)).status).to.equal(201);
    await digestNow(server, tenant.tenantId);
    for (const notes of ['four', 'five']) await observe(server, tenant, notes);
    await digestNow(server, tenant.tenantId);
    const listed = await get('digests');
    [second, first] = listed.body.data as [SignedDigest, SignedDigest];
    const page = await server.stores.eventStore.readAll({
      maxCount: 10_000,
      filter: { tenantId: tenant.tenantId },
    });
    leaves = page.events.map(({ id, hash, position }) => ({ id, hash: hash!, position }));
  });
  after(() => server.close());

  it('lists the signed digests newest first, each a tree over the export’s events in its order', async () => {
    expect(first.size).to.be.greaterThan(3);
    expect(second.size).to.be.greaterThan(first.size);
    expect(leaves.map((leaf) => leaf.id)).to.deep.include.members(await exportedIds(server, tenant));
    expect((await exportedIds(server, tenant)).slice(0, second.size)).to.deep.equal(
      leaves.slice(0, second.size).map((leaf) => leaf.id),
    );
    for (const digest of [first, second]) {
      const tree = logRoot();
      leaves.filter((leaf) => leaf.position <= digest.position).forEach((leaf) => tree.add(leaf.hash));
      expect([tree.size, tree.root()]).to.deep.equal([digest.size, digest.logRoot]);
    }
    expect((await get('digests/latest')).body).to.deep.equal(second);
  });

  it('pages with a cursor', async () => {
    const page = await get('digests?limit=1');
    expect(page.body.data).to.deep.equal([second]);
    const next = await get(`digests?limit=1&cursor=${encodeURIComponent(page.body.nextCursor as string)}`);
    expect(next.body).to.deep.equal({ data: [first], nextCursor: null });
  });

  it('signs each digest with a key of the JWKS, as jose and the client verify it', async () => {
    const jwks = (await request(`${server.url}/.well-known/jwks.json`)).body;
    for (const digest of [first, second]) {
      const { payload, protectedHeader } = await compactVerify(digest.signature, createLocalJWKSet(jwks));
      expect(protectedHeader).to.include({ alg: 'ES256', typ: 'obs-digest' });
      const { signature: _signature, ...fields } = digest;
      expect(JSON.parse(new TextDecoder().decode(payload))).to.deep.equal(fields);
      expect(verifyDigestSignature(digest, jwks)).to.deep.equal({ ok: true, kid: protectedHeader.kid });
    }
  });

  it('proves every event a leaf of the digests that cover it', async () => {
    for (const [index, leaf] of leaves.slice(0, second.size).entries()) {
      const proof = await get(`proofs/inclusion?eventId=${leaf.id}`);
      expect(proof.status, JSON.stringify(proof.body)).to.equal(200);
      expect(proof.body).to.deep.include({
        eventId: leaf.id,
        leafIndex: index,
        treeSize: second.size,
        hash: leaf.hash,
      });
      expect(
        verifyInclusion(
          { eventHash: leaf.hash },
          index,
          second.size,
          proof.body.path as string[],
          second.logRoot,
        ),
      ).to.equal(true);
    }
    const early = await get(`proofs/inclusion?eventId=${leaves[1]!.id}&size=${first.size}`);
    expect(
      verifyInclusion(
        { eventHash: leaves[1]!.hash },
        1,
        first.size,
        early.body.path as string[],
        first.logRoot,
      ),
    ).to.equal(true);
  });

  it('proves the newer digest’s tree extends the older', async () => {
    const proof = await get(`proofs/consistency?from=${first.size}&to=${second.size}`);
    expect(proof.status, JSON.stringify(proof.body)).to.equal(200);
    expect(
      verifyConsistency(first.size, second.size, first.logRoot, second.logRoot, proof.body.path as string[]),
    ).to.equal(true);
  });

  it('is what the client package fetches and checks, start to end', async () => {
    const client = new ObservationServiceClient({ baseUrl: server.url, apiKey: tenant.adminKey });
    const latest = (await client.events.latestDigest(tenant.tenantId)) as SignedDigest;
    const [, older] = (await client.events.digests(tenant.tenantId)).data as SignedDigest[];
    const keys = await client.discovery.digestKeys();
    expect(verifyDigestSignature(latest, keys).ok).to.equal(true);
    const leaf = leaves[2]!;
    const inclusion = await client.events.inclusionProof(tenant.tenantId, { eventId: leaf.id });
    expect(
      verifyInclusion(
        { eventHash: leaf.hash },
        inclusion.leafIndex,
        inclusion.treeSize,
        inclusion.path,
        latest.logRoot,
      ),
    ).to.equal(true);
    const consistency = await client.events.consistencyProof(tenant.tenantId, {
      from: older!.size,
      to: latest.size,
    });
    expect(
      verifyConsistency(older!.size, latest.size, older!.logRoot, latest.logRoot, consistency.path),
    ).to.equal(true);
  });

  it('answers problems for an unknown event, sizes beyond the newest digest or before the event, and no scope', async () => {
    expect((await get('proofs/inclusion?eventId=nonesuch')).status).to.equal(404);
    expect((await get(`proofs/inclusion?eventId=${leaves[0]!.id}&size=${second.size + 1}`)).status).to.equal(
      422,
    );
    expect(
      (await get(`proofs/inclusion?eventId=${leaves[first.size]!.id}&size=${first.size}`)).status,
    ).to.equal(422);
    expect((await get('proofs/inclusion')).status).to.equal(400);
    expect((await get(`proofs/consistency?from=1&to=${second.size + 1}`)).status).to.equal(422);
    expect((await get('proofs/consistency?from=3&to=2')).status).to.equal(422);
    expectForbidden(await get('digests', await tenant.key(['observations:read'])), 'admin');
  });

  it('passes obs audit verify, signatures and log trees included', async () => {
    const keys = digestKeysOf(keyringOf(readKeys(join(server.dataDir, 'signing-keys.json'))).digestJwks);
    const report = await verifyTenant(server.stores.eventStore, tenant.tenantId, undefined, keys);
    expect(report).to.deep.include({ broken: null, digests: 2 });
    const unsigned = await verifyTenant(server.stores.eventStore, tenant.tenantId);
    expect(unsigned.broken?.reason).to.match(/signature .*: unknown key/);
  });

  if (!onSqlite) return;

  it('keeps a retired key’s digests verifiable on /.well-known/digest-keys.json, and out of jwks.json', async function () {
    this.timeout(20_000);
    const file = join(server.dataDir, 'signing-keys.json');
    const [old] = readKeys(file);
    rotateKeys(file);
    retireKey(file, old!.kid);
    const jwks = await eventually(async () => {
      const body = (await request(`${server.url}/.well-known/jwks.json`)).body as { keys: { kid: string }[] };
      return body.keys.some((key) => key.kid === old!.kid) ? undefined : body;
    });
    expect(verifyDigestSignature(first, jwks)).to.deep.equal({ ok: false, reason: 'unknown-key' });
    const digestKeys = (await request(`${server.url}/.well-known/digest-keys.json`)).body;
    expect(verifyDigestSignature(first, digestKeys)).to.deep.equal({ ok: true, kid: old!.kid });
    // A digest claiming a time after the key's retirement is refused, even with a good signature.
    const later = { ...first, recordedAt: '2999-01-01T00:00:00.000Z' };
    expect(verifyDigestSignature(later, digestKeys)).to.deep.equal({ ok: false, reason: 'retired-key' });
  });

  it('names a digest whose log root was changed and signed again with the key', async () => {
    const file = join(server.dataDir, 'signing-keys.json');
    const { signing, digestJwks } = keyringOf(readKeys(file));
    const otherRoot = createHash('sha256').update('another history').digest('hex');
    const { signature: _signature, ...fields } = second;
    const resigned = signDigest(signing, { ...fields, logRoot: otherRoot });
    const db = new Database(join(server.dataDir, 'events.db'));
    db.prepare(
      `UPDATE events SET data = json_set(data, '$.log.root', ?, '$.signature', ?) WHERE event_type = 'AuditDigestRecorded' AND tenant_id = ? AND json_extract(data, '$.upToPosition') = ?`,
    ).run(otherRoot, resigned, tenant.tenantId, second.position);
    db.close();
    const report = await verifyTenant(
      server.stores.eventStore,
      tenant.tenantId,
      undefined,
      digestKeysOf(digestJwks),
    );
    expect(report.broken?.reason).to.equal(
      `the log tree of ${second.size} events up to position ${second.position} does not match the history (${second.size} events, another root)`,
    );
  });

  it('names a digest whose signature was forged in the store', async () => {
    const db = new Database(join(server.dataDir, 'events.db'));
    const forged = createHash('sha256').update('forged').digest('base64url');
    db.prepare(
      `UPDATE events SET data = json_set(data, '$.signature', ?) WHERE event_type = 'AuditDigestRecorded' AND tenant_id = ? AND json_extract(data, '$.upToPosition') = ?`,
    ).run(`${first.signature.split('.').slice(0, 2).join('.')}.${forged}`, tenant.tenantId, first.position);
    db.close();
    const keys = digestKeysOf(keyringOf(readKeys(join(server.dataDir, 'signing-keys.json'))).digestJwks);
    const report = await verifyTenant(server.stores.eventStore, tenant.tenantId, undefined, keys);
    expect(report.broken?.reason).to.equal(
      `the signature of the digest up to position ${first.position}: bad signature`,
    );
    const listed = (await get('digests')).body.data as SignedDigest[];
    const jwks = (await request(`${server.url}/.well-known/digest-keys.json`)).body;
    expect(verifyDigestSignature(listed[1]!, jwks)).to.deep.equal({ ok: false, reason: 'invalid-signature' });
  });
};

describe('signed digests and their proofs, on SQLite', () => digestsSuite(() => ({}), true));
describePostgres('signed digests and their proofs, on PostgreSQL', () => {
  const database = suiteDatabase();
  digestsSuite(() => ({ DATABASE_URL: database() }), false);
});
