import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { openApiDocument } from '../../src/openapi/document.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The document passes Redocly's recommended ruleset (redocly.yaml), run by `redocly lint` from npm on the
 * document as the service serves it, written to a temporary file. Nothing is fetched from the network.
 */
describe('the OpenAPI document under `redocly lint`', function () {
  this.timeout(60_000);

  it('has no errors and no warnings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(openApiDocument({ publicUrl: 'https://observations.example.org' })));
      const { stdout } = await promisify(execFile)(
        join(root, 'node_modules', '.bin', 'redocly'),
        ['lint', '--format', 'json', '--config', join(root, 'redocly.yaml'), file],
        {
          cwd: dir,
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          maxBuffer: 16 * 1024 * 1024,
        },
      ).catch((error: { stdout?: string; stderr?: string }) => {
        // redocly exits 1 when it finds errors: the report on stdout says which.
        if (error.stdout) return { stdout: error.stdout };
        throw error;
      });
      const report = JSON.parse(stdout) as {
        totals: { errors: number; warnings: number };
        problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
      };
      const problems = report.problems.map(
        (problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer ?? '?'}`,
      );
      expect(problems).to.deep.equal([]);
      expect(report.totals).to.include({ errors: 0, warnings: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
