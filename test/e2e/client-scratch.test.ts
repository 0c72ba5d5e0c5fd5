import { expect } from 'chai';
import { ESLint } from 'eslint';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { historyFileLines } from '../../client/src/verify-history-file.js';
import { verifyHistory } from '../../client/src/verify-history.js';
import { tempDir } from '../support/adapters.js';
import { exportedHistory } from '../support/exported-history.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * The newcomer's path with the client (README "Using the TypeScript client"): the package is packed as
 * npm packs it, installed from its tarball into a project that `npm init -y` made, and the README's own
 * snippet is compiled there (strict, exactOptionalPropertyTypes) and run against a real service, as an ES
 * module and as CommonJS. The client is built in a copy, so the tree stays as it was.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const clientDir = join(root, 'client');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

interface Ran {
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end; rejects with its output when it fails. npm's own variables are left out:
 * under `npm test` they would point the scratch project's npm at this repository.
 */
const run = (command: string, args: string[], cwd: string, env: Record<string, string> = {}) =>
  new Promise<Ran>((resolve, reject) => {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'NODE_OPTIONS'),
    );
    execFile(
      command,
      args,
      { cwd, env: { ...inherited, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
        else resolve({ stdout, stderr });
      },
    );
  });

/** The README's client snippet, and the line that replaces its import in a CommonJS JavaScript file. */
const readmeSnippet = (readme: string): { code: string; requireLine: string; setup: string } => {
  const block = (marker: string, language: string) => {
    const start = readme.indexOf(marker);
    expect(start, `README.md has the ${marker} marker`).to.be.above(-1);
    const match = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(readme.slice(start));
    expect(match, `a ${language} block after ${marker}`).to.not.equal(null);
    return match![1]!;
  };
  return {
    code: block('<!-- client-snippet:', 'ts'),
    requireLine: block('<!-- client-snippet-require -->', 'js').trim(),
    setup: block('<!-- client-setup:', 'sh'),
  };
};

/** Whether npm can reach its registry: the TypeScript of the README's setup is today's, from there. */
const registryReachable = () =>
  run('npm', ['view', 'typescript', 'version', '--fetch-timeout=20000'], root).then(
    () => true,
    () => false,
  );

/** The snippet in plain CommonJS JavaScript: its one import replaced by the README's `require` line. */
const asRequire = (code: string, requireLine: string) => {
  const importLine = /^import \{[^}]*\} from '@observation-service\/client';$/m;
  expect(code).to.match(importLine);
  return code.replace(importLine, requireLine);
};

/**
 * A module that compiles only while every optional member of the client's option, parameter and input
 * types takes `undefined` under exactOptionalPropertyTypes; a member that does not is named in the error.
 */
const undefinedCheck = (typeNames: string[]) => `import type * as client from '@observation-service/client';

type Optional<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
type Refusing<T> = T extends unknown
  ? { [K in Optional<T>]: { [P in K]: undefined } extends Pick<T, K> ? never : K }[Optional<T>]
  : never;
type TakesUndefined<T> = [Refusing<T>] extends [never] ? true : Refusing<T>;

export const everyOptionalMemberTakesUndefined: {
${typeNames.map((name) => `  ${name}: TakesUndefined<client.${name}>;`).join('\n')}
} = {
${typeNames.map((name) => `  ${name}: true,`).join('\n')}
};
`;

/** The names of the client's exported option, parameter and input types, read from its source. */
const optionalShapes = () =>
  ['transport.ts', 'types.ts', 'webhooks.ts'].flatMap((file) =>
    [
      ...readFileSync(join(clientDir, 'src', file), 'utf8').matchAll(
        /^export (?:interface|type) (\w+(?:Options|Params|Input|Patch))\b(?!<)/gm,
      ),
    ].map((match) => match[1]!),
  );

/** The files the README's Quickstart writes with `> name.json`, and the store `npm start` makes. */
const quickstartFiles = (readme: string) => {
  const quickstart = readme.slice(
    readme.indexOf('## Quickstart'),
    readme.indexOf('\n## ', readme.indexOf('## Quickstart') + 1),
  );
  const written = [...quickstart.matchAll(/> (\S+\.json)\b/g)].map((match) => match[1]!);
  expect(written, 'the files the Quickstart writes').to.include.members(['tenant.json', 'webhook.json']);
  return [...new Set(written), 'data/secrets.json'];
};

