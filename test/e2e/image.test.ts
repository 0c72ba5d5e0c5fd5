import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { eventually } from '../support/events.js';

/**
 * The Dockerfile, read three ways: a careful reading of its instructions, here and everywhere; hadolint,
 * where it is installed; and a real build and start, where a Docker engine answers. Each of the last two
 * skips, saying why, where its tool is missing. docker-compose.yml is checked by `docker compose config`.
 */

const root = resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

interface Instruction {
  keyword: string;
  args: string;
}

/** The instructions, stage by stage: continuation lines joined, comments and parser directives dropped. */
const dockerfileStages = (text: string): Instruction[][] => {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: Instruction[][] = [];
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { keyword: keyword.toUpperCase(), args: args.replace(/\s+/g, ' ') };
    if (instruction.keyword === 'FROM') stages.push([]);
    stages.at(-1)?.push(instruction);
  }
  return stages;
};

const argsOf = (stage: Instruction[], keyword: string) =>
  stage.filter((instruction) => instruction.keyword === keyword).map((instruction) => instruction.args);

/** The variables an ENV instruction sets, in either of its forms (`A=1 B=2` or `A 1`). */
const envOf = (stage: Instruction[]): Record<string, string> =>
  Object.fromEntries(
    argsOf(stage, 'ENV').flatMap((args) =>
      args.includes('=')
        ? [...args.matchAll(/(\w+)=("[^"]*"|\S+)/g)].map(([, name, value]) => [
            name,
            value!.replace(/"/g, ''),
          ])
        : [args.split(' ', 2) as [string, string]],
    ),
  );

const secret = () => randomBytes(32).toString('hex');
const productionSecrets = () => ({
  PLATFORM_ADMIN_KEY: secret(),
  CURSOR_SECRET: secret(),
  WEBHOOK_SECRET_KEY: secret(),
  IDEMPOTENCY_SECRET_KEY: secret(),
});

const has = (command: string, args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

describe('the Dockerfile, read instruction by instruction', () => {
  const stages = dockerfileStages(read('Dockerfile'));
  const runtime = stages.at(-1)!;
  const build = stages.slice(0, -1);
  const nodeMajor = read('.nvmrc').trim();

  it('builds in one stage and runs in another, both on node:<.nvmrc>-bookworm-slim (Node 24 LTS)', () => {
    expect(stages.length).to.be.at.least(2);
    expect(nodeMajor).to.equal('24');
    for (const stage of stages)
      expect(stage[0]!.args).to.match(new RegExp(`^node:${nodeMajor}-bookworm-slim\\b`));
  });

  it('sets NODE_ENV=production in the image, so that a missing secret stops the service', () => {
    expect(envOf(runtime).NODE_ENV).to.equal('production');
  });

  it('runs as the unprivileged node user, from USER on to the command', () => {
    const users = argsOf(runtime, 'USER');
    expect(users).to.deep.equal(['node']);
    const user = runtime.findIndex((instruction) => instruction.keyword === 'USER');
    const command = runtime.findIndex((instruction) => instruction.keyword === 'CMD');
    expect(user).to.be.greaterThan(0).and.lessThan(command);
  });

  it('runs the compiled service with node itself, neither npm nor tsx', () => {
    expect(argsOf(runtime, 'CMD')).to.deep.equal(['["node", "dist/src/main.js"]']);
    expect(argsOf(runtime, 'ENTRYPOINT')).to.deep.equal([]);
  });

  it('checks readiness with node, on the port the service listens on', () => {
    const [check, ...more] = argsOf(runtime, 'HEALTHCHECK');
    expect(more).to.deep.equal([]);
    expect(check).to.include('CMD ["node", "-e"');
    expect(check).to.include('/health/ready');
    expect(check).to.include('process.env.PORT');
    expect(check).to.not.match(/curl|wget/);
    const port = envOf(runtime).PORT;
    // METRICS_PORT's default too, for METRICS=port.
    expect(argsOf(runtime, 'EXPOSE')).to.deep.equal([`${port} 9464`]);
  });

  it('installs production dependencies only: the build stage prunes the others before the copy', () => {
    const buildRuns = build.flatMap((stage) => argsOf(stage, 'RUN')).join('\n');
    expect(buildRuns).to.match(/npm ci\b/);
    expect(buildRuns).to.match(/npm run build && .*npm prune --omit=dev\b/);
    // A better-sqlite3 binary that aborts as statements are collected fails the build, not the service.
    expect(buildRuns).to.match(/npm run build && node scripts\/check-sqlite-finalizers\.js && npm prune/);
    const runtimeRuns = argsOf(runtime, 'RUN').join('\n');
    expect(runtimeRuns).to.not.match(/npm (ci|install|i)\b/);
    // From the build stage, and only these: no sources, no tests, no build tooling.
    const sources = argsOf(runtime, 'COPY').map((args) => {
      const words = args.split(' ');
      expect(words[0], args).to.equal('--from=build');
      return words.slice(1, -1);
    });
    expect(sources.flat()).to.have.members([
      '/app/package.json',
      '/app/node_modules',
      '/app/dist',
      '/app/bin',
    ]);
    expect(argsOf(runtime, 'ADD')).to.deep.equal([]);
  });

  it('puts obs, the bin of package.json, on PATH', () => {
    const { bin } = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    expect(bin).to.deep.equal({ obs: 'bin/obs.js' });
    expect(argsOf(runtime, 'COPY')).to.include('--from=build /app/bin ./bin');
    expect(argsOf(runtime, 'RUN').join('\n')).to.include('ln -s /app/bin/obs.js /usr/local/bin/obs');
    expect(read('bin/obs.js')).to.match(/^#!\/usr\/bin\/env node\n/);
  });

  it('leaves the checkout’s node_modules, dist and data out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim());
    expect(ignored).to.include.members(['node_modules', 'dist', 'data', '.git', '.env']);
  });
});

describe('the supported runtimes', () => {
  it('are Node 22 and 24 LTS in engines, .nvmrc, the image and the CI matrix', () => {
    const { engines } = JSON.parse(read('package.json')) as { engines: { node: string } };
    expect(engines.node).to.equal('^20.19.0 || ^22.12.0 || >=24');
    expect(read('.nvmrc').trim()).to.equal('24');
    expect(read('.github/workflows/ci.yml')).to.match(/node-version: \[22, 24\]/);
  });
});

describe('hadolint on the Dockerfile', function () {
  this.timeout(30_000);
  before(function () {
    if (!has('hadolint', ['--version'])) {
      console.log('    skipped: hadolint is not installed (CI runs it from its image)');
      this.skip();
    }
  });

  it('finds nothing', () => {
    const lint = spawnSync('hadolint', ['Dockerfile'], { cwd: root, encoding: 'utf8' });
    expect(lint.status, lint.stdout + lint.stderr).to.equal(0);
  });
});

/** `docker compose` (the plugin), else Debian's docker-compose: both can run `config` without an engine. */
const composeCommand = (): string[] | undefined =>
  has('docker', ['compose', 'version'])
    ? ['docker', 'compose']
    : has('docker-compose', ['version'])
      ? ['docker-compose']
      : undefined;

describe('docker compose config', function () {
  this.timeout(30_000);
  const compose = composeCommand();
  before(function () {
    if (!compose) {
      console.log('    skipped: neither `docker compose` nor docker-compose is installed');
      this.skip();
    }
  });

  const config = (env: Record<string, string | undefined>) =>
    spawnSync(compose![0]!, [...compose!.slice(1), 'config'], {
      cwd: root,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, ...env },
    });

  it('passes with every secret given, and runs the service with NODE_ENV=production', () => {
    const secrets = productionSecrets();
    const result = config(secrets);
    expect(result.status, result.stderr).to.equal(0);
    expect(result.stdout).to.match(/NODE_ENV: production/);
    expect(result.stdout).to.include('SIGNING_KEYS_FILE: /app/keys/signing-keys.json');
    for (const value of Object.values(secrets)) expect(result.stdout).to.include(value);
  });

  for (const missing of Object.keys(productionSecrets())) {
    it(`refuses without ${missing}, naming it`, () => {
      const result = config({ ...productionSecrets(), [missing]: undefined });
      expect(result.status).to.not.equal(0);
      expect(result.stderr).to.include(`set ${missing}`);
    });
  }
});

const docker = (args: string[]) => spawnSync('docker', args, { cwd: root, encoding: 'utf8' });

describe('the image, built and started with the production settings', function () {
  this.timeout(900_000);
  const tag = `observation-service-test:${randomBytes(4).toString('hex')}`;
  const volume = `observation-service-test-keys-${randomBytes(4).toString('hex')}`;
  let container = '';

  before(function () {
    if (!has('docker', ['info'])) {
      console.log('    skipped: no Docker engine answers here (`docker info` fails)');
      this.skip();
    }
    const built = docker(['build', '--tag', tag, '.']);
    expect(built.status, built.stderr.slice(-4000)).to.equal(0);
  });
  after(() => {
    if (container) docker(['rm', '--force', container]);
    docker(['volume', 'rm', '--force', volume]);
    docker(['image', 'rm', '--force', tag]);
  });

  it('refuses to start without its secrets (exit 2)', () => {
    const started = docker(['run', '--rm', tag]);
    expect(started.status).to.equal(2);
    expect(started.stdout + started.stderr).to.include('PLATFORM_ADMIN_KEY');
  });

  it('creates a keyring with obs, starts as node, gets healthy and serves /docs without redoc installed', async () => {
    const env = Object.entries({
      ...productionSecrets(),
      SIGNING_KEYS_FILE: '/app/keys/signing-keys.json',
    }).flatMap(([name, value]) => ['--env', `${name}=${value}`]);
    const keys = docker([
      'run',
      '--rm',
      ...env,
      '--volume',
      `${volume}:/app/keys`,
      tag,
      'obs',
      'keys',
      'rotate',
    ]);
    expect(keys.status, keys.stderr).to.equal(0);
    const run = docker([
      'run',
      '--detach',
      ...env,
      '--volume',
      `${volume}:/app/keys:ro`,
      '--publish',
      '127.0.0.1::3000',
      tag,
    ]);
    expect(run.status, run.stderr).to.equal(0);
    container = run.stdout.trim();
    const health = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      return docker(['inspect', '--format', '{{.State.Health.Status}}', container]).stdout.trim();
    };
    await eventually(async () => (await health()) === 'healthy', 120_000).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${docker(['logs', container]).stdout.slice(-3000)}`);
    });
    expect(docker(['exec', container, 'id', '-un']).stdout.trim()).to.equal('node');
    expect(docker(['exec', container, 'printenv', 'NODE_ENV']).stdout.trim()).to.equal('production');
    expect(docker(['exec', container, 'obs', '--help']).status).to.equal(0);
    for (const devOnly of ['tsx', 'redoc', 'typescript']) {
      const resolved = docker([
        'exec',
        container,
        'node',
        '-e',
        `require.resolve('${devOnly}/package.json')`,
      ]);
      expect(resolved.status, `${devOnly} is installed in the image`).to.not.equal(0);
    }
    const address = docker(['port', container, '3000/tcp']).stdout.trim().split('\n')[0]!;
    const docs = await fetch(`http://${address}/docs/redoc.standalone.js`);
    expect(docs.status).to.equal(200);
  });
});
