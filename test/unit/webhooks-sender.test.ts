import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkReceiverUrl, webhookSender } from '../../src/webhooks/sender.js';
import { signatureHeaders } from '../../src/webhooks/signing.js';
import { hostNotAllowed } from '../../src/webhooks/ssrf.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { sleep } from '../support/wait.js';

const secret = 'whsec-test-0123456789abcdef';
/** Headers the receiver verifies, so that what it answers is up to the test. */
const signed = (body: string) => signatureHeaders('evt_1', body, secret, new Date());

/** Only loopback receivers on this machine: nothing here sends anything anywhere else. */
describe('the webhook sender', () => {
  let receiver: Receiver;
  const senders: ReturnType<typeof webhookSender>[] = [];
  const sender = (allowPrivateNetworks: boolean, timeoutMs = 500) => {
    const created = webhookSender({ timeoutMs, allowPrivateNetworks, allowLoopback: false });
    senders.push(created);
    return created;
  };
  let answer: (n: number) => number | 'hang' | { status: number; headers: Record<string, string> } = () =>
    204;
  beforeEach(async () => {
    answer = () => 204;
    receiver = await startReceiver(secret, (n) => answer(n));
  });
  afterEach(async () => {
    for (const created of senders.splice(0)) await created.close();
    await receiver.close();
  });

  describe('at connect time, with private networks refused', () => {
    it('refuses a host name that resolves to loopback, and the receiver gets no request', async () => {
      const outcome = await sender(false).send('t_test', `http://localhost:${receiver.port}/hooks`, '{}', {});
      expect(outcome.ok).to.equal(false);
      expect(outcome.statusCode).to.equal(null);
      expect(outcome.error).to.equal('localhost resolves to a forbidden address');
      // On purpose: a request the sender wrote before refusing would reach the receiver a moment later.
      await sleep(100);
      expect(receiver.received).to.have.length(0);
    });

    for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '127.1']) {
      it(`refuses the IP literal ${host}, and the receiver gets no request`, async () => {
        const outcome = await sender(false).send('t_test', `http://${host}:${receiver.port}/hooks`, '{}', {});
        expect(outcome).to.deep.include({ ok: false, statusCode: null });
        expect(outcome.error).to.match(/forbidden address/);
        await sleep(100);
        expect(receiver.received).to.have.length(0);
      });
    }
  });

  describe('with private networks allowed', () => {
    it('POSTs the body as JSON with the given headers and reports a 2xx as success', async () => {
      const headers = signed('{"a":1}');
      const outcome = await sender(true).send(
        't_test',
        `http://localhost:${receiver.port}/hooks`,
        '{"a":1}',
        headers,
      );
      expect(outcome).to.deep.include({ ok: true, statusCode: 204, error: null });
      expect(outcome.durationMs).to.be.a('number').and.at.least(0);
      const [request] = receiver.received;
      expect(request!.rawBody).to.equal('{"a":1}');
      expect(request!.headers['content-type']).to.equal('application/json');
      expect(request!.headers['x-service-signature']).to.equal(headers['X-Service-Signature']);
      expect(request!.headers['webhook-signature']).to.equal(headers['webhook-signature']);
      expect(request!.verified).to.equal(true);
    });

    it('reports any other status as a failure: 401 from a receiver that cannot verify the signature', async () => {
      expect(await sender(true).send('t_test', receiver.url, '{}', signed('{"a":2}'))).to.deep.include({
        ok: false,
        statusCode: 401,
        error: 'HTTP 401',
      });
    });
  });

  describe('receivers that do not answer 2xx', () => {
    it('does not follow a redirect: a 3xx is a failure', async () => {
      answer = () => ({ status: 307, headers: { Location: `http://127.0.0.1:${receiver.port}/elsewhere` } });
      const outcome = await sender(true).send('t_test', receiver.url, '{}', signed('{}'));
      expect(outcome).to.deep.include({ ok: false, statusCode: 307, error: 'HTTP 307' });
      // On purpose: a followed redirect would reach the receiver a moment later.
      await sleep(100);
      expect(receiver.received.map((r) => r.path)).to.deep.equal(['/hooks']);
    });

    it('gives up on a receiver that does not answer within the time-out', async () => {
      answer = () => 'hang';
      const started = Date.now();
      const outcome = await sender(true, 300).send('t_test', receiver.url, '{}', signed('{}'));
      expect(outcome).to.deep.include({ ok: false, statusCode: null, error: 'no answer within 300 ms' });
      expect(Date.now() - started).to.be.below(3000);
    });

    it('keeps the status of a receiver whose answer stops half-way, and says what did not arrive', async () => {
      // Headers at once, then one byte of the body and nothing more.
      const trickling = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('o');
      });
      await new Promise<void>((done) => trickling.listen(0, '127.0.0.1', done));
      const { port } = trickling.address() as AddressInfo;
      try {
        const outcome = await sender(true, 300).send(
          't_test',
          `http://127.0.0.1:${port}/hooks`,
          '{}',
          signed('{}'),
        );
        expect(outcome).to.deep.include({
          ok: false,
          statusCode: 200,
          error: 'HTTP 200, but the rest of the answer did not arrive within 300 ms',
        });
      } finally {
        trickling.closeAllConnections();
        await new Promise((done) => trickling.close(done));
      }
    });

    it('reports a refused connection as a failure with the error', async () => {
      const port = receiver.port;
      await receiver.close();
      receiver = await startReceiver(secret);
      const outcome = await sender(true).send('t_test', `http://127.0.0.1:${port}/hooks`, '{}', {});
      expect(outcome).to.deep.include({ ok: false, statusCode: null });
      expect(outcome.error).to.be.a('string').and.not.equal('');
    });
  });
});

