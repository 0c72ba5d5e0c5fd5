import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A temporary directory, removed by `remove`. `inMemory` puts it on /dev/shm where there is one: a test of
 * what thousands of appends do to the heap is not a test of the disk, whose fsyncs on a busy machine took
 * longer than the test's time-out.
 */
export const tempDir = ({ inMemory = false } = {}): { dir: string; remove: () => void } => {
  const base = inMemory && existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = mkdtempSync(join(base, 'obs-test-'));
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
