import { expect } from 'chai';
import { launchChromium, skipWithoutChromium } from '../support/browser.js';
import type { Browser, Route } from 'playwright-core';
import { createUser, password } from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

describe('the console’s stored credential', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: Browser;
  const email = 'ada@acme.test';

  before(async function () {
    skipWithoutChromium(this);
    server = await startTestServer();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('stays signed out when a token refresh answers after sign-out: the credential does not come back', async () => {
    const tenant = await withTenant(server);
    await createUser(server, tenant, { email, scopes: ['admin'] });
    const login = await request(`${server.url}/v1/auth/token`, {
      method: 'POST',
      body: { email, password, tenantId: tenant.tenantId },
    });
    expect(login.status, JSON.stringify(login.body)).to.equal(200);
    // An access token the API refuses (its signature spoilt), with a refresh token it accepts: the first
    // call of the console gets 401 and refreshes, as it does when the token has expired.
    const [header, payload] = (login.body.accessToken as string).split('.');
    const credential = {
      kind: 'user',
      tenantId: tenant.tenantId,
      email,
      accessToken: `${header}.${payload}.AAAA`,
      refreshToken: login.body.refreshToken as string,
    };

    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    let held!: (route: Route) => void;
    const refreshHeld = new Promise<Route>((resolve) => (held = resolve));
    await page.route('**/v1/auth/refresh', (route) => held(route));
    // The sign-out's own call to end the session on the server is lost on the way, so that the refresh
    // still gets a new pair: the console alone must keep it from coming back.
    await page.route('**/v1/auth/logout', (route) => route.abort());

    await page.goto(`${server.url}/console`);
    await page.evaluate(
      `sessionStorage.setItem('obs-console-credential', ${JSON.stringify(JSON.stringify(credential))});
       location.hash = '#/audit';`,
    );
    await page.reload();
    const route = await refreshHeld;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
    expect(await page.evaluate('sessionStorage.length + localStorage.length')).to.equal(0);

    // Now the refresh answers, with a new pair: the console signed out, so it must not keep it.
    const answered = page.waitForResponse('**/v1/auth/refresh');
    await route.continue();
    expect((await answered).status()).to.equal(200);
    await page.waitForTimeout(500);
    expect(await page.evaluate('sessionStorage.length + localStorage.length')).to.equal(0);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).to.equal(0);
    await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
    await context.close();
  });

  it('drops a stored entry that is no credential, and shows the sign-in page instead of failing to load', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${server.url}/console`);
    for (const entry of ['{not json', '{"kind":"apiKey"}', 'null', '[1,2]']) {
      await page.evaluate(`sessionStorage.setItem('obs-console-credential', ${JSON.stringify(entry)})`);
      await page.reload();
      await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
      expect(await page.evaluate('sessionStorage.length'), entry).to.equal(0);
    }
    expect(errors).to.deep.equal([]);
    await context.close();
  });
});
