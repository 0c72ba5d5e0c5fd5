import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temporary directory for one test's embedded stores, removed by the returned function. */
export const tempDir = (): { dir: string; remove: () => void } => {
  const dir = mkdtempSync(join(tmpdir(), 'obs-test-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
};

/**
 * Declares a suite for a backend that may not be reachable here. Without its URL the suite prints that it
 * was skipped, and mocha counts its tests as pending, never as passed.
 */
export const describeBackend = (name: string, envVar: string, body: (url: string) => void): void => {
  const url = process.env[envVar];
  describe(name, function () {
    if (!url) {
      it(`is skipped because ${envVar} is not set`, function () {
        console.log(`      skipped: the ${name} suite needs ${envVar}; no such server on this machine`);
        this.skip();
      });
      return;
    }
    body(url);
  });
};
