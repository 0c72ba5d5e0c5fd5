import { expect } from 'chai';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { rotateKeys } from '../../src/auth/signing-keys.js';
import { tempDir } from '../support/adapters.js';
import { describePostgres, suiteDatabase } from '../support/postgres.js';
import { request, startTestServer, type TestServer } from '../support/server.js';

describePostgres('the request rate limit on PostgreSQL', () => {
  let servers: TestServer[];
  const keys = tempDir();
  const database = suiteDatabase();
  after(() => keys.remove());
  beforeEach(async () => {
    // Two instances on one database, each with its own DATA_DIR, as on two machines: with the same secrets
    // and keyring, or the second would refuse to start (docs/operations.md#shared-secrets).
    const keyring = join(keys.dir, 'signing-keys.json');
    if (!existsSync(keyring)) rotateKeys(keyring);
    const env = {
      DATABASE_URL: database(),
      RATE_LIMIT: '3/1m',
      TRUST_PROXY: '1',
      PLATFORM_ADMIN_KEY: 'rate-limit-shared-platform-key-0123456789',
      WEBHOOK_SECRET_KEY: 'rate-limit-shared-webhook-key-0123456789',
      IDEMPOTENCY_SECRET_KEY: 'rate-limit-shared-idempotency-key-0123456789',
      SIGNING_KEYS_FILE: keyring,
      // One address for both instances, as behind a load balancer: a second one would not start.
      PUBLIC_URL: 'http://127.0.0.1:3000',
    };
    servers = [await startTestServer(env), await startTestServer(env)];
  });
  afterEach(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('holds for the instances together, not for each one', async () => {
    // An address of this test's own: the windows outlive the test in the run's database.
    const client = { 'X-Forwarded-For': `198.51.100.${randomInt(1, 255)}, 203.0.113.${randomInt(1, 255)}` };
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    for (const server of [servers[0]!, servers[1]!, servers[0]!, servers[1]!]) {
      const response = await request(`${server.url}/v1/openapi.json`, { headers: client });
      statuses.push(response.status);
      remaining.push(response.headers.get('ratelimit'));
    }
    expect(statuses).to.deep.equal([200, 200, 200, 429]);
    expect(remaining.map((header) => /r=(\d+)/.exec(header ?? '')?.[1])).to.deep.equal(['2', '1', '0', '0']);
  });
});
