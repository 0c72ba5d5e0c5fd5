import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '../support/adapters.js';
import { freePort, startTs, stop } from '../support/process.js';
import { platformKey, startServiceProcess } from '../support/service-process.js';

const pause = (ms: number) =>
  new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms));

describe('the service started with its settings', function () {
  this.timeout(60_000);

  it('exits with code 2 on a malformed setting, naming it and the form expected, before opening anything', async () => {
    const { dir, remove } = tempDir();
    const dataDir = join(dir, 'never-created');
    const service = startTs('src/main.ts', [], {
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      WEBHOOK_TIMEOUT: 'soon',
      WEBHOOK_RETRY_SCHEDUL: '1m',
    });
    try {
      const code = await Promise.race([service.exited, pause(20_000)]);
      expect(code, service.output.stderr).to.equal(2);
      expect(service.output.stderr).to.include(
        'configuration error: WEBHOOK_TIMEOUT=soon is not valid: expected a duration such as 30s',
      );
      // A misspelt name is often why a setting is missing: it is named after the error.
      expect(service.output.stderr).to.include(
        'warning: WEBHOOK_RETRY_SCHEDUL is not a setting of this service; did you mean WEBHOOK_RETRY_SCHEDULE?',
      );
      expect(
        existsSync(dataDir),
        'DATA_DIR was created: a store opened before the settings were checked',
      ).to.equal(false);
    } finally {
      if (service.child.exitCode === null) await stop(service.child, service.exited, 'SIGKILL');
      remove();
    }
  });

  it('logs a warning for a misspelt setting, then every setting with the secrets redacted, before it listens', async () => {
    const { dir, remove } = tempDir();
    const service = await startServiceProcess(dir, {
      WEBHOOK_TIMEOT: '5s',
      SMTP_URL: 'smtp://mailer:smtp-password-123@127.0.0.1:2525',
    });
    try {
      const lines = service.output.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map(
          (line) =>
            JSON.parse(line) as { level: number; msg: string; settings?: Record<string, string | null> },
        );
      const warning = lines.findIndex((line) => line.msg.startsWith('WEBHOOK_TIMEOT is not a setting'));
      const configuration = lines.findIndex((line) => line.msg === 'configuration');
      const listening = lines.findIndex((line) => line.msg.startsWith('listening on'));
      expect(warning, service.output.stdout).to.be.greaterThan(-1);
      expect(lines[warning]!.level).to.equal(40);
      expect(lines[warning]!.msg).to.include('did you mean WEBHOOK_TIMEOUT?');
      expect(configuration).to.be.greaterThan(warning);
      expect(listening).to.be.greaterThan(configuration);
      expect(lines[configuration]!.level).to.equal(30);
      expect(lines[configuration]!.settings).to.deep.include({
        DATA_DIR: dir,
        WEBHOOK_TIMEOUT: '30s',
        PLATFORM_ADMIN_KEY: '[redacted] (given)',
        CURSOR_SECRET: 'generated in development',
        SMTP_URL: 'smtp://mailer:[redacted]@127.0.0.1:2525',
      });
      expect(service.output.stdout).not.to.include('smtp-password-123');
      expect(service.output.stdout).not.to.include(platformKey);
    } finally {
      await stop(service.child, service.exited);
      remove();
    }
  });

  describe('on a port another process holds', () => {
    let holder: Server;
    let port: number;
    before(async () => {
      holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      port = (holder.address() as { port: number }).port;
    });
    after(() => new Promise<void>((resolve) => holder.close(() => resolve())));

    const fatalLines = (stdout: string) =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.level === 60);

    for (const [setting, env] of [
      ['PORT', (taken: number) => ({ PORT: String(taken) })],
      ['METRICS_PORT', (taken: number) => ({ METRICS: 'port', METRICS_PORT: String(taken) })],
    ] as const) {
      it(`exits with code 3 and one log line naming the port and ${setting}, without a stack trace`, async () => {
        const { dir, remove } = tempDir();
        const service = startTs('src/main.ts', [], {
          DATA_DIR: dir,
          HOST: '127.0.0.1',
          PORT: String(await freePort()),
          PLATFORM_ADMIN_KEY: platformKey,
          ...env(port),
        });
        try {
          const code = await Promise.race([service.exited, pause(30_000)]);
          expect(code, service.output.stdout + service.output.stderr).to.equal(3);
          const fatal = fatalLines(service.output.stdout);
          expect(fatal).to.have.length(1);
          expect(fatal[0]!.msg).to.equal(
            `cannot listen on 127.0.0.1:${port}: port ${port} is in use by another process; stop it, or set ${setting} to a free port`,
          );
          expect(service.output.stderr).not.to.match(/EADDRINUSE|\n\s+at /);
        } finally {
          if (service.child.exitCode === null) await stop(service.child, service.exited, 'SIGKILL');
          remove();
        }
      });
    }
  });
});
