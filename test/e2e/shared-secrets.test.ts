import { expect } from 'chai';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { rotateKeys } from '../../src/auth/signing-keys.js';
import { tempDir } from '../support/adapters.js';
import { createTestDatabase, describePostgres } from '../support/postgres.js';
import { freePort, startTs, stop } from '../support/process.js';
import { bearer, clientToken } from '../support/auth.js';
import { request, type TestServer } from '../support/server.js';
import { createTenant, platformKey, startServiceProcess } from '../support/service-process.js';

const pause = (ms: number) =>
  new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms));

/** The service started as `npm start` does, expected to refuse to start: its exit code and stderr. */
const refusedStart = async (env: Record<string, string>) => {
  const service = startTs('src/main.ts', [], {
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    PLATFORM_ADMIN_KEY: platformKey,
    ...env,
  });
  const code = await Promise.race([service.exited, pause(30_000)]);
  if (service.child.exitCode === null) await stop(service.child, service.exited, 'SIGKILL');
  return { code, stderr: service.output.stderr, stdout: service.output.stdout };
};

const configurationErrors = (stderr: string) =>
  stderr.split('\n').filter((line) => line.startsWith('configuration error: '));

describePostgres('two processes on one DATABASE_URL with their own DATA_DIRs', () => {
  it('the second one exits 2 naming each generated secret that differs, and starts once it has the first one’s files', async function () {
    this.timeout(120_000);
    const databaseUrl = createTestDatabase();
    const first = tempDir();
    const second = tempDir();
    // Both serve the API, at the one address clients use (a process with another one would exit 2 too).
    const env = { DATABASE_URL: databaseUrl, PUBLIC_URL: 'https://obs.example.test' };
    const service = await startServiceProcess(first.dir, env);
    try {
      const started = Date.now();
      const refused = await refusedStart({ DATA_DIR: second.dir, ...env });
      console.log(`      the second process exited ${refused.code} after ${Date.now() - started} ms`);
      expect(refused.code, refused.stderr).to.equal(2);
      const lines = configurationErrors(refused.stderr);
      expect(lines, refused.stderr).to.have.length(1);
      for (const name of ['CURSOR_SECRET', 'WEBHOOK_SECRET_KEY', 'IDEMPOTENCY_SECRET_KEY']) {
        expect(lines[0]).to.include(
          `${name} was generated into this DATA_DIR/secrets.json and differs from the one of the first process`,
        );
      }
      expect(lines[0]).to.include(`DATA_DIR ${first.dir}`);
      expect(lines[0]).to.include('copy its DATA_DIR/secrets.json here');
      expect(lines[0]).to.include('copy its DATA_DIR/signing-keys.json here');
      // The platform key and PUBLIC_URL were given, the same to both: they agree.
      expect(lines[0]).not.to.include('PLATFORM_ADMIN_KEY');
      expect(lines[0]).not.to.include('PUBLIC_URL');

      // What the message says to do: copy the first process's files.
      for (const file of ['secrets.json', 'signing-keys.json'])
        copyFileSync(join(first.dir, file), join(second.dir, file));
      const again = await startServiceProcess(second.dir, env);
      await stop(again.child, again.exited);
    } finally {
      await stop(service.child, service.exited);
      first.remove();
      second.remove();
    }
  });
});

