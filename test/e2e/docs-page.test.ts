import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';

/** Debian's chromium (`apt-get install -y chromium`); the test skips, saying so, without it. */
const executablePath = '/usr/bin/chromium';
export const docsScreenshot = '/tmp/docs-page.png';

/**
 * GET /docs in a real headless browser: the page renders the OpenAPI document with the Redoc bundle the
 * service serves itself, under its own Content-Security-Policy, without a single request elsewhere.
 */
describe('the documentation page in a browser', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: Browser;

  before(async function () {
    if (!existsSync(executablePath)) {
      console.log(`    skipped: ${executablePath} is not installed (apt-get install -y chromium)`);
      this.skip();
    }
    server = await startTestServer();
    browser = await chromium.launch({
      executablePath,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('renders the API with its authentication and webhooks sections, offline and within its CSP', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const elsewhere: string[] = [];
    const problems: string[] = [];
    // Anything not from the service is refused, and remembered: the page must need nothing else.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${server.url}/`) || url.startsWith('data:') || url.startsWith('blob:'))
        return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    const blockedByPolicy: string[] = [];
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      // Redoc's footer shows its logo from its CDN, and hides it when it does not load: the page's CSP
      // refuses it, as it refuses anything from another origin.
      if (/cdn\.redoc\.ly.*violates the following Content Security Policy/.test(message.text()))
        blockedByPolicy.push(message.text());
      else problems.push(`console: ${message.text()}`);
    });

    const response = await page.goto(`${server.url}/docs`, { waitUntil: 'load' });
    expect(response?.status()).to.equal(200);
    expect(response?.headers()['content-security-policy']).to.include("script-src 'self'");

    // Redoc has rendered the document: its title, the operations, the security schemes.
    await page
      .getByRole('heading', { name: /Observation service/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await page.getByRole('heading', { name: 'Record an observation' }).first().waitFor();
    const text = await page.locator('body').innerText();
    expect(text).to.include('Authentication');
    for (const scheme of ['apiKey', 'bearer', 'oauth2']) expect(text).to.include(scheme);
    expect(text).to.include('X-API-Key');
    expect(text).to.match(/Client Credentials|clientCredentials/i);
    expect(text).to.include(`${server.url}/v1/oauth/token`);
    // The webhooks: their section in the menu, with an entry per event type (`<type>: <what happened>`).
    expect(text).to.include('Webhook events');
    expect(text).to.include('Webhook subscriptions');
    for (const type of [
      'observation.created',
      'observation.updated',
      'cv.job.completed',
      'cv.job.failed',
      'visit.submitted',
    ]) {
      expect(text).to.include(`${type}: `);
    }

    await page.screenshot({ path: docsScreenshot, fullPage: false });
    // The sections can be reached from the menu, as a reader would.
    await page.getByText('Webhook events', { exact: true }).first().click();
    await page.screenshot({ path: docsScreenshot.replace('.png', '-webhooks.png') });

    expect(elsewhere, 'requests to other origins').to.deep.equal([]);
    expect(problems).to.deep.equal([]);
    await context.close();
  });
});
