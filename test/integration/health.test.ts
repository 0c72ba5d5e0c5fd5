import { expect } from 'chai';
import { request, startTestServer, type TestServer } from '../support/server.js';

const checkNames = [
  'draining',
  'eventStore',
  'readModels',
  'blobs',
  'idempotency',
  'storage',
  'consumers',
  'issuer',
  'capabilities',
];

describe('the health routes', () => {
  let server: TestServer;
  before(async () => {
    // A limit of one request a minute: the health routes are never limited.
    server = await startTestServer({ RATE_LIMIT: '1/1m' });
  });
  after(async () => server.close());

  it('answer liveness 200 without credentials', async () => {
    for (let n = 0; n < 3; n++) {
      const live = await request(`${server.url}/health/live`);
      expect(live.status).to.equal(200);
      expect(live.body).to.deep.equal({ status: 'alive' });
      expect(live.headers.get('cache-control')).to.equal('no-store');
    }
  });

  it('answer anonymous readiness 200 with its status alone, at /health too', async () => {
    for (const path of ['/health/ready', '/health']) {
      const ready = await request(`${server.url}${path}`);
      expect(ready.status, path).to.equal(200);
      expect(ready.body).to.deep.equal({ status: 'ready' });
    }
  });

  it('answer a wrong key, or a tenant-like one, as anonymous', async () => {
    const wrong: Record<string, string>[] = [
      { 'X-API-Key': `${server.platformAdminKey}x` },
      { Authorization: 'Bearer not-the-platform-key' },
    ];
    for (const headers of wrong) {
      const ready = await request(`${server.url}/health/ready`, { headers });
      expect(ready.body).to.deep.equal({ status: 'ready' });
    }
  });

  it('answer readiness 200 to the platform key (as X-API-Key or bearer) with every check passing and every consumer listed', async () => {
    const asked: [string, Record<string, string>][] = [
      ['/health/ready', { 'X-API-Key': server.platformAdminKey }],
      ['/health', { Authorization: `Bearer ${server.platformAdminKey}` }],
      ['/health/ready', { Authorization: `bearer ${server.platformAdminKey}` }],
    ];
    for (const [path, headers] of asked) {
      const ready = await request(`${server.url}${path}`, { headers });
      expect(ready.status, path).to.equal(200);
      expect(ready.body.status).to.equal('ready');
      expect(Object.keys(ready.body.checks)).to.have.members(checkNames);
      for (const name of checkNames) expect(ready.body.checks[name], name).to.deep.equal({ status: 'pass' });
      expect(ready.body.consumers).to.be.an('array');
      for (const consumer of ready.body.consumers as { name: string; state: string; lag?: number }[]) {
        expect(consumer.state, consumer.name).to.be.oneOf(['running', 'standby']);
        if (consumer.lag !== undefined) expect(consumer.lag).to.be.at.least(0);
      }
    }
  });

  describe('once the service drains', () => {
    before(() => server.service.beginDrain({ deadlineMs: 1000 }));

    it('answers anonymous readiness 503 with Retry-After and a problem type, without checks or detail', async () => {
      const ready = await request(`${server.url}/health/ready`);
      expect(ready.status).to.equal(503);
      expect(ready.headers.get('retry-after')).to.match(/^\d+$/);
      expect(ready.body).to.deep.equal({
        status: 'not-ready',
        type: '/problems/not-ready',
        title: 'The service should not get traffic now',
      });
    });

    it('answers the platform key 503 with Retry-After, and the members of a problem document', async () => {
      for (const path of ['/health/ready', '/health']) {
        const ready = await request(`${server.url}${path}`, {
          headers: { Authorization: `Bearer ${server.platformAdminKey}` },
        });
        expect(ready.status, path).to.equal(503);
        expect(ready.headers.get('retry-after')).to.match(/^\d+$/);
        expect(ready.body).to.deep.include({ status: 'not-ready', type: '/problems/not-ready' });
        expect(ready.body.checks.draining).to.deep.equal({
          status: 'fail',
          error: 'the process is shutting down',
        });
        expect(ready.body.detail).to.match(/^draining: /);
      }
    });

    it('still answers liveness 200', async () => {
      expect((await request(`${server.url}/health/live`)).status).to.equal(200);
    });
  });
});
