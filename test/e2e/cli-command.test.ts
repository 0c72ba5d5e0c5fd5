import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { startTs } from '../support/process.js';
import { request, startTestServer, withTenant } from '../support/server.js';

const root = new URL('../..', import.meta.url).pathname;

/** A shell line as a reader of the docs types it, in the checkout's root. */
const shell = (line: string, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('sh', ['-c', line], { cwd: root, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });

const cli = async (env: Record<string, string>, ...args: string[]) => {
  const run = startTs('src/cli/main.ts', args, env);
  const code = await run.exited;
  return { code, stdout: run.output.stdout, stderr: run.output.stderr };
};

/** The lines of our own stderr, without npm's warnings about the machine's npm configuration. */
const ours = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('npm warn'))
    .join('\n');

const hasJq = () => existsSync('/usr/bin/jq') || existsSync('/usr/local/bin/jq');

describe('obs as a command (npx --no obs in a checkout)', function () {
  this.timeout(120_000);
  let dir: string;
  let remove: () => void;
  let tenantId: string;

  before(async () => {
    ({ dir, remove } = tempDir());
    const server = await startTestServer({}, { dataDir: dir });
    try {
      const owner = await withTenant(server);
      tenantId = owner.tenantId;
      for (const species of ['fox', 'badger', 'fox']) {
        const created = await request(`${server.url}/v1/tenants/${tenantId}/observations`, {
          method: 'POST',
          body: { observedAt: '2026-05-01T09:30:00Z', attributes: { species } },
          headers: { 'X-API-Key': owner.adminKey },
        });
        expect(created.status).to.equal(201);
      }
      const head = await server.stores.eventStore.headPosition();
      for (const runner of server.service.runners) expect(await runner.waitFor(head, 10_000)).to.equal(true);
    } finally {
      await server.close();
    }
  });
  after(() => remove());

  it('puts nothing but the export into the file: the store and the summary go to stderr', async () => {
    const file = join(dir, 'observations.csv');
    const run = await shell(`npx --no obs export observations --format csv > "${file}"`, { DATA_DIR: dir });
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.equal('');
    expect(ours(run.stderr)).to.equal(`obs: store sqlite:${dir}\nexported 3 observations`);
    const rows = readFileSync(file, 'utf8').split('\r\n');
    expect(rows[0]).to.equal(
      'id,tenantId,observedAt,position,locationId,visitId,notes,attributes,media,createdAt,updatedAt,version',
    );
    expect(rows.slice(1, -1)).to.have.length(3);
    expect(rows.at(-1)).to.equal('');
  });

  it('runs the jq example of docs/analysts.md as written, with `npx --no obs` for `obs`', async () => {
    const line = readFileSync(join(root, 'docs/analysts.md'), 'utf8')
      .split('\n')
      .find((text) => text.startsWith('obs export observations --format ndjson | jq'));
    expect(line, 'the jq line of analysts.md').to.be.a('string');
    const documented = `npx --no ${line!}`;
    if (!hasJq()) {
      console.log('      (jq is not installed: the pipeline is checked without it)');
      const ndjson = await shell(documented.replace(/ \| jq.*$/, ''), { DATA_DIR: dir });
      const species = ndjson.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { attributes: { species: string } }).attributes.species);
      expect(species.sort()).to.deep.equal(['badger', 'fox', 'fox']);
      return;
    }
    const run = await shell(documented, { DATA_DIR: dir });
    expect(run.code, run.stderr).to.equal(0);
    expect(
      run.stdout
        .trimEnd()
        .split('\n')
        .map((line) => line.trim()),
    ).to.deep.equal(['1 badger', '2 fox']);
  });

  it('prints JSON alone on stdout with --json, through npx', async () => {
    const run = await shell('npx --no obs tenant list --json', { DATA_DIR: dir });
    expect(run.code, run.stderr).to.equal(0);
    expect((JSON.parse(run.stdout) as { id: string }[]).map((t) => t.id)).to.deep.equal([tenantId]);
  });

  it('shows the overview with `npx --no obs help` (npx keeps a --help next to the name for itself)', async () => {
    const run = await shell('npx --no obs help', { DATA_DIR: dir });
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^Usage: obs <command> \[options\]/);
  });

  it('names the stores it uses on stderr, servers without their credentials', async () => {
    const embedded = await cli({ DATA_DIR: dir }, 'projections', 'status');
    expect(embedded.code, embedded.stderr).to.equal(0);
    expect(embedded.stderr).to.equal(`obs: store sqlite:${dir}\n`);
    // Nothing listens on port 1: the line comes before the store is opened, and fails after it.
    const postgres = await cli(
      { DATA_DIR: dir, DATABASE_URL: 'postgres://alice:s3cret@127.0.0.1:1/obs' },
      'tenant',
      'list',
    );
    expect(postgres.code).to.equal(1);
    expect(postgres.stderr).to.match(/^obs: store postgres:\/\/127\.0\.0\.1:1\/obs\nerror: /);
    const split = await cli(
      {
        DATA_DIR: dir,
        EVENTSTORE_URL: 'esdb://bob:pw1@127.0.0.1:1?tls=false',
        MONGODB_URL: 'mongodb://carol:pw2@127.0.0.1:1/obs?serverSelectionTimeoutMS=500',
      },
      'tenant',
      'list',
    );
    expect(split.code).to.equal(1);
    expect(split.stderr.split('\n')[0]).to.equal(
      'obs: store esdb://127.0.0.1:1?tls=false (events), mongodb://127.0.0.1:1/obs?serverSelectionTimeoutMS=500 (read models, blobs)',
    );
    expect(postgres.stderr + split.stderr).to.not.match(/alice|bob|carol|s3cret|pw1|pw2/);
  });

  it('refuses a DATA_DIR that does not exist (exit 2) unless --create starts one', async () => {
    const missing = join(dir, 'typo');
    for (const args of [
      ['tenant', 'list'],
      ['keys', 'list'],
      ['projections', 'status'],
    ]) {
      const refused = await cli({ DATA_DIR: missing }, ...args);
      expect(refused.code, args.join(' ')).to.equal(2);
      expect(refused.stderr, args.join(' ')).to.match(
        new RegExp(`^error: DATA_DIR ${missing} does not exist; .*--create`),
      );
      expect(existsSync(missing), args.join(' ')).to.equal(false);
    }
    const created = await cli(
      { DATA_DIR: missing },
      'tenant',
      'create',
      '--name',
      'fresh',
      '--email',
      'ops@fresh.test',
      '--create',
    );
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stderr).to.equal(`obs: store sqlite:${missing}\n`);
    expect(existsSync(join(missing, 'events.db'))).to.equal(true);
    expect((await cli({ DATA_DIR: missing }, 'tenant', 'list')).stdout).to.match(/ fresh /);
  });
});
