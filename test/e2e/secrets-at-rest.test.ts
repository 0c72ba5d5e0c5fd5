import { expect } from 'chai';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { tempDir } from '../support/adapters.js';
import { freePort, startTs, stop } from '../support/process.js';
import { request, startTestServer, withTenant } from '../support/server.js';

/** The CLI as an operator runs it: a real process on the same DATA_DIR. */
const cli = async (dataDir: string, ...args: string[]) => {
  const run = startTs('src/cli/main.ts', args, { DATA_DIR: dataDir });
  const code = await run.exited;
  return { code, stdout: run.output.stdout, stderr: run.output.stderr };
};

const strong = (letter: string) => `${letter}-0123456789abcdefghijklmnopqrstuvwxyz`;

describe('secrets at rest and in operator output', function () {
  this.timeout(60_000);

  describe('with a tenant, a user, an API key and a webhook stored', () => {
    let dir: string;
    let remove: () => void;
    let tenantId: string;
    let hashes: string[];

    before(async () => {
      ({ dir, remove } = tempDir());
      const server = await startTestServer(
        { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
        { dataDir: dir },
      );
      try {
        const tenant = await withTenant(server);
        tenantId = tenant.tenantId;
        const admin = { 'X-API-Key': tenant.adminKey };
        const user = await request(`${server.url}/v1/tenants/${tenantId}/users`, {
          method: 'POST',
          body: { email: 'ada@acme.test', password: 'a long enough password', scopes: ['admin'] },
          headers: admin,
        });
        expect(user.status).to.equal(201);
        const hook = await request(`${server.url}/v1/tenants/${tenantId}/webhooks`, {
          method: 'POST',
          body: {
            url: 'http://127.0.0.1:9/hooks',
            events: ['observation.created'],
            secret: 'a-chosen-secret-0123456789',
          },
          headers: admin,
        });
        expect(hook.status).to.equal(201);
        const events = (await server.stores.eventStore.readAll({ filter: { tenantId } })).events;
        hashes = events.flatMap((event) =>
          ['passwordHash', 'secretHash', 'sealedSecret']
            .map((field) => (event.data as Record<string, unknown>)[field])
            .filter((value): value is string => typeof value === 'string'),
        );
        expect(hashes.length).to.be.greaterThan(2);
      } finally {
        await server.close();
      }
    });
    after(() => remove());

    it('audit replay prints no passwordHash, secretHash or sealed secret, as JSON or as states', async () => {
      const outputs = [await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--json')];
      const streams = JSON.parse(`[${outputs[0]!.stdout.replace(/\}\n\{/g, '},{')}]`) as {
        streamName: string;
      }[];
      const named = streams.map((event) => event.streamName).filter((name) => name.includes(`-${tenantId}_`));
      for (const stream of new Set(named)) {
        outputs.push(await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--stream', stream));
        outputs.push(await cli(dir, 'audit', 'replay', '--tenant', tenantId, '--stream', stream, '--json'));
      }
      for (const output of outputs) {
        expect(output.code, output.stderr).to.equal(0);
        for (const hash of hashes) expect(output.stdout).not.to.include(hash);
        expect(output.stdout).not.to.match(/"(passwordHash|secretHash|sealedSecret)": "(?!\[redacted\])/);
        expect(output.stdout).not.to.include('"salts"');
      }
      expect(outputs.map((output) => output.stdout).join('\n')).to.include('[redacted]');
    });

    it('refuses --until with a date that is not in the calendar', async () => {
      const replay = await cli(
        dir,
        'audit',
        'replay',
        '--tenant',
        tenantId,
        '--until',
        '2026-02-30T10:00:00Z',
      );
      expect(replay.code).to.equal(2);
      expect(replay.stderr).to.include('--until');
    });

    it('keeps events.db and readmodels.db readable by their owner alone (0600)', () => {
      for (const name of ['events.db', 'readmodels.db', 'events.db-wal', 'readmodels.db-wal']) {
        const file = join(dir, name);
        if (!existsSync(file) && name.endsWith('-wal')) continue;
        expect(statSync(file).mode & 0o777, name).to.equal(0o600);
      }
    });
  });

  describe('with NODE_ENV=production', () => {
    const production = (overrides: Record<string, string>) => ({
      NODE_ENV: 'production',
      PLATFORM_ADMIN_KEY: strong('p'),
      CURSOR_SECRET: strong('c'),
      WEBHOOK_SECRET_KEY: strong('w'),
      IDEMPOTENCY_SECRET_KEY: strong('i'),
      SIGNING_KEYS_FILE: '/nonexistent/keys.json',
      ...overrides,
    });

    for (const [name, value] of [
      ['CURSOR_SECRET', 'x'],
      ['PLATFORM_ADMIN_KEY', 'short'],
      ['WEBHOOK_SECRET_KEY', 'x'],
      ['CURSOR_SECRET', 'a'.repeat(64)],
    ] as const) {
      it(`stops with exit code 2 naming ${name} when it is ${value.length > 8 ? `${value.length} times "${value[0]}"` : `"${value}"`}`, async () => {
        const { dir, remove } = tempDir();
        const service = startTs('src/main.ts', [], {
          DATA_DIR: dir,
          HOST: '127.0.0.1',
          PORT: String(await freePort()),
          ...production({ [name]: value }),
        });
        try {
          const code = await Promise.race([service.exited, pause(15_000, 'still running')]);
          expect(code, service.output.stderr).to.equal(2);
          expect(service.output.stderr).to.include(name);
          for (const other of ['PLATFORM_ADMIN_KEY', 'CURSOR_SECRET', 'WEBHOOK_SECRET_KEY'].filter(
            (setting) => setting !== name,
          ))
            expect(service.output.stderr).not.to.include(other);
        } finally {
          if (service.child.exitCode === null) await stop(service.child, service.exited, 'SIGKILL');
          remove();
        }
      });
    }
  });
});
