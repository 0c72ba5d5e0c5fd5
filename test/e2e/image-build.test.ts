import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { freePort } from '../support/process.js';
import { withoutRemoteLogo } from '../../src/openapi/page-assets.js';

/**
 * What the image does, without Docker: the build compiled into a directory laid out as the image's /app
 * (dist/, bin/, package.json) whose node_modules holds only the production dependencies, as after
 * `npm prune --omit=dev`. The compiled service starts there with NODE_ENV=production and serves /docs,
 * and `obs` runs from there: plain node, no tsx, no redoc, no TypeScript.
 */

const root = resolve(import.meta.dirname, '../..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const run = (command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  new Promise<Run>((done, fail) => {
    const child = spawn(command, args, { cwd: options.cwd ?? root, env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', fail);
    child.once('exit', (code) => done({ code, stdout, stderr }));
  });

/** The top-level packages `npm ci --omit=dev` installs: package-lock.json marks the others `dev`. */
const productionPackages = (): string[] => {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => /^node_modules\/(@[^/]+\/)?[^/@][^/]*$/.test(path) && !entry.dev)
    .map(([path]) => path.slice('node_modules/'.length))
    .filter((name) => existsSync(join(root, 'node_modules', name))); // other platforms' optional binaries
};

/** /app as the image holds it; its node_modules links to this checkout's production packages only. */
const imageLayout = async (app: string) => {
  const dist = join(app, 'dist');
  // The three steps of `npm run build`, into the temporary directory instead of the checkout's dist/.
  const compiled = await run(process.execPath, [
    'node_modules/typescript/bin/tsc',
    '-p',
    'tsconfig.build.json',
    '--outDir',
    dist,
  ]);
  expect(compiled.code, compiled.stdout + compiled.stderr).to.equal(0);
  const copied = await run(process.execPath, ['scripts/copy-redoc.js', dist]);
  expect(copied.code, copied.stderr).to.equal(0);
  const bundled = await run(process.execPath, ['--import', 'tsx', 'console/build.ts', join(dist, 'console')]);
  expect(bundled.code, bundled.stderr).to.equal(0);
  copyFileSync(join(root, 'package.json'), join(app, 'package.json'));
  mkdirSync(join(app, 'bin'));
  copyFileSync(join(root, 'bin/obs.js'), join(app, 'bin/obs.js'));
  for (const name of productionPackages()) {
    mkdirSync(dirname(join(app, 'node_modules', name)), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(app, 'node_modules', name), 'dir');
  }
};

const secret = () => randomBytes(32).toString('hex');

describe('the compiled build, laid out as in the image', function () {
  this.timeout(90_000);
  let app: string;
  let remove: () => void;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    ({ dir: app, remove } = tempDir());
    await imageLayout(app);
    env = {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATA_DIR: join(app, 'data'),
      SIGNING_KEYS_FILE: join(app, 'keys/signing-keys.json'),
      PLATFORM_ADMIN_KEY: secret(),
      CURSOR_SECRET: secret(),
      WEBHOOK_SECRET_KEY: secret(),
      IDEMPOTENCY_SECRET_KEY: secret(),
      LOG_LEVEL: 'warn',
    };
  });
  after(() => remove?.());

  it('is built with the same steps as `npm run build`', () => {
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.build).to.equal(
      'tsc -p tsconfig.build.json && node scripts/copy-redoc.js dist && node --import tsx console/build.ts dist/console',
    );
  });

  it('has neither tsx, nor redoc, nor TypeScript, nor the console’s builder among its packages, nor a type package of its own', () => {
    const installed = productionPackages();
    expect(installed).to.include.members(['koa', 'better-sqlite3', 'pino', 'prom-client']);
    expect(installed).to.not.include.members(['tsx', 'redoc', 'typescript', 'mocha', 'esbuild', 'preact']);
    // Some dependencies (mongodb's whatwg-url, for one) bring type packages of their own; ours are dev only.
    const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(dependencies).filter((name) => name.startsWith('@types/'))).to.deep.equal([]);
  });

  it('runs obs from dist/ with plain node: help, then a production keyring', async () => {
    const help = await run(process.execPath, ['bin/obs.js', '--help'], { cwd: app, env });
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.match(/^Usage: /);
    const rotated = await run(process.execPath, ['bin/obs.js', 'keys', 'rotate'], { cwd: app, env });
    expect(rotated.code, rotated.stderr).to.equal(0);
    expect(existsSync(env.SIGNING_KEYS_FILE!)).to.equal(true);
  });

  it('refuses to start in production without a secret, naming it (exit 2)', async () => {
    const started = await run(process.execPath, ['dist/src/main.js'], {
      cwd: app,
      env: { ...env, CURSOR_SECRET: undefined, PORT: String(await freePort()), HOST: '127.0.0.1' },
    });
    expect(started.code).to.equal(2);
    expect(started.stdout + started.stderr).to.include('CURSOR_SECRET');
  });

  it('starts with NODE_ENV=production, gets ready, and serves /docs and /console from what was built', async () => {
    const port = await freePort();
    const service = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: app,
      env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    service.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    service.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => service.once('exit', (code) => done(code)));
    const url = `http://127.0.0.1:${port}`;
    try {
      await eventually(
        async () => (await fetch(`${url}/health/ready`).catch(() => null))?.ok === true,
        30_000,
      ).catch((error: unknown) => {
        throw new Error(`not ready: ${String(error)}\n${output.slice(-2000)}`);
      });
      const page = await fetch(`${url}/docs`);
      expect(page.status).to.equal(200);
      expect(await page.text()).to.include('redoc.standalone.js');
      const script = await fetch(`${url}/docs/redoc.standalone.js`);
      expect(script.status).to.equal(200);
      const built = readFileSync(join(app, 'dist/assets/redoc.standalone.js'));
      // The built bundle as the page serves it: without Redocly's logo from their CDN (page-assets.ts).
      expect(Buffer.from(await script.arrayBuffer()).equals(withoutRemoteLogo(built))).to.equal(true);
      const { version } = JSON.parse(readFileSync(join(app, 'dist/assets/redoc.json'), 'utf8')) as {
        version: string;
      };
      expect(script.headers.get('etag')).to.equal(`"redoc-${version}"`);
      // The console's bundle as built, read from dist/console: esbuild is not among the image's packages.
      for (const asset of ['app.js', 'app.css', 'basemap.json']) {
        const served = await fetch(`${url}/console/${asset}`);
        expect(served.status, asset).to.equal(200);
        const onDisk = readFileSync(join(app, 'dist/console', asset));
        expect(Buffer.from(await served.arrayBuffer()).equals(onDisk), asset).to.equal(true);
      }
      expect(await (await fetch(`${url}/console`)).text()).to.include('/console/app.js');
    } finally {
      service.kill('SIGTERM');
    }
    expect(await exited).to.equal(0);
  });
});
