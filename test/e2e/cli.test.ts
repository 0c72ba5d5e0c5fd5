import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { freePort, startTs, stop } from '../support/process.js';
import { request } from '../support/server.js';

const platformKey = 'cli-test-platform-key-0123456789';

const cli = async (dataDir: string, ...args: string[]) => {
  const run = startTs('src/cli/main.ts', args, { DATA_DIR: dataDir });
  const code = await run.exited;
  return { code, stdout: run.output.stdout, stderr: run.output.stderr };
};

// Each test starts real processes, up to six one after the other, each loading the CLI through tsx: about
// 1.5 s of CPU, and 5–10 s with both cores busy. The time-out is theirs, as in the other CLI suites.
describe('the command line', function () {
  this.timeout(120_000);
  let dir: string;
  let remove: () => void;
  beforeEach(() => ({ dir, remove } = tempDir()));
  afterEach(() => remove());

  it('creates a tenant offline whose admin key works against the service, which sees it at once', async () => {
    const port = await freePort();
    const service = startTs('src/main.ts', [], {
      DATA_DIR: dir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PLATFORM_ADMIN_KEY: platformKey,
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      await eventually(async () => (await fetch(`${url}/health`).catch(() => null))?.ok === true, 20_000);
      const created = await cli(
        dir,
        'tenant',
        'create',
        '--name',
        'acme',
        '--email',
        'ops@acme.test',
        '--json',
      );
      expect(created.code, created.stderr).to.equal(0);
      const tenant = JSON.parse(created.stdout) as { id: string; adminApiKey: string; name: string };
      expect(tenant.name).to.equal('acme');

      const read = await request(`${url}/v1/tenants/${tenant.id}`, {
        headers: { 'X-API-Key': tenant.adminApiKey },
      });
      expect(read.status).to.equal(200);
      // The service's projection is woken by the other process's write, with no request of its own.
      await eventually(async () => {
        const list = await request(`${url}/v1/tenants`, { headers: { 'X-API-Key': platformKey } });
        return list.body.data.some((t: { id: string }) => t.id === tenant.id);
      }, 3000);
    } finally {
      await stop(service.child, service.exited);
    }
  });

  it('lists tenants created earlier', async () => {
    await cli(dir, 'tenant', 'create', '--name', 'one', '--email', 'ops@one.test');
    const listed = await cli(dir, 'tenant', 'list');
    expect(listed.code).to.equal(0);
    // A header, then the columns aligned under it.
    const [header, row] = listed.stdout.trimEnd().split('\n');
    expect(header).to.match(/^id +name +created +notification e-mail$/);
    expect(row).to.match(/^t_[0-9a-z]+ +one +\d{4}-\d\d-\d\dT[\d:.]+Z {2}ops@one\.test$/);
    expect(row!.indexOf(' one ') + 1).to.equal(header!.indexOf('name'));
    expect(row!.indexOf(' 20') + 1).to.equal(header!.indexOf('created'));
    expect(row!.indexOf('ops@')).to.equal(header!.indexOf('notification'));
  });

  it('refuses bad input and unknown commands with exit code 2', async () => {
    const bad = await cli(dir, 'tenant', 'create', '--name', 'acme', '--email', 'not-an-address');
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/--email: must be an e-mail address/);
    const unknown = await cli(dir, 'tenant', 'explode');
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.match(/^obs: unknown command "tenant explode"\n/);
    // The group's commands, as its --help lists them.
    expect(unknown.stderr).to.match(/obs tenant create --name/);
    expect(unknown.stdout).to.equal('');
    const nothing = await cli(dir, 'nonsense', '--json');
    expect(nothing.code).to.equal(2);
    expect(nothing.stderr).to.match(/^obs: unknown command "nonsense"\n/);
    expect(nothing.stderr).to.match(/Commands:\n {2}tenant create/);
  });

  it('shows help for every command and every group of commands, with exit code 0', async function () {
    this.timeout(120_000);
    const commands = [
      'tenant create',
      'tenant list',
      'keys list',
      'keys rotate',
      'keys retire',
      'secrets record',
      'audit verify',
      'audit replay',
      'audit digest',
      'projections rebuild',
      'projections status',
      'projections parked retry',
      'projections parked skip',
      'projections build',
      'projections drop',
      'export',
    ];
    const groups = ['tenant', 'keys', 'audit', 'projections', 'projections parked'];
    // Four at a time: each is a process of its own.
    const asked = [
      ...commands.map((c) => [...c.split(' '), '--help']),
      ...groups.map((g) => [...g.split(' '), '--help']),
      ['help', 'projections', 'build'],
      ['help'],
      ['--help'],
    ];
    const answers: Awaited<ReturnType<typeof cli>>[] = [];
    for (let i = 0; i < asked.length; i += 4) {
      answers.push(...(await Promise.all(asked.slice(i, i + 4).map((args) => cli(dir, ...args)))));
    }
    for (const [n, args] of asked.entries()) {
      const { code, stdout, stderr } = answers[n]!;
      const words = args.filter((a) => a !== '--help' && a !== 'help').join(' ');
      expect(code, args.join(' ')).to.equal(0);
      expect(stderr, args.join(' ')).to.equal('');
      const expected = commands.includes(words)
        ? `Usage: obs ${words}`
        : groups.includes(words)
          ? `Usage: obs ${words} <command>`
          : 'Usage: obs <command>';
      expect(stdout, args.join(' ')).to.match(new RegExp(`^${expected.replace(/[[\]]/g, '\\$&')}`));
    }
    // A group's help is its commands' help.
    const parked = answers[asked.findIndex((a) => a.join(' ') === 'projections parked --help')]!.stdout;
    expect(parked).to.include('obs projections parked retry <name>');
    expect(parked).to.include('obs projections parked skip <name> --position <n>');
    // Help reads nothing: no DATA_DIR was created for it.
    expect(existsSync(join(dir, 'events.db'))).to.equal(false);
    // A group alone is a usage mistake: exit code 2, with the group's commands.
    const bare = await cli(dir, 'projections');
    expect(bare.code).to.equal(2);
    expect(bare.stderr).to.match(/^obs: "projections" needs one of its commands\n/);
    expect(bare.stderr).to.include('obs projections status');
  });

  it('rotates and retires signing keys', async () => {
    const first = JSON.parse((await cli(dir, 'keys', 'rotate', '--json')).stdout) as { kid: string };
    const second = JSON.parse((await cli(dir, 'keys', 'rotate', '--json')).stdout) as { kid: string };
    expect((await cli(dir, 'keys', 'retire', first.kid)).code).to.equal(0);
    const keys = JSON.parse((await cli(dir, 'keys', 'list', '--json')).stdout) as {
      kid: string;
      retiredAt: string | null;
    }[];
    expect(keys.map((k) => [k.kid, k.retiredAt !== null])).to.deep.equal([
      [first.kid, true],
      [second.kid, false],
    ]);
    const only = await cli(dir, 'keys', 'retire', second.kid);
    expect(only.code).to.equal(2);
    expect(only.stderr).to.match(/only active key: rotate first/);
    // The newest active key signs: marked as such, in the table and in JSON.
    const third = JSON.parse((await cli(dir, 'keys', 'rotate', '--json')).stdout) as { kid: string };
    const listed = await cli(dir, 'keys', 'list');
    expect(listed.stderr).to.equal(`obs: keys ${join(dir, 'signing-keys.json')}\n`);
    // A header; kids are 19 characters, times 24: each column starts where its header does.
    expect(listed.stdout.split('\n')[0]).to.equal(
      `kid${' '.repeat(first.kid.length - 3)}  created${' '.repeat(24 - 7)}  status`,
    );
    const rows = listed.stdout.trimEnd().split('\n').slice(1);
    expect(rows[0]).to.match(new RegExp(`^${first.kid}  \\S+Z  retired \\S+Z$`));
    expect(rows[1]).to.match(new RegExp(`^${second.kid}  \\S+Z  verifying$`));
    expect(rows[2]).to.match(new RegExp(`^${third.kid}  \\S+Z  signing \\(newest active\\)$`));
    const marked = JSON.parse((await cli(dir, 'keys', 'list', '--json')).stdout) as { signing: boolean }[];
    expect(marked.map((k) => k.signing)).to.deep.equal([false, false, true]);
  });
});
