import { expect } from 'chai';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { startTs } from '../support/process.js';
import { request, startTestServer, withTenant } from '../support/server.js';

/** The CLI as an operator runs it: a real process on the same DATA_DIR. */
const cli = async (dataDir: string, ...args: string[]) => {
  const run = startTs('src/cli/main.ts', args, { DATA_DIR: dataDir });
  const code = await run.exited;
  return { code, stdout: run.output.stdout, stderr: run.output.stderr };
};

describe('auditing a tenant from the command line', () => {
  let dir: string;
  let remove: () => void;
  let tenantId: string;
  let observations: string[];

  beforeEach(async () => {
    ({ dir, remove } = tempDir());
    const server = await startTestServer({}, { dataDir: dir });
    try {
      const owner = await withTenant(server);
      tenantId = owner.tenantId;
      observations = [];
      for (const notes of ['first', 'second']) {
        const created = await request(`${server.url}/v1/tenants/${tenantId}/observations`, {
          method: 'POST',
          body: { observedAt: '2026-05-01T09:30:00Z', notes },
          headers: { 'X-API-Key': owner.adminKey },
        });
        observations.push(created.body.id as string);
        await request(`${server.url}/v1/tenants/${tenantId}/observations/${created.body.id}`, {
          method: 'PATCH',
          body: { notes: `${notes}, revised` },
          headers: { 'X-API-Key': owner.adminKey },
        });
      }
    } finally {
      await server.close();
    }
  });
  afterEach(() => remove());

  /** Runs SQL on the stored events, as an attacker with the file would. */
  const tamper = (sql: string, ...params: unknown[]) => {
    const db = new Database(join(dir, 'events.db'));
    db.prepare(sql).run(...params);
    db.close();
  };
  const stream = (index: number) => `observation-${tenantId}_${observations[index]}`;

  it('verifies an untouched history, digests included', async () => {
    const digest = await cli(dir, 'audit', 'digest', '--tenant', tenantId, '--json');
    expect(digest.code, digest.stderr).to.equal(0);
    expect(JSON.parse(digest.stdout).streams).to.be.greaterThan(2);
    const verified = await cli(dir, 'audit', 'verify', '--tenant', tenantId, '--json');
    expect(verified.code, verified.stderr).to.equal(0);
    const report = JSON.parse(verified.stdout);
    expect(report).to.deep.include({ tenantId, broken: null, digests: 1 });
    expect(report.events).to.be.greaterThan(5);
  });

  it('fails when an event’s data was edited in the SQLite file, naming the stream, version and position', async () => {
    tamper(
      `UPDATE events SET data = json_set(data, '$.notes', 'forged') WHERE stream_name = ? AND stream_version = 0`,
      stream(0),
    );
    const verified = await cli(dir, 'audit', 'verify', '--tenant', tenantId);
    expect(verified.code).to.equal(1);
    expect(verified.stdout).to.match(
      new RegExp(`BROKEN .*stream ${stream(0)}, version 0, position \\d+: the event does not match its hash`),
    );
  });

  it('fails when an event was deleted from the middle of a stream', async () => {
    tamper('DELETE FROM events WHERE stream_name = ? AND stream_version = 0', stream(1));
    const verified = await cli(dir, 'audit', 'verify', '--tenant', tenantId, '--json');
    expect(verified.code).to.equal(1);
    expect(JSON.parse(verified.stdout).broken).to.deep.include({
      streamName: stream(1),
      version: 0,
      reason: 'version 0 is missing: the next stored event is version 1',
    });
  });

  it('fails when the last event of a stream was deleted after a digest committed to it', async () => {
    expect((await cli(dir, 'audit', 'digest', '--tenant', tenantId)).code).to.equal(0);
    tamper('DELETE FROM events WHERE stream_name = ? AND stream_version = 1', stream(1));
    const verified = await cli(dir, 'audit', 'verify', '--tenant', tenantId, '--json');
    expect(verified.code).to.equal(1);
    expect(JSON.parse(verified.stdout).broken.reason).to.match(/digest .* does not match the history/);
  });

  it('says so when the tenant does not exist, or when the id is not a tenant id, with exit code 2', async () => {
    const verified = await cli(dir, 'audit', 'verify', '--tenant', 't_nobody');
    expect(verified.code).to.equal(2);
    expect(verified.stderr).to.match(/Tenant t_nobody does not exist/);
    const nonsense = await cli(dir, 'audit', 'verify', '--tenant', 'nonsense');
    expect(nonsense.code).to.equal(2);
    expect(nonsense.stderr).to.match(/--tenant nonsense is not a tenant id: t_ then lower-case letters/);
    const missing = await cli(dir, 'audit', 'verify');
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.match(/--tenant <id> is required/);
  });

  it('refuses a stream that does not exist, rather than replaying it as an absent aggregate', async () => {
    const typo = `${stream(0)}x`;
    const replayed = await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--stream', typo);
    expect(replayed.code).to.equal(2);
    expect(replayed.stderr).to.include(`Stream ${typo} does not exist`);
    expect(replayed.stdout).to.equal('');
  });

  it('replays the history, and an aggregate’s state as it was at a point, with the command handlers’ fold', async () => {
    const [header, ...lines] = (await cli(dir, 'audit', 'replay', '--tenant', tenantId)).stdout
      .trim()
      .split('\n');
    expect(header).to.match(/^position +occurred +type +actor +stream@version$/);
    const updated = lines.find((line) => line.endsWith(`${stream(0)}@1`));
    expect(updated).to.match(/ ObservationUpdated +\S+ +observation-/);
    // Aligned: each column starts where its header does.
    expect(updated!.indexOf('ObservationUpdated')).to.equal(header!.indexOf('type'));
    expect(updated!.indexOf(stream(0))).to.equal(header!.indexOf('stream@version'));
    const positions = lines.map((line) => Number(line.split(' ')[0]));
    expect(positions).to.deep.equal([...positions].sort((a, b) => a - b));

    const firstVersion = lines.find((line) => line.includes(`${stream(0)}@0`))!.split(' ')[0]!;
    const replayed = await cli(
      dir,
      'audit',
      'replay',
      '--tenant',
      tenantId,
      '--stream',
      stream(0),
      '--until',
      firstVersion,
      '--json',
    );
    expect(replayed.code, replayed.stderr).to.equal(0);
    const { version, state } = JSON.parse(replayed.stdout);
    expect(version).to.equal(0);
    expect(state.observation).to.deep.include({ notes: 'first', version: 0 });
    const now = await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--stream', stream(0), '--json');
    expect(JSON.parse(now.stdout).state.observation.notes).to.equal('first, revised');
  });

  it('refuses an --until in the future or unparsable with exit code 2', async () => {
    const future = await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--until', '2999-01-01T00:00:00Z');
    expect(future.code).to.equal(2);
    expect(future.stderr).to.match(/in the future/);
    const garbage = await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--until', 'yesterday');
    expect(garbage.code).to.equal(2);
    expect(garbage.stderr).to.match(/neither a position nor an ISO 8601 time/);
    // A negative number is not taken for an option: our own message, not parseArgs' (nor a stack trace).
    for (const until of [['--until', '-3'], ['--until=-3']]) {
      const negative = await cli(dir, 'audit', 'replay', '--tenant', tenantId, ...until);
      expect(negative.code, until.join(' ')).to.equal(2);
      expect(negative.stderr).to.match(/^error: --until -3 is neither a position nor an ISO 8601 time/m);
      expect(negative.stderr).to.not.match(/ambiguous|\n {4}at /);
    }
  });

  it('refuses options a command does not take, pointing at its help', async () => {
    const run = await cli(dir, 'audit', 'verify', '--tenant', tenantId, '--stream', 'x');
    expect(run.code).to.equal(2);
    expect(run.stderr).to.equal('error: Unknown option --stream\nSee "obs audit verify --help".\n');
    const valueless = await cli(dir, 'audit', 'verify', '--tenant');
    expect(valueless.code).to.equal(2);
    expect(valueless.stderr).to.match(/^error: --tenant needs a value\n/);
  });
});
