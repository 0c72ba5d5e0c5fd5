import { expect } from 'chai';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';

/**
 * The layer and circle rules of .dependency-cruiser.cjs, which `npm run lint` runs over src/ and
 * projections/, refuse what they are meant to: each case is a small tree in a temporary folder, cruised
 * with the project's own rules, that breaks one rule.
 */
const rules = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as IConfiguration;

const violationsOf = async (files: Record<string, string>): Promise<string[]> => {
  const root = mkdtempSync(join(tmpdir(), 'layers-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(root, dirname(path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    // The rules' paths are relative to the folder cruised from; the fixtures need no tsconfig.
    const { tsConfig: _tsConfig, ...options } = rules.options ?? {};
    const result = await cruise(['src'], {
      ...options,
      baseDir: root,
      validate: true,
      ruleSet: { forbidden: rules.forbidden },
    });
    const output = result.output as ICruiseResult;
    return output.summary.violations.map((violation) => violation.rule.name);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
};

describe('layer rules (.dependency-cruiser.cjs)', function () {
  this.timeout(30_000);

  it('accepts imports that point down', async () => {
    expect(
      await violationsOf({
        'src/core/ids.ts': 'export const id = 1;\n',
        'src/observations/decider.ts': "import { id } from '../core/ids.js';\nexport const d = id;\n",
      }),
    ).to.deep.equal([]);
  });

  it('refuses core importing a feature', async () => {
    expect(
      await violationsOf({
        'src/observations/decider.ts': 'export const d = 1;\n',
        'src/core/ids.ts': "import { d } from '../observations/decider.js';\nexport const id = d;\n",
      }),
    ).to.include('core-imports-core');
  });

  it('refuses http/ importing a feature', async () => {
    expect(
      await violationsOf({
        'src/auth/tokens.ts': 'export const t = 1;\n',
        'src/http/guard.ts': "import { t } from '../auth/tokens.js';\nexport const g = t;\n",
      }),
    ).to.include('platform-below-features');
  });

  it('refuses a storage adapter importing the platform', async () => {
    expect(
      await violationsOf({
        'src/observability/metrics.ts': 'export const m = 1;\n',
        'src/readmodels/sqlite.ts': "import { m } from '../observability/metrics.js';\nexport const s = m;\n",
      }),
    ).to.include('storage-below-platform');
  });

  it('refuses one adapter borrowing from another', async () => {
    expect(
      await violationsOf({
        'src/eventstore/sqlite-rows.ts': 'export const r = 1;\n',
        'src/eventstore/postgres.ts': "import { r } from './sqlite-rows.js';\nexport const p = r;\n",
      }),
    ).to.include('adapters-apart');
  });

  it('refuses an import circle', async () => {
    expect(
      await violationsOf({
        'src/visits/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
        'src/visits/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      }),
    ).to.include('no-circular');
  });

  it('refuses credentials/ importing auth/', async () => {
    expect(
      await violationsOf({
        'src/auth/tokens.ts': 'export const t = 1;\n',
        'src/credentials/create.ts': "import { t } from '../auth/tokens.js';\nexport const c = t;\n",
      }),
    ).to.include('credentials-below-auth');
  });
});
