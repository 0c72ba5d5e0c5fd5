import { expect } from 'chai';
import { launchChromium, skipWithoutChromium } from '../support/browser.js';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';

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
    skipWithoutChromium(this);
    server = await startTestServer();
    browser = await launchChromium();
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
    // Any console error counts, a refusal by the page's Content-Security-Policy among them.
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    // Every request must succeed: an aborted or refused one, or an answer of 400 or more (a missing icon).
    const failed: string[] = [];
    page.on('requestfailed', (request) =>
      failed.push(`${request.url()}: ${request.failure()?.errorText ?? 'failed'}`),
    );
    page.on('response', (answer) => {
      if (answer.status() >= 400) failed.push(`${answer.url()}: ${answer.status()}`);
    });
    // The policy's refusals as the page sees them, whether or not the browser logs them. Scripts that run
    // in the page are text: the project's TypeScript has no DOM types.
    await page.addInitScript(`
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) =>
        window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI));
    `);

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
    expect(failed, 'failed requests').to.deep.equal([]);
    expect(await page.evaluate<string[]>('window.cspViolations'), 'CSP violations').to.deep.equal([]);
    expect(problems).to.deep.equal([]);
    await context.close();
  });

  // Apart, because with any route set Playwright lets no request for a favicon.ico through, and reports
  // none: the browser is asked to draw the icon the page names, which fails unless it is served and allowed.
  it('names the service’s own icon, which the browser draws under the page’s policy', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.url}/docs`, { waitUntil: 'domcontentloaded' });
    const icon = await page.evaluate<{ href: string; width: number }>(`(async () => {
      const href = document.querySelector('link[rel="icon"]')?.href ?? '';
      const image = new Image();
      image.src = href;
      await image.decode();
      return { href, width: image.naturalWidth };
    })()`);
    expect(icon.href).to.equal(`${server.url}/favicon.ico`);
    expect(icon.width).to.be.greaterThan(0);
    const answer = await page.request.get(icon.href);
    expect(answer.status()).to.equal(200);
    expect(answer.headers()['content-type']).to.equal('image/svg+xml');
    expect(answer.headers()['cache-control']).to.equal('public, max-age=604800');
    await context.close();
  });
});
