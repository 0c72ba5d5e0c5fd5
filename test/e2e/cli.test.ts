import { expect } from 'chai';
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

describe('the command line', () => {
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
    expect(listed.stdout).to.match(/^t_[0-9a-z]+ {2}one {2}ops@one\.test$/m);
  });

  it('refuses bad input and unknown commands with exit code 2', async () => {
    const bad = await cli(dir, 'tenant', 'create', '--name', 'acme', '--email', 'not-an-address');
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/--email: must be an e-mail address/);
    const unknown = await cli(dir, 'tenant', 'explode');
    expect(unknown.code).to.equal(2);
    expect(unknown.stdout).to.match(/Usage: obs /);
  });

  it('shows help for every command', async () => {
    for (const command of [
      ['tenant', 'create'],
      ['tenant', 'list'],
      ['keys', 'list'],
      ['keys', 'rotate'],
      ['keys', 'retire'],
    ]) {
      const help = await cli(dir, ...command, '--help');
      expect(help.code).to.equal(0);
      expect(help.stdout).to.include(`Usage: obs ${command.join(' ')}`);
    }
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
    expect(only.code).to.equal(1);
    expect(only.stderr).to.match(/only active key/);
  });
});
