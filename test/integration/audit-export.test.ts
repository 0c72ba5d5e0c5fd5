import { expect } from 'chai';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyHistory, type ExportedEvent, type HistoryReport } from '../../client/src/index.js';
import { verifyTenant } from '../../src/audit/verify.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import { cvTenant } from '../support/cv.js';
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
}

const scratch = mkdtempSync(join(tmpdir(), 'audit-export-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const fileOf = (lines: readonly string[]): string => {
  const file = join(scratch, `history-${Math.random().toString(36).slice(2)}.ndjson`);
  writeFileSync(file, lines.map((line) => `${line}\n`).join(''));
  return file;
};

const verifyInPython = (lines: readonly string[]): PythonReport => {
  const run = spawnSync('python3', [pythonVerifier, fileOf(lines)], { encoding: 'utf8' });
  expect(run.status, run.stderr).to.be.oneOf([0, 1]);
  return JSON.parse(run.stdout) as PythonReport;
};

/** Both verifiers' verdicts, which must agree: the same verdict, and the same first broken link. */
const verdicts = async (lines: readonly string[]) => {
  const typescript = await verifyHistory(lines);
  const python = verifyInPython(lines);
  expect(python.ok, 'the Python verifier agrees').to.equal(typescript.ok);
  const at = (broken?: { streamName: string; streamVersion: number }) =>
    broken && { streamName: broken.streamName, streamVersion: broken.streamVersion };
  expect(at(python.broken), 'the same first broken link').to.deep.equal(at(typescript.broken));
  return typescript;
};

const parsed = (line: string) => JSON.parse(line) as ExportedEvent & { data: Record<string, unknown> };

const exportSuite = (env: () => Record<string, string>) => {
  let server: TestServer;
  let tenantId: string;
  let lines: string[];
  let headers: Headers;

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

  it('cannot see the last event of a stream dropped: only a digest shows that (part B)', async () => {
    const report = await verdicts(without(lineOf('CvJobCompleted')));
    expect(report).to.deep.include({ ok: true, events: lines.length - 1 });
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
