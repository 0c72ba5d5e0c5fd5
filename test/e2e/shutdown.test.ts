import { expect } from 'chai';
import { Agent } from 'node:http';
import { tempDir } from '../support/adapters.js';
import { testImage } from '../support/images.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request } from '../support/server.js';
import {
  createTenant,
  platformKey,
  slowPost,
  splitGet,
  startServiceProcess,
} from '../support/service-process.js';

const secret = 'whsec-shutdown-0123456789abcdef';
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a service process told to stop (SIGTERM)', function () {
  this.timeout(60_000);

  describe('while slow clients upload images', () => {
    const { dir, remove } = tempDir();
    after(remove);

    it('finishes the uploads with 201, refuses new connections, answers readiness 503, then exits 0', async () => {
      const service = await startServiceProcess(dir, { SHUTDOWN_TIMEOUT: '10s' });
      const { tenantId, headers } = await createTenant(service.url);
      const created = await request(`${service.url}/v1/tenants/${tenantId}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'photographed slowly' },
        headers,
      });
      expect(created.status).to.equal(201);
      const media = `${service.url}/v1/tenants/${tenantId}/observations/${created.body.id}/media`;
      const agent = new Agent({ keepAlive: true });
      // Three uploads, each sent in 12 pieces over 2.2 s, on kept-alive connections.
      const uploads = await Promise.all(
        [40, 120, 200].map(async (value) => {
          const bytes = await testImage({ width: 64, height: 48, format: 'png', background: value });
          return slowPost(media, { ...headers, 'content-type': 'application/octet-stream' }, bytes, {
            chunks: 12,
            intervalMs: 200,
            agent,
          });
        }),
      );
      await Promise.all(uploads.map((upload) => upload.sending));
      // A readiness request already begun on its connection when the signal comes.
      const readiness = await splitGet(service.port, '/health/ready', { 'X-API-Key': platformKey });
      await pause(100);

      const signalled = Date.now();
      service.child.kill('SIGTERM');
      // A real wait, for another process: time to handle the signal and close its listener.
      await pause(300);
      const late = await fetch(`${service.url}/health/live`).then(
        (response) => `answered ${response.status}`,
        (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message,
      );
      expect(late, 'a new connection after SIGTERM').to.equal('ECONNREFUSED');
      const ready = await readiness.finish();
      expect(ready.status).to.equal(503);
      expect(ready.headers.connection).to.equal('close');
      expect(JSON.parse(ready.body)).to.deep.include({ status: 'not-ready', type: '/problems/not-ready' });
      expect(JSON.parse(ready.body).checks.draining.status).to.equal('fail');

      const answers = await Promise.all(uploads.map((upload) => upload.response));
      const finishedAfterMs = Date.now() - signalled;
      expect(answers.map((answer) => answer.status)).to.deep.equal([201, 201, 201]);
      expect(answers.map((answer) => answer.headers.connection)).to.deep.equal(['close', 'close', 'close']);
      expect(await service.exited).to.equal(0);
      const exitedAfterMs = Date.now() - signalled;
      agent.destroy();
      console.log(
        `      uploads finished ${finishedAfterMs} ms after SIGTERM; the process exited 0 after ${exitedAfterMs} ms`,
      );
      expect(exitedAfterMs).to.be.below(6000);

      // Everything the uploads answered 201 for is stored.
      const again = await startServiceProcess(dir);
      try {
        const read = await request(`${again.url}/v1/tenants/${tenantId}/observations/${created.body.id}`, {
          headers,
        });
        expect(read.body.media).to.have.length(3);
      } finally {
        again.child.kill('SIGTERM');
        expect(await again.exited).to.equal(0);
      }
    });
  });

  describe('with its log read', () => {
    it('writes its last log lines, `requests drained` and `stopped`, before it exits 0', async () => {
      const { dir, remove } = tempDir();
      try {
        const service = await startServiceProcess(dir);
        service.child.kill('SIGTERM');
        expect(await service.exited).to.equal(0);
        const messages = service.output.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => (JSON.parse(line) as { msg: string }).msg);
        expect(messages.slice(-3), service.output.stdout.slice(-2000)).to.deep.equal([
          'shutting down: draining',
          'requests drained; stopping the consumers',
          'stopped',
        ]);
      } finally {
        remove();
      }
    });
  });

  describe('while nobody reads its log', () => {
    it('exits within SHUTDOWN_TIMEOUT and the 2 s log drain, instead of waiting for stdout forever', async () => {
      const { dir, remove } = tempDir();
      const service = await startServiceProcess(dir, { SHUTDOWN_TIMEOUT: '2s' });
      try {
        // A stalled log reader: the pipe fills, and writes to it would block.
        service.child.stdout.pause();
        service.child.stdout.removeAllListeners('data');
        // Each request logs a line with its path: 2,000 of 2 KB fill the pipe many times over.
        for (let batch = 0; batch < 40; batch += 1) {
          await Promise.all(
            Array.from({ length: 50 }, () =>
              fetch(`${service.url}/not-here/${'x'.repeat(2000)}`).then((response) => response.text()),
            ),
          );
        }
        const stopping = Date.now();
        service.child.kill('SIGTERM');
        const code = await Promise.race([service.exited, pause(15_000).then(() => 'still running')]);
        expect(code, 'exit code').to.equal(0);
        expect(Date.now() - stopping).to.be.below(10_000);
      } finally {
        service.child.kill('SIGKILL');
        remove();
      }
    });
  });

  describe('while a webhook receiver hangs', () => {
    const { dir, remove } = tempDir();
    let receiver: Receiver;
    before(async () => {
      receiver = await startReceiver(secret, (n) => (n === 1 ? 'hang' : 204));
    });
    after(async () => {
      await receiver.close();
      remove();
    });

    it('does not wait past SHUTDOWN_TIMEOUT, and the cut delivery is attempted again after a restart', async () => {
      const env = {
        SHUTDOWN_TIMEOUT: '2s',
        WEBHOOK_TIMEOUT: '30s',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      };
      const service = await startServiceProcess(dir, env);
      const { tenantId, headers } = await createTenant(service.url, 'hanging');
      const subscribed = await request(`${service.url}/v1/tenants/${tenantId}/webhooks`, {
        method: 'POST',
        body: { url: receiver.url, events: ['observation.created'], secret },
        headers,
      });
      expect(subscribed.status).to.equal(201);
      const created = await request(`${service.url}/v1/tenants/${tenantId}/observations`, {
        method: 'POST',
        body: { observedAt: '2026-05-01T09:30:00Z', notes: 'to a receiver that hangs' },
        headers,
      });
      expect(created.status).to.equal(201);
      const [first] = await receiver.waitFor(1);

      const signalled = Date.now();
      service.child.kill('SIGTERM');
      expect(await service.exited).to.equal(0);
      const exitedAfterMs = Date.now() - signalled;
      expect(exitedAfterMs).to.be.below(3500);
      expect(receiver.received).to.have.length(1);

      const restarted = Date.now();
      const again = await startServiceProcess(dir, env);
      try {
        const [, second] = await receiver.waitFor(2, 15_000);
        console.log(
          `      exited ${exitedAfterMs} ms after SIGTERM with the attempt hanging; attempted again ` +
            `${second!.at - restarted} ms after the restart began`,
        );
        expect(second!.headers['webhook-id']).to.equal(first!.headers['webhook-id']);
        expect(second!.status).to.equal(204);
      } finally {
        again.child.kill('SIGTERM');
        expect(await again.exited).to.equal(0);
      }
    });
  });
});
