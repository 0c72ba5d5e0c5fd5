import { expect } from 'chai';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import type { JsonWebKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  verifyHistory,
  type ExportedEvent,
  type HistoryReport,
  type SignedDigest,
} from '../../client/src/index.js';
import { verifyTenant } from '../../src/audit/verify.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import { cvTenant } from '../support/cv.js';
import { digestNow } from '../support/digests.js';
import { testImage } from '../support/images.js';
import { suiteDatabase, describePostgres } from '../support/postgres.js';
import { startTs } from '../support/process.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/*
 * An auditor's proof (docs/auditors.md §2, §5): a tenant's NDJSON download verifies with the client's
 * verifier and with a second one written from the page alone (test/support/verify_history.py), and every
 * tampering with it is named by both alike.
 */

const pythonVerifier = join(import.meta.dirname, '../support/verify_history.py');

interface PythonReport {
  ok: boolean;
  events: number;
  broken?: { streamName: string; streamVersion: number; position: number; reason: string };
  digest?: { ok: boolean; problem: string | null };
}

/** A signed digest and the keys that verify it, as an auditor saves them. */
interface Anchor {
  digest: SignedDigest;
  jwks: { keys: JsonWebKey[] };
}

const scratch = mkdtempSync(join(tmpdir(), 'audit-export-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const fileOf = (lines: readonly string[]): string => {
  const file = join(scratch, `history-${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(file, lines.map((line) => `${line}\n`).join(''));
  return file;
};

const jsonFile = (value: unknown): string => {
  const file = join(scratch, `anchor-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(value));
  return file;
};

const verifyInPython = (lines: readonly string[], anchor?: Anchor): PythonReport => {
  const files = anchor ? [jsonFile(anchor.digest), jsonFile(anchor.jwks)] : [];
  const run = spawnSync('python3', [pythonVerifier, fileOf(lines), ...files], { encoding: 'utf8' });
  expect(run.status, run.stderr).to.be.oneOf([0, 1]);
  return JSON.parse(run.stdout) as PythonReport;
};

/**
 * Both verifiers' verdicts, which must agree: the same verdict, the same first broken link, and with a
 * digest the same problem with it.
 */
const verdicts = async (lines: readonly string[], anchor?: Anchor) => {
  const typescript = await verifyHistory(lines, anchor ?? {});
  const python = verifyInPython(lines, anchor);
  expect(python.ok, 'the Python verifier agrees').to.equal(typescript.ok);
  const at = (broken?: { streamName: string; streamVersion: number }) =>
    broken && { streamName: broken.streamName, streamVersion: broken.streamVersion };
  expect(at(python.broken), 'the same first broken link').to.deep.equal(at(typescript.broken));
  expect(python.digest?.problem ?? null, 'the same problem with the digest').to.equal(
    typescript.digest?.problem ?? null,
  );
  return typescript;
};

const parsed = (line: string) => JSON.parse(line) as ExportedEvent & { data: Record<string, unknown> };

const exportSuite = (env: () => Record<string, string>) => {
  let server: TestServer;
  let tenantId: string;
  let lines: string[];
  let headers: Headers;
  let anchor: Anchor;

  before(async function () {
    this.timeout(60_000);
    server = await startTestServer({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      ...env(),
    });
    const tenant = await withTenant(server, 'auditexport');
    tenantId = tenant.tenantId;
    const admin = { 'X-API-Key': tenant.adminKey };
    const scopes = ['cv:read', 'cv:write', 'observations:write', 'observations:read', 'webhooks:manage'];
    const cv = cvTenant(server.url, server.stores, tenantId, await tenant.key(scopes));
    const created = await Promise.all([
      request(`${server.url}/v1/tenants/${tenantId}/users`, {
        method: 'POST',
        body: { email: 'ann@example.test', password: 'a long enough password', scopes: ['cv:read'] },
        headers: admin,
      }),
      request(`${server.url}/v1/tenants/${tenantId}/oauth-clients`, {
        method: 'POST',
        body: { name: 'worker', scopes: ['observations:read'] },
        headers: admin,
      }),
      request(`${server.url}/v1/tenants/${tenantId}/webhooks`, {
        method: 'POST',
        // Nothing listens there: the delivery is attempted, fails, and is recorded.
        body: {
          url: 'http://127.0.0.1:9/hooks',
          events: ['observation.created'],
          secret: 'a-secret-of-16-chars',
        },
        headers: admin,
      }),
    ]);
    for (const response of created) expect(response.status, JSON.stringify(response.body)).to.equal(201);
    const observationId = await cv.observe('two dark stones');
    await cv.observe('a fox');
    await cv.upload(
      observationId,
      await testImage({ width: 640, height: 480, format: 'png', background: 210, boxes: [] }),
    );
    const job = await cv.api('/cv-jobs', {
      method: 'POST',
      body: { observationId, model: 'object-proposals' },
    });
    expect(job.status, JSON.stringify(job.body)).to.equal(202);
    await cv.finished(job.body.id as string, 30_000);
    const download = async () => {
      const response = await fetch(`${server.url}/v1/tenants/${tenantId}/events`, {
        headers: { ...admin, Accept: 'application/x-ndjson' },
      });
      expect(response.status).to.equal(200);
      return { headers: response.headers, lines: (await response.text()).split('\n').filter(Boolean) };
    };
    await eventually(
      async () => {
        ({ headers, lines } = await download());
        return lines.some((line) => parsed(line).streamName.startsWith('delivery-')) ? true : undefined;
      },
      20_000,
      'a webhook delivery on the record',
    );
    // A signed digest of all that, and the keys that verify it, fetched as an auditor would keep them.
    await digestNow(server, tenantId);
    const latest = await request(`${server.url}/v1/tenants/${tenantId}/audit/digests/latest`, {
      headers: admin,
    });
    expect(latest.status, JSON.stringify(latest.body)).to.equal(200);
    const keys = await request(`${server.url}/.well-known/digest-keys.json`);
    anchor = { digest: latest.body as SignedDigest, jwks: keys.body as Anchor['jwks'] };
    ({ headers, lines } = await download());
  });
  after(() => server.close());

  const lineOf = (type: string) => lines.findIndex((line) => parsed(line).type === type);
  const without = (index: number) => lines.filter((_, at) => at !== index);
  const replaced = (index: number, change: (event: ReturnType<typeof parsed>) => void) =>
    lines.map((line, at) => {
      if (at !== index) return line;
      const event = parsed(line);
      change(event);
      return JSON.stringify(event);
    });
  const brokenAt = (report: HistoryReport, index: number, reason: RegExp) => {
    const event = parsed(lines[index]!);
    expect(report.ok).to.equal(false);
    expect(report.broken).to.deep.include({
      streamName: event.streamName,
      streamVersion: event.streamVersion,
    });
    expect(report.broken!.reason).to.match(reason);
  };

  it('verifies whole with both verifiers, credentials, webhooks and CV jobs included', async () => {
    const report = await verdicts(lines);
    expect(report).to.deep.include({ ok: true, events: lines.length, uncommitted: 0 });
    expect(report.range).to.deep.equal({
      fromPosition: parsed(lines[0]!).position,
      toPosition: parsed(lines.at(-1)!).position,
    });
    expect(Number(headers.get('export-after-position'))).to.equal(0);
    expect(Number(headers.get('export-head-position'))).to.be.at.least(report.range.toPosition!);
    const types = new Set(lines.map((line) => parsed(line).type));
    for (const type of [
      'UserCreated',
      'ApiKeyCreated',
      'OAuthClientRegistered',
      'WebhookSubscribed',
      'CvJobCompleted',
    ])
      expect(types, type).to.include(type);
  });

  it('shows every secret field as a commitment, and no salt', () => {
    const secrets = lines
      .map(parsed)
      .flatMap((event) =>
        ['passwordHash', 'secretHash', 'sealedSecret', 'refreshTokenHash'].flatMap((field) =>
          field in event.data ? [event.data[field]] : [],
        ),
      );
    expect(secrets.length).to.be.at.least(4);
    for (const secret of secrets) expect(secret).to.have.all.keys('commitment');
    expect(lines.join('\n')).not.to.match(/"salts"|scrypt|\[redacted\]/);
  });

  it('names an event whose data was edited', async () => {
    const index = lineOf('ObservationRecorded');
    const report = await verdicts(replaced(index, (event) => (event.data.notes = 'forged')));
    brokenAt(report, index, /^the event does not match its hash$/);
  });

  it("names an event whose secret's commitment was edited", async () => {
    const index = lineOf('UserCreated');
    const forged = { commitment: '0'.repeat(64) };
    brokenAt(await verdicts(replaced(index, (event) => (event.data.passwordHash = forged))), index, /hash/);
  });

  it('names the event after a deleted one', async () => {
    const index = lineOf('CvJobStarted');
    brokenAt(await verdicts(without(index)), lineOf('CvJobCompleted'), /^version 1 is missing/);
  });

  it('names two events swapped out of commit order', async () => {
    const [first, second] = [lineOf('ObservationRecorded'), lineOf('ObservationRecorded') + 1];
    const swapped = lines.map((line, at) =>
      at === first ? lines[second]! : at === second ? lines[first]! : line,
    );
    brokenAt(await verdicts(swapped), first, /out of commit order/);
  });

  it('cannot see the last event of a stream dropped without a digest', async () => {
    const report = await verdicts(without(lineOf('CvJobCompleted')));
    expect(report).to.deep.include({ ok: true, events: lines.length - 1 });
  });

  describe('held to a signed digest', () => {
    const digestProblem = (report: HistoryReport) => (
      expect(report.ok).to.equal(false),
      report.digest?.problem
    );

    it('verifies whole, its first `size` events those the digest signed', async () => {
      const report = await verdicts(lines, anchor);
      expect(report.ok, JSON.stringify(report.digest)).to.equal(true);
      expect(report.digest).to.deep.include({ ok: true, problem: null, size: anchor.digest.size });
    });

    it('shows the last event of a stream dropped', async () => {
      const report = await verdicts(without(lineOf('CvJobCompleted')), anchor);
      expect(digestProblem(report)).to.be.oneOf(['log-root', 'short']);
    });

    it('shows a stream’s first events dropped, which leave its chain whole', async () => {
      const stream = parsed(lines[lineOf('CvJobRequested')]!).streamName;
      const report = await verdicts(
        lines.filter((line) => parsed(line).streamName !== stream || parsed(line).streamVersion > 0),
        anchor,
      );
      expect(digestProblem(report)).to.be.oneOf(['log-root', 'short']);
    });

    it('refuses a digest whose root was changed, and one whose signature was forged', async () => {
      const otherRoot = { ...anchor, digest: { ...anchor.digest, logRoot: '0'.repeat(64) } };
      expect(digestProblem(await verdicts(lines, otherRoot))).to.equal('signature');
      const [header, payload, signature] = anchor.digest.signature.split('.') as [string, string, string];
      const flipped = `${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
      const forged = {
        ...anchor,
        digest: { ...anchor.digest, signature: `${header}.${payload}.${flipped}` },
      };
      expect(digestProblem(await verdicts(lines, forged))).to.equal('signature');
    });

    it('is what obs audit verify --file and the client bin say with --digest and --jwks', async () => {
      const files = ['--digest', jsonFile(anchor.digest), '--jwks', jsonFile(anchor.jwks)];
      const obs = startTs('src/cli/main.ts', ['audit', 'verify', '--file', fileOf(lines), ...files]);
      expect(await obs.exited, obs.output.stderr).to.equal(0);
      expect(obs.output.stdout).to.match(/^OK: .*the first \d+ events are those of the signed digest/);
      const dropped = fileOf(without(lineOf('CvJobCompleted')));
      const bin = startTs('client/src/verify-cli.ts', ['verify', dropped, ...files, '--json']);
      expect(await bin.exited, bin.output.stderr).to.equal(1);
      expect(JSON.parse(bin.output.stdout).digest.ok).to.equal(false);
    }).timeout(30_000);
  });

  it('is what obs audit verify --file and the client bin say, with their exit codes', async () => {
    const whole = fileOf(lines);
    const broken = fileOf(without(lineOf('CvJobStarted')));
    const obs = startTs('src/cli/main.ts', ['audit', 'verify', '--file', whole, '--json']);
    expect(await obs.exited, obs.output.stderr).to.equal(0);
    expect(JSON.parse(obs.output.stdout)).to.deep.include({ ok: true, events: lines.length });
    const bin = startTs('client/src/verify-cli.ts', ['verify', broken]);
    expect(await bin.exited, bin.output.stderr).to.equal(1);
    expect(bin.output.stdout).to.match(/^BROKEN after \d+ events .*version 1 is missing/);
    const bad = startTs('src/cli/main.ts', ['audit', 'verify', '--file', join(scratch, 'absent.ndjson')]);
    expect(await bad.exited).to.equal(2);
  }).timeout(30_000);
};

describe('a downloaded history, verified by an auditor, on SQLite', () => exportSuite(() => ({})));
describePostgres('a downloaded history, verified by an auditor, on PostgreSQL', () => {
  const database = suiteDatabase();
  exportSuite(() => ({ DATABASE_URL: database() }));
});

describe('a downloaded history with an event stored before commitments', () => {
  let server: TestServer;
  let tenantId: string;
  let adminKey: string;
  let userStream: string;

  before(async () => {
    server = await startTestServer();
    const tenant = await withTenant(server, 'auditold');
    ({ tenantId, adminKey } = tenant);
    const created = await request(`${server.url}/v1/tenants/${tenantId}/users`, {
      method: 'POST',
      body: { email: 'ann@example.test', password: 'a long enough password', scopes: ['cv:read'] },
      headers: { 'X-API-Key': adminKey },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    userStream = `user-${tenantId}_${created.body.id as string}`;
    // The stream as an older service stored it: no salts, each hash over the secret values themselves.
    const events = await server.stores.eventStore.readStream(userStream, { raw: true });
    const db = new Database(join(server.dataDir, 'events.db'));
    const update = db.prepare('UPDATE events SET metadata = ?, hash = ? WHERE position = ?');
    let previousHash = genesisHash;
    for (const event of events) {
      const { salts: _salts, ...metadata } = event.metadata;
      previousHash = eventHash(previousHash, { ...event, metadata });
      update.run(JSON.stringify(metadata), previousHash, event.position);
    }
    db.close();
  });
  after(() => server.close());

  it('shows its secrets redacted and names them, and still verifies, the service and both verifiers alike', async () => {
    expect((await verifyTenant(server.stores.eventStore, tenantId)).broken).to.equal(null);
    const response = await fetch(`${server.url}/v1/tenants/${tenantId}/events`, {
      headers: { 'X-API-Key': adminKey, Accept: 'application/x-ndjson' },
    });
    const lines = (await response.text()).split('\n').filter(Boolean);
    const old = lines
      .map(parsed)
      .find((event) => event.streamName === userStream && event.streamVersion === 0)!;
    expect(old.data.passwordHash).to.equal('[redacted]');
    expect(old.uncommitted).to.deep.equal(['passwordHash']);
    const report = await verdicts(lines);
    expect(report).to.deep.include({ ok: true, uncommitted: 1 });
  });
});
