import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { openApiDocument } from '../../src/openapi/document.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface SpectralResult {
  code: string;
  message: string;
  path: (string | number)[];
  /** 0 error, 1 warning, 2 information, 3 hint. */
  severity: number;
}

/** `spectral lint` of a document with a ruleset of the repository: every result it reports. */
const spectral = async (document: object, ruleset: string): Promise<SpectralResult[]> => {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-spectral-'));
  try {
    const file = join(dir, 'openapi.json');
    const report = join(dir, 'report.json');
    writeFileSync(file, JSON.stringify(document));
    await promisify(execFile)(
      join(root, 'node_modules', '.bin', 'spectral'),
      ['lint', '--ruleset', ruleset, '--format', 'json', '--output', report, '--fail-severity', 'hint', file],
      { cwd: dir, maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: { code?: number }) => {
      // spectral exits 1 when it reports anything: the report says what.
      if (error.code !== 1) throw error;
    });
    return JSON.parse(readFileSync(report, 'utf8')) as SpectralResult[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

const describeResult = (result: SpectralResult) =>
  `${result.code} (${['error', 'warning', 'information', 'hint'][result.severity]}): ${result.message} at ${result.path.join('.')}`;

/**
 * The document passes Spectral's OpenAPI rules and the OWASP API Security ruleset, as .spectral.yaml sets them
 * (each rule it turns off or narrows says why there). Run by `spectral lint` from npm on the document as the
 * service serves it, written to a temporary file; nothing is fetched from the network.
 */
describe('the OpenAPI document under `spectral lint` (spectral:oas and OWASP)', function () {
  this.timeout(60_000);
  const document = openApiDocument({ publicUrl: 'https://observations.example.org' });

  it('has no errors and no warnings', async () => {
    const results = await spectral(document, join(root, '.spectral.yaml'));
    expect(results.filter((result) => result.severity <= 1).map(describeResult)).to.deep.equal([]);
  });

  it('has no warning about security requirements under the stock spectral:oas ruleset', async () => {
    const stock = join(tmpdir(), `stock-spectral-${process.pid}.yaml`);
    writeFileSync(stock, 'extends:\n  - spectral:oas\n');
    try {
      const results = await spectral(document, stock);
      expect(results.filter((result) => result.code.includes('security')).map(describeResult)).to.deep.equal(
        [],
      );
    } finally {
      rmSync(stock, { force: true });
    }
  });

  it('is strict enough to tell: a request field without bounds, or a response without RateLimit, is reported', async () => {
    const drifted = JSON.parse(JSON.stringify(document)) as Record<string, any>;
    drifted.components.schemas.CreateObservationRequest.properties.notes = { type: 'string' };
    delete drifted.paths['/v1/tenants/{tenantId}/observations'].get.responses['200'].headers.RateLimit;
    const codes = new Set(
      (await spectral(drifted, join(root, '.spectral.yaml'))).map((result) => result.code),
    );
    expect([...codes].sort()).to.deep.equal([
      'rate-limit-headers',
      'request-string-limit',
      'request-string-restricted',
    ]);
  });
});
