import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import * as oauth from 'oauth4webapi';
import * as openid from 'openid-client';
import { tempDir } from '../support/adapters.js';
import { eventually } from '../support/events.js';
import { freePort } from '../support/process.js';
import { request } from '../support/server.js';
import { platformKey } from '../support/service-process.js';

/**
 * OAuth discovery as the README has a newcomer do it: the service started with `npm start` and no
 * PUBLIC_URL, reached at `http://127.0.0.1:<PORT>`, by two OAuth libraries we did not write. Each checks
 * that the metadata's issuer is the URL it asked (RFC 8414 §3.3), then gets a client-credentials token.
 */
describe('OAuth discovery with the default settings', function () {
  this.timeout(90_000);
  let service: ChildProcess | undefined;
  let remove = () => {};
  let url = '';
  let client = { clientId: '', clientSecret: '' };

  before(async () => {
    const dir = tempDir();
    remove = dir.remove;
    const port = await freePort();
    const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: dir.dir, PORT: String(port) };
    delete env.PUBLIC_URL;
    delete env.HOST;
    service = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...env, PLATFORM_ADMIN_KEY: platformKey },
      stdio: 'ignore',
    });
    url = `http://127.0.0.1:${port}`;
    await eventually(
      () =>
        fetch(`${url}/health/live`).then(
          (answer) => answer.ok,
          () => false,
        ),
      60_000,
    );
    const tenant = await request(`${url}/v1/tenants`, {
      method: 'POST',
      body: { name: 'Acme', notificationEmail: 'ops@acme.test' },
      headers: { 'X-API-Key': platformKey },
    });
    const created = await request(`${url}/v1/tenants/${tenant.body.id}/oauth-clients`, {
      method: 'POST',
      body: { name: 'worker', scopes: ['observations:read'] },
      headers: { 'X-API-Key': tenant.body.adminApiKey },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    client = created.body;
  });

  after(async () => {
    service?.kill('SIGTERM');
    if (service && service.exitCode === null) await new Promise((resolve) => service!.once('exit', resolve));
    remove();
  });

  it('lets oauth4webapi discover the service at http://127.0.0.1:<PORT> and get a token', async () => {
    const issuer = new URL(url);
    const options = { [oauth.allowInsecureRequests]: true, algorithm: 'oauth2' as const };
    const server = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, options),
    );
    expect(server.issuer).to.equal(url);
    const answer = await oauth.clientCredentialsGrantRequest(
      server,
      { client_id: client.clientId },
      oauth.ClientSecretBasic(client.clientSecret),
      new URLSearchParams(),
      options,
    );
    const tokens = await oauth.processClientCredentialsResponse(
      server,
      { client_id: client.clientId },
      answer,
    );
    expect(tokens.token_type).to.equal('bearer');
    expect(tokens.scope).to.equal('observations:read');
  });

  it('lets openid-client discover the service at http://127.0.0.1:<PORT> and get a token', async () => {
    const configuration = await openid.discovery(
      new URL(url),
      client.clientId,
      client.clientSecret,
      undefined,
      { execute: [openid.allowInsecureRequests], algorithm: 'oauth2' },
    );
    expect(configuration.serverMetadata().issuer).to.equal(url);
    const tokens = await openid.clientCredentialsGrant(configuration);
    expect(tokens.access_token).to.be.a('string');
  });
});