describe('the client in a new project (README "Using the TypeScript client")', function () {
  this.timeout(240_000);
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const treeHadDist = existsSync(join(clientDir, 'dist'));
  let work: { dir: string; remove: () => void };
  let packed: string[];
  let app: string;
  let server: TestServer;
  let tenant: { tenantId: string; adminKey: string };

  before(async () => {
    work = tempDir();
    // A copy of client/ without its build output, whose npm pack runs its real prepack build; the
    // repository's node_modules gives that build tsc and @types/node.
    const copy = join(work.dir, 'client');
    cpSync(clientDir, copy, {
      recursive: true,
      filter: (path) => !/^(dist|node_modules)(\/|\\|$)/.test(relative(clientDir, path)),
    });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'junction');
    const pack = await run('npm', ['pack', '--json', '--pack-destination', work.dir], copy);
    const [result] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as {
      filename: string;
      files: { path: string }[];
    }[];
    packed = result!.files.map((file) => file.path);
    app = join(work.dir, 'app');
    mkdirSync(app);
    await run('npm', ['init', '-y'], app);
    await run(
      'npm',
      ['install', '--offline', '--no-audit', '--no-fund', join(work.dir, result!.filename)],
      app,
    );
    server = await startTestServer();
    tenant = await withTenant(server);
  });

  after(async () => {
    await server?.close();
    work?.remove();
  });

  it('packs an ES module build and a CommonJS build, each with its types, and builds nothing in the tree', () => {
    expect(packed).to.include.members([
      'package.json',
      'README.md',
      'dist/esm/index.js',
      'dist/esm/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'dist/cjs/package.json',
    ]);
    const manifest = JSON.parse(
      readFileSync(join(app, 'node_modules/@observation-service/client/package.json'), 'utf8'),
    );
    expect(manifest.exports['.']).to.deep.equal({
      import: { types: './dist/esm/index.d.ts', default: './dist/esm/index.js' },
      require: { types: './dist/cjs/index.d.ts', default: './dist/cjs/index.js' },
    });
    expect(JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'))).to.deep.include({ type: 'commonjs' });
    expect(existsSync(join(clientDir, 'dist')), 'client/dist in the tree').to.equal(treeHadDist);
  });

  it("ignores the client's build output and the Quickstart's files in ESLint, Prettier and git", async () => {
    const built = packed.filter((path) => path.startsWith('dist/')).map((path) => `client/${path}`);
    const paths = [...built, ...quickstartFiles(readme)];
    expect(built.length).to.be.above(10);
    const eslint = new ESLint({ cwd: root });
    const prettierIgnores = [join(root, '.gitignore'), join(root, '.prettierignore')];
    const linted: string[] = [];
    const formatted: string[] = [];
    for (const path of paths) {
      if (!(await eslint.isPathIgnored(join(root, path)))) linted.push(path);
      const info = await prettier.getFileInfo(join(root, path), { ignorePath: prettierIgnores });
      if (!info.ignored) formatted.push(path);
    }
    expect(linted, 'files ESLint would lint').to.deep.equal([]);
    expect(formatted, 'files prettier --check would check').to.deep.equal([]);
    // --non-matching -v prints every path; "::" starts the line of one that no rule ignores.
    const git = await run('git', ['check-ignore', '--non-matching', '-v', ...paths], root).catch(
      (error: Error) => ({ stdout: error.message, stderr: '' }),
    );
    const tracked = git.stdout
      .split('\n')
      .filter((line) => line.startsWith('::'))
      .map((line) => line.split('\t')[1]);
    expect(tracked, 'files git does not ignore').to.deep.equal([]);
  });

  it('every optional member of its options, parameters and inputs takes undefined (exactOptionalPropertyTypes)', async () => {
    const names = optionalShapes();
    expect(names).to.include.members([
      'ClientOptions',
      'RequestOptions',
      'PostOptions',
      'ListObservationsParams',
      'ObservationPatch',
    ]);
    writeFileSync(join(app, 'options.mts'), undefinedCheck(names));
    await compile(['options.mts']);
  });

  /** Compiles files of the scratch project as a strict project would: the client's .d.ts files included. */
  const compile = async (files: string[]) => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(root, 'node_modules', '@types')],
        },
        files,
      }),
    );
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], app);
  };

  /** The tenant's observations, newest first, as the API lists them. */
  const observations = async (): Promise<{ id: string; notes?: string | null; version: number }[]> => {
    const listed = await request(`${server.url}/v1/tenants/${tenant.tenantId}/observations?limit=200`, {
      headers: { 'X-API-Key': tenant.adminKey },
    });
    expect(listed.status).to.equal(200);
    return listed.body.data;
  };

  /** Runs a file of the scratch project with the Quickstart's tenant, and checks what the snippet does. */
  const runSnippet = async (file: string, cwd = app) => {
    const before = new Set((await observations()).map((o) => o.id));
    const { stdout, stderr } = await run(process.execPath, [file], cwd, {
      OBS_URL: server.url,
      OBS_TENANT: tenant.tenantId,
      OBS_KEY: tenant.adminKey,
    });
    const after = await observations();
    const created = after.filter((o) => !before.has(o.id));
    expect(created, `${file}: the observation it created`).to.have.length(1);
    expect(created[0]).to.include({ notes: 'red fox', version: 1 });
    const printed = stdout.trim().split('\n');
    expect(printed, `${file}: every observation's id, from iterate`).to.have.members(after.map((o) => o.id));
    expect(stderr.trim(), `${file}: the stale update's ApiError`).to.match(/^412 \S+ \S+$/);
  };

  it('compiles the snippet as an ES module and runs it, compiled and as plain JavaScript', async () => {
    const { code } = readmeSnippet(readme);
    writeFileSync(join(app, 'main.mts'), code);
    await compile(['main.mts']);
    expect(readFileSync(join(app, 'main.mjs'), 'utf8')).to.match(/^import \{/m);
    await runSnippet('main.mjs');
    writeFileSync(join(app, 'plain.mjs'), code);
    await runSnippet('plain.mjs');
  });

  it('compiles the snippet as CommonJS and runs it, compiled and as plain JavaScript with require', async () => {
    const { code, requireLine } = readmeSnippet(readme);
    writeFileSync(join(app, 'main.cts'), code);
    await compile(['main.cts']);
    expect(readFileSync(join(app, 'main.cjs'), 'utf8')).to.include('require("@observation-service/client")');
    await runSnippet('main.cjs');
    writeFileSync(join(app, 'plain.cjs'), asRequire(code, requireLine));
    await runSnippet('plain.cjs');
  });

  it("follows the README's setup with today's npm init and tsc --init, then compiles and runs the snippet", async function () {
    if (!(await registryReachable())) {
      console.log(
        "    (skipped: the npm registry, where the setup's typescript and @types/node come from, is not reachable)",
      );
      this.skip();
    }
    const { code, setup } = readmeSnippet(readme);
    // A clone whose folder has a name of its own; its client built as the block before the setup builds it.
    const clone = join(work.dir, 'my-clone');
    mkdirSync(clone);
    symlinkSync(join(work.dir, 'client'), join(clone, 'client'), 'junction');
    await run('bash', ['-euo', 'pipefail', '-c', setup], clone);
    const yourApp = join(work.dir, 'your-app');
    const config = readFileSync(join(yourApp, 'tsconfig.json'), 'utf8');
    expect(config, 'tsc --init, as TypeScript makes it today').to.match(/"verbatimModuleSyntax": true/);
    writeFileSync(join(yourApp, 'main.mts'), code);
    await run('npx', ['tsc'], yourApp);
    await runSnippet('main.mjs', yourApp);
  });

  it('verifies a large download with its command in worker threads, as the line-by-line pass would', async () => {
    // 20 MB: past the 16 MiB from which the installed command verifies in worker threads (its build's).
    const history = join(work.dir, 'history.ndjson');
    const lines = exportedHistory({
      streams: 4000,
      versions: 8,
      notesOf: () => 'a fox by the pond '.repeat(20),
    }).map((event) => JSON.stringify(event));
    const verify = async (text: string[]) => {
      writeFileSync(history, `${text.join('\n')}\n`);
      expect(statSync(history).size).to.be.above(16 * 1024 * 1024);
      const bin = join(app, 'node_modules', '.bin', 'observation-service-client');
      const [command, lineByLine] = await Promise.all([
        run(bin, ['verify', history, '--json'], app).then(
          ({ stdout }) => stdout,
          (error: Error) => error.message.slice(error.message.indexOf('\n') + 1).trim(),
        ),
        verifyHistory(historyFileLines(history)),
      ]);
      expect(JSON.parse(command)).to.deep.equal(lineByLine);
      return lineByLine;
    };
    expect(await verify(lines)).to.deep.include({ ok: true, events: 32_000, streams: 4000 });
    const edited = lines.map((line, at) => (at === 20_001 ? line.replace('a fox', 'a cat') : line));
    expect((await verify(edited)).broken).to.deep.include({ position: 20_002 });
  });
});
