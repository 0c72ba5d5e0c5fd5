import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { freePort } from '../support/process.js';

/**
 * What a person sees who runs the service in a terminal: readable lines (pino-pretty), not JSON, the
 * generated platform key on a line of its own, and on SIGTERM the last lines before the exit. The terminal
 * is a real pseudo-terminal, made by util-linux's `script`; where it is missing, the suite says it skipped.
 */
const withoutColours = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, ''); // eslint-disable-line no-control-regex

describe('logs on a terminal', function () {
  this.timeout(90_000);

  before(function () {
    if (!existsSync('/usr/bin/script')) {
      console.log('    (skipped: util-linux `script`, which makes the pseudo-terminal, is not installed)');
      this.skip();
    }
  });

  it('are readable lines with the platform key apart, and end with the shutdown lines', async () => {
    const { dir, remove } = tempDir();
    const transcript = join(dir, 'terminal.txt');
    const port = await freePort();
    const env: Record<string, string | undefined> = {
      ...process.env,
      DATA_DIR: join(dir, 'data'),
      PORT: String(port),
    };
    delete env.NODE_ENV;
    delete env.NO_COLOR;
    const terminal = spawn('script', ['-qfec', `${process.execPath} --import tsx src/main.ts`, transcript], {
      env,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => terminal.once('exit', resolve));
    try {
      const shown = () => (existsSync(transcript) ? withoutColours(readFileSync(transcript, 'utf8')) : '');
      await eventually(() => /INFO[^\n]*: listening on http:\/\/127\.0\.0\.1:/.test(shown()), 60_000);
      const lines = shown();
      expect(lines).not.to.match(/^\{"level"/m);
      expect(lines).to.match(
        /WARN[^\n]*: PLATFORM_ADMIN_KEY is not set: generated a development platform admin key/,
      );
      expect(lines).to.match(/^ {4}platformAdminKey: "[A-Za-z0-9_-]{32,}"/m);
      const pid = Number(/pid (\d+)/.exec(lines)?.[1]);
      expect(pid).to.be.above(0);
      process.kill(pid, 'SIGTERM');
      expect(await exited).to.equal(0);
      expect(shown()).to.match(/INFO[^\n]*: stopped/);
    } finally {
      if (terminal.exitCode === null) terminal.kill('SIGKILL');
      remove();
    }
  });
});