describe('processes on one DATA_DIR (SQLite) with different secrets', function () {
  this.timeout(120_000);

  it('refuses a second WEBHOOK_SECRET_KEY and a keyring that shares no key, accepts a rotated keyring and a secret recorded by `obs secrets record`', async () => {
    const { dir, remove } = tempDir();
    const keys = tempDir();
    const keyring = join(keys.dir, 'signing-keys.json');
    rotateKeys(keyring);
    const other = join(keys.dir, 'other-keys.json');
    rotateKeys(other);
    const env = {
      WEBHOOK_SECRET_KEY: 'the-first-webhook-secret-key-0123456789',
      SIGNING_KEYS_FILE: keyring,
    };
    try {
      const service = await startServiceProcess(dir, env);
      await stop(service.child, service.exited);

      const secret = await refusedStart({
        ...env,
        DATA_DIR: dir,
        WEBHOOK_SECRET_KEY: 'another-webhook-secret-key-0123456789',
      });
      expect(secret.code, secret.stderr).to.equal(2);
      expect(configurationErrors(secret.stderr)).to.have.length(1);
      expect(secret.stderr).to.include('WEBHOOK_SECRET_KEY is not the one of the first process (host ');
      expect(secret.stderr).to.include('set it to the same value in every process');
      expect(secret.stderr).not.to.include('another-webhook-secret-key');

      const keyringRefused = await refusedStart({ ...env, DATA_DIR: dir, SIGNING_KEYS_FILE: other });
      expect(keyringRefused.code, keyringRefused.stderr).to.equal(2);
      expect(keyringRefused.stderr).to.include(
        'SIGNING_KEYS_FILE shares no key with the keyring of the first process',
      );

      // A rotation keeps the old key beside the new one: accepted, and the record follows it.
      rotateKeys(keyring);
      const rotated = await startServiceProcess(dir, env);
      await stop(rotated.child, rotated.exited);
      expect(rotated.output.stdout).to.match(/"updated":\[[^\]]*"SIGNING_KEYS_FILE"/);

      // A secret changed on purpose: recorded by the operator, then every process starts with it.
      const changed = { ...env, WEBHOOK_SECRET_KEY: 'the-second-webhook-secret-key-0123456789' };
      const record = startTs('src/cli/main.ts', ['secrets', 'record'], {
        ...changed,
        DATA_DIR: dir,
        PLATFORM_ADMIN_KEY: platformKey,
      });
      expect(await record.exited, record.output.stderr).to.equal(0);
      const [recorded, left] = record.output.stdout.trim().split('\n');
      expect(recorded).to.equal('Recorded WEBHOOK_SECRET_KEY');
      expect(left).to.match(
        /^Left as recorded \(not set\): CV_REMOTE_MODELS, TOKEN_AUDIENCE, WEBHOOK_ALLOW_HTTP,/,
      );
      const restarted = await startServiceProcess(dir, changed);
      await stop(restarted.child, restarted.exited);
    } finally {
      remove();
      keys.remove();
    }
  });

  it('refuses other remote CV models, accepts the same ones at another url, and other ones recorded by `obs secrets record`', async () => {
    const { dir, remove } = tempDir();
    const birds = { name: 'birds', url: 'http://127.0.0.1:9/v2', timeout: '5s' };
    const models = (list: object[]) => ({ CV_REMOTE_MODELS: JSON.stringify(list) });
    try {
      const first = await startServiceProcess(dir, models([birds]));
      await stop(first.child, first.exited);

      // Without the model, this process's API would refuse birds jobs, and as a worker it would fail
      // the jobs the first one accepted with model_unknown.
      const without = await refusedStart({ DATA_DIR: dir });
      expect(without.code, without.stderr).to.equal(2);
      expect(configurationErrors(without.stderr)).to.have.length(1);
      expect(without.stderr).to.include(
        'CV_REMOTE_MODELS (or CV_MODELS_FILE) does not describe the same models as that of the first process (host ',
      );
      const renamed = await refusedStart({ DATA_DIR: dir, ...models([{ ...birds, remoteName: 'gulls' }]) });
      expect(renamed.code, renamed.stderr).to.equal(2);

      // An inference server beside each worker: the url and the time-out may differ.
      const elsewhere = await startServiceProcess(
        dir,
        models([{ ...birds, url: 'http://127.0.0.1:10/v2', timeout: '30s' }]),
      );
      await stop(elsewhere.child, elsewhere.exited);

      // `obs secrets record` run for a secret, in an environment without the models, leaves them alone.
      const record = (env: Record<string, string>) =>
        startTs('src/cli/main.ts', ['secrets', 'record'], {
          DATA_DIR: dir,
          PLATFORM_ADMIN_KEY: platformKey,
          ...env,
        });
      const unset = record({});
      expect(await unset.exited, unset.output.stderr).to.equal(0);
      expect(unset.output.stdout).to.include('Left as recorded (not set): CV_REMOTE_MODELS, TOKEN_AUDIENCE');
      expect(unset.output.stdout).to.include('Every fingerprint was already recorded');
      expect((await refusedStart({ DATA_DIR: dir })).code).to.equal(2);

      // The model retired on purpose: an empty list recorded, then every process starts without it.
      const retired = record({ CV_REMOTE_MODELS: '[]' });
      expect(await retired.exited, retired.output.stderr).to.equal(0);
      expect(retired.output.stdout.trim().split('\n')[0]).to.equal('Recorded CV_REMOTE_MODELS');
      const restarted = await startServiceProcess(dir, {});
      await stop(restarted.child, restarted.exited);
    } finally {
      remove();
    }
  });

  it('refuses a second API process whose PUBLIC_URL differs while the first runs, so a token never works on one and not the other', async () => {
    const { dir, remove } = tempDir();
    const running: Awaited<ReturnType<typeof startServiceProcess>>[] = [];
    try {
      // As docs/operations.md lays processes out on one machine: ROLE=api on their own ports.
      const first = await startServiceProcess(dir, { ROLE: 'api' });
      running.push(first);
      const refused = await refusedStart({ DATA_DIR: dir, ROLE: 'api' });
      expect(refused.code, refused.stderr).to.equal(2);
      expect(configurationErrors(refused.stderr)).to.have.length(1);
      expect(refused.stderr).to.include(
        `PUBLIC_URL is not set, so it is this process's own address, http://127.0.0.1:`,
      );
      expect(refused.stderr).to.include(`but it is ${first.url} in a process that runs (host `);

      // The audience of the tokens must agree as well.
      const audience = await refusedStart({
        DATA_DIR: dir,
        ROLE: 'api',
        PUBLIC_URL: first.url,
        TOKEN_AUDIENCE: 'another-audience',
      });
      expect(audience.code, audience.stderr).to.equal(2);
      expect(audience.stderr).to.include(
        'TOKEN_AUDIENCE is another-audience here but observation-service in the first process (host ',
      );

      // What the message says: the one address clients use, in every process that serves the API. A
      // worker serves no token, and needs none.
      const second = await startServiceProcess(dir, { ROLE: 'api', PUBLIC_URL: first.url });
      running.push(second);
      // A worker delivers what the APIs accept: it must allow the same receivers.
      const worker = await refusedStart({ DATA_DIR: dir, ROLE: 'worker', WEBHOOK_ALLOW_HTTP: 'true' });
      expect(worker.code, worker.stderr).to.equal(2);
      expect(worker.stderr).to.include(
        'WEBHOOK_ALLOW_HTTP is true here but false in the first process (host ',
      );
      expect(worker.stderr).to.include('a subscription one accepts is one the other refuses to deliver to');
      running.push(await startServiceProcess(dir, { ROLE: 'worker' }));
      const tenant = await createTenant(first.url, 'issuer');
      const { accessToken } = await clientToken(
        first as unknown as TestServer,
        { tenantId: tenant.tenantId, adminKey: tenant.headers['X-API-Key'] },
        ['observations:read'],
      );
      for (const api of [first, second]) {
        const list = await request(`${api.url}/v1/tenants/${tenant.tenantId}/observations`, {
          headers: bearer(accessToken),
        });
        expect(list.status, `${api.url}: ${JSON.stringify(list.body)}`).to.equal(200);
      }

      // Once they have stopped, a process with another address may start at once: the record was theirs.
      while (running.length > 0) {
        const service = running.pop()!;
        await stop(service.child, service.exited);
      }
      running.push(await startServiceProcess(dir, { ROLE: 'api' }));
    } finally {
      for (const service of running) await stop(service.child, service.exited);
      remove();
    }
  });
});
