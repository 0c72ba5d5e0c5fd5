import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/adapters.js';
import { request, startTestServer } from '../support/server.js';

/**
 * The README's "Command line" examples, run as written, in order, on a store with a tenant and an
 * observation: each placeholder replaced by a real value (the tenant's id, the observation's, a signing key
 * that is not the current one, a position), each optional part left out, and each command must exit 0.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

const examples = (): string[] => {
  const section = readme.slice(readme.indexOf('## Command line'), readme.indexOf('## Configuration'));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .flatMap((match) => match[1]!.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('obs '));
};

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

const shell = (line: string, cwd: string, env: Record<string, string>) =>
  new Promise<Ran>((resolve) => {
    execFile('bash', ['-c', line], { cwd, env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });

describe('the README’s command-line examples', function () {
  this.timeout(180_000);

  it('lists the examples this test runs', () => {
    expect(examples().length).to.be.at.least(14);
  });

  it('all run as written, with real ids, and exit 0', async () => {
    const { dir, remove } = tempDir();
    try {
      const dataDir = join(dir, 'data');
      const env = { DATA_DIR: dataDir, PATH: `${join(dir, 'bin')}:${process.env.PATH}` };
      // `obs` on PATH, as in the image: the checkout's bin.
      await shell(`mkdir -p bin && ln -s ${join(root, 'bin', 'obs.js')} bin/obs`, dir, {});
      // A tenant with an observation, made through the API on the same store.
      const server = await startTestServer({}, { dataDir });
      const tenant = await request(`${server.url}/v1/tenants`, {
        method: 'POST',
        body: { name: 'Acme', notificationEmail: 'ops@acme.test' },
        headers: { 'X-API-Key': server.platformAdminKey },
      });
      const observation = await request(`${server.url}/v1/tenants/${tenant.body.id}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'a fox' },
        headers: { 'X-API-Key': tenant.body.adminApiKey },
      });
      const position = observation.headers.get('x-position')!;
      await server.close();

      for (const example of examples()) {
        let line = example
          .replace(/ \[[^\]]*\]/g, '') // optional parts left out
          .replaceAll('<tenantId>', tenant.body.id)
          .replaceAll('<id>', tenant.body.id)
          .replaceAll('<observationId>', observation.body.id)
          .replace('--until 1042', `--until ${position}`);
        if (line.includes('<kid>')) {
          const keys = JSON.parse((await shell('obs keys list --json', dir, env)).stdout) as {
            kid: string;
            current: boolean;
          }[];
          line = line.replace('<kid>', keys.find((key) => !key.current)!.kid);
        }
        expect(line, 'no placeholder left').not.to.match(/<[a-z]+>/i);
        const ran = await shell(line, dir, env);
        expect(ran.code, `${line}\n${ran.stderr}`).to.equal(0);
      }
    } finally {
      remove();
    }
  });
});
