import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser, type Route } from 'playwright-core';
import { createUser, password } from '../support/auth.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/** Debian's chromium (`apt-get install -y chromium`); the browser test skips, saying so, without it. */
const executablePath = '/usr/bin/chromium';

describe('the console signing out while a token refresh is on its way', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: Browser;
  const email = 'ada@acme.test';

  before(async function () {
    if (!existsSync(executablePath)) {
      console.log(`    skipped: ${executablePath} is not installed (apt-get install -y chromium)`);
      this.skip();
    }
    server = await startTestServer();
    browser = await chromium.launch({
      executablePath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('stays signed out: the refresh that answers afterwards does not bring the credential back', async () => {
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
});
