import { expect } from 'chai';
import { launchChromium, pageWaitMs, skipWithoutChromium } from '../support/browser.js';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
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
    page.setDefaultTimeout(pageWaitMs);
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
    page.setDefaultTimeout(pageWaitMs);
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

  describe('signing in: the credential is checked before the console opens', () => {
    let tenant: Awaited<ReturnType<typeof withTenant>>;
    let context: BrowserContext;
    let page: Page;
    before(async () => {
      tenant = await withTenant(server, 'signin');
      await createUser(server, tenant, { email: 'bo@signin.test', scopes: ['admin'] });
    });
    beforeEach(async () => {
      context = await browser.newContext();
      page = await context.newPage();
      page.setDefaultTimeout(pageWaitMs);
      await page.goto(`${server.url}/console`);
    });
    afterEach(() => context.close());

    /** Signs in with the key, and answers the refusal shown, once it has the focus. */
    const refusalOfKey = async (key: string) => {
      await page.getByLabel('API key', { exact: true }).fill(key);
      await page.getByRole('button', { name: 'Sign in with the key' }).click();
      return shownRefusal();
    };
    const shownRefusal = async () => {
      const alert = page.getByRole('alert');
      await alert.waitFor();
      // The focus follows the render; waiting for it (not sampling it once) keeps a busy machine from failing this.
      await page.waitForFunction("document.activeElement?.getAttribute('role') === 'alert'", undefined, {
        timeout: 5_000,
      });
      await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).to.equal(0);
      expect(await page.evaluate('sessionStorage.length')).to.equal(0);
      return (await alert.textContent()) ?? '';
    };

    it('stays on the form with a well-formed key the service does not know, saying so', async () => {
      const last = tenant.adminKey.at(-1) === 'A' ? 'B' : 'A';
      const wrong = `${tenant.adminKey.slice(0, -1)}${last}`;
      expect(await refusalOfKey(wrong)).to.include('does not know this API key, or it was revoked');
    });

    it('stays on the form with a wrong password, saying so', async () => {
      await page.getByLabel('E-mail', { exact: true }).fill('bo@signin.test');
      await page.getByLabel('Password', { exact: true }).fill('not the password at all');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      expect(await shownRefusal()).to.include('The e-mail or the password is wrong');
    });

    it('says when it is rate limited, and for how long', async () => {
      await page.route('**/v1/tenants/*', (route) =>
        route.fulfill({
          status: 429,
          headers: { 'Retry-After': '30', 'Content-Type': 'application/problem+json' },
          body: JSON.stringify({ status: 429, title: 'Too many requests' }),
        }),
      );
      expect(await refusalOfKey(tenant.adminKey)).to.include('Too many attempts: try again in 30 seconds');
    });

    it('says when the service cannot be reached', async () => {
      await page.route('**/v1/auth/token', (route) => route.abort('connectionrefused'));
      await page.getByLabel('E-mail', { exact: true }).fill('bo@signin.test');
      await page.getByLabel('Password', { exact: true }).fill(password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      expect(await shownRefusal()).to.include('The service cannot be reached');
    });

    it('opens the console with a right key, and a key refused only the admin read enters too', async () => {
      const reader = await tenant.key(['observations:read']);
      await page.getByLabel('API key', { exact: true }).fill(reader);
      await page.getByRole('button', { name: 'Sign in with the key' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      await page
        .getByRole('navigation', { name: 'Screens' })
        .getByRole('link', { name: 'Observations' })
        .waitFor();
    });
  });
});
