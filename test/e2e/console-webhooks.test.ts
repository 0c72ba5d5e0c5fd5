import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import {
  accessibilityViolations,
  launchChromium,
  pageWaitMs,
  skipWithoutChromium,
} from '../support/browser.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/** Where the screenshots go: the ignored folder of console.test.ts. */
const shots = new URL('../../.screenshots/console/', import.meta.url);

const secret = `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The webhook pages against a real receiver that answers 500 to everything, in Chromium at 1280×800 and
 * 390×844: the Failing badge, the delivery log paged past 200 attempts, an attempt's drawer with its
 * payload and the signed headers, pause and delete; no console error, no failed request, no serious axe
 * finding and no sideways scroll on a phone.
 */
describe('the console webhook pages, with a failing receiver', function () {
  this.timeout(180_000);
  let server: TestServer;
  let browser: Browser;
  let failing: Receiver;
  let tenantId: string;
  let adminKey: string;
  let webhookId: string;
  const problems: string[] = [];

  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenantId}${path}`, {
      ...init,
      headers: { 'X-API-Key': adminKey, ...init.headers },
    });

  /** A signed-in page at this size, whose console errors and failed requests are problems. */
  const signedIn = async (
    width: number,
    height: number,
  ): Promise<{ page: Page; context: BrowserContext }> => {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    page.setDefaultTimeout(pageWaitMs);
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('requestfailed', (failed) => problems.push(`request failed: ${failed.url()}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
    });
    await page.goto(`${server.url}/console`);
    await page.getByLabel('API key', { exact: true }).fill(adminKey);
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    return { page, context };
  };

  /** Axe, the page's width against the screen's, and a screenshot. */
  const check = async (page: Page, name: string) => {
    expect(await accessibilityViolations(page), name).to.deep.equal([]);
    const overflow = await page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow, `${name}: the page scrolls sideways by ${overflow} px`).to.be.at.most(0);
    await page.screenshot({ path: new URL(`${name}.png`, shots).pathname, fullPage: true });
  };

  before(async function () {
    skipWithoutChromium(this);
    mkdirSync(shots, { recursive: true });
    server = await startTestServer({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_TIMEOUT: '2s',
    });
    ({ tenantId, adminKey } = await withTenant(server));
    failing = await startReceiver(secret, () => ({ status: 500, body: 'database unavailable' }));
    const created = await api('/webhooks', {
      method: 'POST',
      body: { url: failing.url, events: ['observation.created'], secret },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    webhookId = created.body.id as string;
    // 230 attempts: test events, four at a time (a subscription's slots), each failing at once.
    for (let sent = 0; sent < 230; sent += 4)
      await Promise.all(
        Array.from({ length: Math.min(4, 230 - sent) }, () =>
          api(`/webhooks/${webhookId}/test`, { method: 'POST' }),
        ),
      );
    await eventually(async () => {
      const health = (await api(`/webhooks/${webhookId}`)).body.health as { attempts: number };
      return health.attempts === 100 ? true : undefined;
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await failing?.close();
    await server?.close();
  });
  afterEach(() => {
    expect(problems).to.deep.equal([]);
  });

  for (const [width, height, size] of [
    [1280, 800, 'desktop'],
    [390, 844, 'phone'],
  ] as const) {
    it(`shows the subscription failing in the list, at ${size} size`, async () => {
      const { page, context } = await signedIn(width, height);
      await page.goto(`${server.url}/console#/webhooks`);
      const row = page.locator(`tr[data-webhook="${webhookId}"]`);
      await row.locator('.badge.failing', { hasText: 'Failing' }).waitFor();
      expect(await row.textContent()).to.include('0%');
      expect(await row.textContent()).to.include('HTTP 500 Internal Server Error');
      await check(page, `webhooks-health-${size}`);
      await context.close();
    });

    it(`pages the delivery log past 200 attempts both ways, and opens an attempt's drawer, at ${size} size`, async () => {
      const { page, context } = await signedIn(width, height);
      await page.goto(`${server.url}/console#/webhooks/${webhookId}`);
      const rows = page.locator('table.deliveries tbody tr');
      await rows.first().waitFor();
      expect(await rows.count()).to.equal(50);
      expect(await rows.first().textContent()).to.include('Test');
      expect(await rows.first().textContent()).to.include('“database unavailable”');
      const firstOnPageOne = await rows.first().getAttribute('data-delivery');
      const next = page.getByRole('button', { name: 'Next page' });
      for (let pageNumber = 2; pageNumber <= 5; pageNumber += 1) {
        await next.click();
        await page.getByText(`Page ${pageNumber}`, { exact: true }).waitFor();
      }
      await page.locator('table.deliveries tbody tr').first().waitFor();
      // 230 attempts in pages of 50: the fifth holds the 30 oldest, and there is no sixth.
      await eventually(async () => ((await rows.count()) === 30 ? true : undefined));
      expect(await next.isDisabled()).to.equal(true);
      await check(page, `webhook-log-page-5-${size}`);
      for (let pageNumber = 4; pageNumber >= 1; pageNumber -= 1) {
        await page.getByRole('button', { name: 'Previous page' }).click();
        await page.getByText(`Page ${pageNumber}`, { exact: true }).waitFor();
      }
      await eventually(async () =>
        (await rows.first().getAttribute('data-delivery')) === firstOnPageOne ? true : undefined,
      );

      await rows.first().getByRole('button').click();
      const drawer = page.getByRole('dialog');
      await drawer.getByRole('heading', { name: 'Delivery of observation.created' }).waitFor();
      const payload = JSON.parse((await drawer.getByLabel('Payload').textContent()) ?? '') as { id: string };
      expect(payload.id).to.match(/^evt_test_/);
      const headers = JSON.parse(
        (await drawer.getByLabel('Headers sent, attempt 1').textContent()) ?? '',
      ) as Record<string, string>;
      expect(headers['webhook-id']).to.equal(payload.id);
      expect(headers['webhook-signature']).to.match(/^v1,/);
      const sent = failing.received.find((received) => received.headers['webhook-id'] === payload.id)!;
      expect(() => new StandardWebhook(secret).verify(sent.rawBody, headers)).not.to.throw();
      expect(await drawer.textContent()).not.to.include(secret.slice('whsec_'.length));
      expect(await drawer.textContent()).to.include('database unavailable');
      await check(page, `webhook-drawer-${size}`);
      await drawer.getByRole('button', { name: 'Close' }).click();
      await context.close();
    });
  }

  it('filters the log by status and by tests', async () => {
    const { page, context } = await signedIn(1280, 800);
    await page.goto(`${server.url}/console#/webhooks/${webhookId}`);
    await page.locator('table.deliveries tbody tr').first().waitFor();
    await page.getByLabel('Status').selectOption('succeeded');
    await page.getByText('No attempts yet.').waitFor();
    await page.getByLabel('Status').selectOption('failed');
    await page.locator('table.deliveries tbody tr').first().waitFor();
    await page.getByLabel('Sent as').selectOption('false');
    await page.getByText('No attempts yet.').waitFor();
    await context.close();
  });

  it('pauses and resumes from the page, and deletes after a confirmation', async () => {
    const { page, context } = await signedIn(390, 844);
    await page.goto(`${server.url}/console#/webhooks/${webhookId}`);
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText('Paused: nothing is sent until you resume it.').waitFor();
    await page.locator('.badge.status-paused').waitFor();
    expect((await api(`/webhooks/${webhookId}`)).body.status).to.equal('paused');
    await check(page, 'webhook-paused-phone');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByText(/^Resumed; 0 held-back deliveries/).waitFor();
    expect((await api(`/webhooks/${webhookId}`)).body.status).to.equal('active');

    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Keep it' }).click();
    expect((await api(`/webhooks/${webhookId}`)).status).to.equal(200);
    await page.getByRole('button', { name: 'Delete…' }).click();
    await check(page, 'webhook-delete-confirm-phone');
    await page.getByRole('button', { name: 'Delete for good' }).click();
    await page.getByRole('heading', { name: 'Subscription deleted' }).waitFor();
    const gone = await request(`${server.url}/v1/tenants/${tenantId}/webhooks/${webhookId}`, {
      headers: { 'X-API-Key': adminKey },
    });
    expect(gone.status).to.equal(404);
    await context.close();
  });
});