describe('the receiver URL check at creation', () => {
  const strict = { allowHttp: false, allowPrivateNetworks: false, allowLoopback: false };

  it('wants an absolute https URL, http only when allowed, and no credentials', async () => {
    expect(await checkReceiverUrl('/relative', strict)).to.equal('must be an absolute URL');
    expect(
      await checkReceiverUrl('http://203.0.113.1/x', { ...strict, allowPrivateNetworks: true }),
    ).to.equal('must be an https URL (http only with WEBHOOK_ALLOW_HTTP=true)');
    expect(
      await checkReceiverUrl('http://127.0.0.1/x', {
        ...strict,
        allowHttp: true,
        allowPrivateNetworks: true,
      }),
    ).to.equal(null);
    expect(
      await checkReceiverUrl('ftp://127.0.0.1/x', { ...strict, allowHttp: true, allowPrivateNetworks: true }),
    ).to.equal('must be an http or https URL');
    expect(
      await checkReceiverUrl('https://u:p@127.0.0.1/x', { ...strict, allowPrivateNetworks: true }),
    ).to.equal('must not carry credentials');
  });

  it('refuses forbidden IP literals and a host name that resolves to loopback, without connecting', async () => {
    for (const url of [
      'https://10.0.0.1/x',
      'https://169.254.169.254/latest',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://0.0.0.0/',
    ]) {
      expect(await checkReceiverUrl(url, strict), url).to.equal(hostNotAllowed);
    }
    expect(await checkReceiverUrl('https://localhost/x', strict)).to.equal(hostNotAllowed);
  });

  it('allows loopback receivers, over http too, where loopback is allowed (development), and nothing else private', async () => {
    const development = { ...strict, allowLoopback: true };
    for (const url of ['http://127.0.0.1:4000/hooks', 'http://localhost:4000/hooks', 'https://[::1]/hooks'])
      expect(await checkReceiverUrl(url, development), url).to.equal(null);
    expect(await checkReceiverUrl('https://10.0.0.1/x', development)).to.equal(hostNotAllowed);
    expect(await checkReceiverUrl('http://93.184.216.34/x', development)).to.equal(
      'must be an https URL (http only for a loopback receiver, or with WEBHOOK_ALLOW_HTTP=true)',
    );
  });

  it('accepts public IP literals (checked as strings: nothing connects)', async () => {
    expect(await checkReceiverUrl('https://93.184.216.34/hooks', strict)).to.equal(null);
    expect(await checkReceiverUrl('https://[2606:4700::1111]/hooks', strict)).to.equal(null);
  });
});
