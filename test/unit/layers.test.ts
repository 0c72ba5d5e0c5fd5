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

  /** Each rule, and a tree that breaks it: a module, and one that imports it (by the path given). */
  const breaches: { rule: string; what: string; imported: string; importer: string; from: string }[] = [
    {
      rule: 'core-imports-core',
      what: 'core importing a feature',
      imported: 'src/observations/decider.ts',
      importer: 'src/core/ids.ts',
      from: '../observations/decider.js',
    },
    {
      rule: 'platform-below-features',
      what: 'http/ importing a feature',
      imported: 'src/auth/tokens.ts',
      importer: 'src/http/guard.ts',
      from: '../auth/tokens.js',
    },
    {
      rule: 'storage-below-platform',
      what: 'a storage adapter importing the platform',
      imported: 'src/observability/metrics.ts',
      importer: 'src/readmodels/sqlite.ts',
      from: '../observability/metrics.js',
    },
    {
      rule: 'adapters-apart',
      what: 'one adapter borrowing from another',
      imported: 'src/eventstore/sqlite-rows.ts',
      importer: 'src/eventstore/postgres.ts',
      from: './sqlite-rows.js',
    },
    {
      rule: 'credentials-below-auth',
      what: 'credentials/ importing auth/',
      imported: 'src/auth/tokens.ts',
      importer: 'src/credentials/create.ts',
      from: '../auth/tokens.js',
    },
  ];
  for (const { rule, what, imported, importer, from } of breaches) {
    it(`refuses ${what} (${rule})`, async () => {
      expect(
        await violationsOf({
          [imported]: 'export const value = 1;\n',
          [importer]: `import { value } from '${from}';\nexport const other = value;\n`,
        }),
      ).to.include(rule);
    });
  }

  it('refuses an import circle', async () => {
    expect(
      await violationsOf({
        'src/visits/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
        'src/visits/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      }),
    ).to.include('no-circular');
  });
});
