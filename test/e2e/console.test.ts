import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import {
  accessibilityViolations,
  launchChromium,
  pageWaitMs,
  skipWithoutChromium,
} from '../support/browser.js';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createUser, password } from '../support/auth.js';
import { testImage } from '../support/images.js';
import { fixturePhoto } from '../support/photos.js';
import { pixelOf } from '../support/map.js';
import { eventually } from '../support/wait.js';
import { startReceiver } from '../support/receiver.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * Where this run's screenshots go: an ignored folder, so that a test run leaves the tree clean. With
 * SCREENSHOTS=docs they replace the ones docs/console.md shows (docs/contributing.md says when).
 */
const shots =
  process.env.SCREENSHOTS === 'docs'
    ? new URL('../../docs/console/', import.meta.url)
    : new URL('../../.screenshots/console/', import.meta.url);

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
type Tenant = Awaited<ReturnType<typeof withTenant>>;

const secret = `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The console in a real headless browser against the real service, with real receivers on loopback:
 * every screen is checked with axe-core and photographed into docs/console/, and every request the
 * browser makes is recorded, so that one to another origin fails the test.
 */
describe('the console in a browser', function () {
  this.timeout(120_000);
  let server: TestServer;
  let browser: Browser;
  let tenant: Tenant;
  let ok: Receiver;
  let failing: Receiver;
  const requested: string[] = [];
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];
  const observations: Record<string, string> = {};
  let visitId: string;
  let locationId: string;

  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${server.url}/v1/tenants/${tenant.tenantId}${path}`, {
      ...init,
      headers: { 'X-API-Key': tenant.adminKey, ...init.headers },
    });

  const record = async (name: string, body: Record<string, unknown>) => {
    const created = await api('/observations', {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', ...body },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    observations[name] = created.body.id as string;
  };

  const newContext = async (viewport = { width: 1280, height: 900 }): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport });
    context.on('request', (r) => requested.push(r.url()));
    await context.addInitScript(`
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) =>
        window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI));
    `);
    return context;
  };

  const openConsole = async (context: BrowserContext) => {
    const page = await context.newPage();
    page.setDefaultTimeout(pageWaitMs);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const answer = await page.goto(`${server.url}/console`);
    expect(answer?.status()).to.equal(200);
    expect(answer?.headers()['content-security-policy']).to.match(
      /default-src 'self'.*script-src 'self'.*style-src 'self'/,
    );
    return page;
  };

  /**
   * Axe for a state a test brought about, and a screenshot when asked: the harness at the end photographs
   * every screen at both sizes, so only states it does not reach need one here.
   */
  const screen = async (page: Page, name: string, photograph = false) => {
    expect(await accessibilityViolations(page), name).to.deep.equal([]);
    if (photograph)
      await page.screenshot({ path: new URL(`${name}-desktop.png`, shots).pathname, fullPage: true });
    cspViolations.push(...(await page.evaluate<string[]>('window.cspViolations')));
  };

  const signInWithKey = async (page: Page, key: string) => {
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  };

  before(async function () {
    skipWithoutChromium(this);
    mkdirSync(shots, { recursive: true });
    server = await startTestServer({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
      WEBHOOK_TIMEOUT: '500ms',
    });
    tenant = await withTenant(server);
    ok = await startReceiver(secret);
    failing = await startReceiver(secret, () => ({ status: 503, body: 'down for maintenance' }));
    await record('turin', { position: { lat: 45.07, lon: 7.69 }, notes: 'fox near the river' });
    await record('bern', { position: { lat: 46.95, lon: 7.45 }, notes: 'two deer' });
    await record('denver', { position: { lat: 39.74, lon: -104.99 }, notes: 'coyote' });
    const location = await api('/locations', {
      method: 'POST',
      body: {
        name: 'Po valley plot',
        position: { lat: 45.1, lon: 7.7 },
        boundary: {
          type: 'Polygon',
          coordinates: [
            [
              [6, 44],
              [9, 44],
              [9, 46],
              [6, 46],
              [6, 44],
            ],
          ],
        },
      },
    });
    const visit = await api('/visits', {
      method: 'POST',
      body: { locationId: location.body.id, startedAt: '2026-05-01T06:00:00Z', participants: ['Ada'] },
    });
    visitId = visit.body.id as string;
    locationId = location.body.id as string;
    await record('visited', {
      position: { lat: 45.1, lon: 7.7 },
      notes: 'on the visit',
      visitId,
      locationId: location.body.id,
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ok?.close();
    await failing?.close();
    await server?.close();
  });

  describe('signed in with the admin key', () => {
    let context: BrowserContext;
    let page: Page;
    before(async () => {
      context = await newContext();
      page = await openConsole(context);
    });
    after(() => context.close());
    // What the page showed when a test failed, beside the other screenshots: a wait that ran out says what
    // it waited for, not what was there instead.
    afterEach(async function () {
      if (this.currentTest?.state !== 'failed') return;
      const name = this.currentTest.title.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
      const failures = new URL('../../.screenshots/console/', import.meta.url);
      mkdirSync(failures, { recursive: true });
      await page.screenshot({ path: new URL(`failed-${name}.png`, failures).pathname, fullPage: true });
      console.log(
        `      (the page at ${page.url()} when it failed: .screenshots/console/failed-${name}.png)`,
      );
    });

    it('signs in with the key, keeping it in sessionStorage only, and shows every screen', async () => {
      await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
      await screen(page, 'sign-in');
      await signInWithKey(page, tenant.adminKey);
      const nav = page.getByRole('navigation', { name: 'Screens' });
      for (const name of ['Observations', 'Locations and visits', 'Webhooks', 'Audit'])
        await nav.getByRole('link', { name }).waitFor();
      expect(await page.evaluate('localStorage.length')).to.equal(0);
      expect(await page.evaluate('Object.keys(sessionStorage)')).to.deep.equal(['obs-console-credential']);
    });

    it('lists the observations, and a box drawn on the map narrows the table to it', async () => {
      await page
        .getByRole('navigation', { name: 'Screens' })
        .getByRole('link', { name: 'Observations' })
        .click();
      const rows = page.locator('table tbody tr');
      await page.getByText('4 observations on this page').waitFor();
      await screen(page, 'observations');
      const map = page.getByRole('region', { name: 'Map of the observations on this page' });
      await page.locator('.map-point').first().waitFor();
      await page.getByRole('button', { name: 'Draw a box' }).click();
      const from = await pixelOf(map, 0, 50);
      const to = await pixelOf(map, 20, 40);
      await page.mouse.move(from.x, from.y);
      await page.mouse.down();
      await page.mouse.move(to.x, to.y, { steps: 5 });
      await page.mouse.up();
      await page.getByText('3 observations on this page').waitFor();
      const box = await page.getByLabel('Box (minLon,minLat,maxLon,maxLat)').inputValue();
      const [minLon, minLat, maxLon, maxLat] = box.split(',').map(Number) as [number, number, number, number];
      expect(minLon).to.be.closeTo(0, 0.5);
      expect(maxLon).to.be.closeTo(20, 0.5);
      expect(minLat).to.be.closeTo(40, 0.5);
      expect(maxLat).to.be.closeTo(50, 0.5);
      expect(await rows.count()).to.equal(3);
      expect(await page.locator('table').textContent()).not.to.include('coyote');
      // The API's own answer for the same box is what the table shows.
      const listed = await api(`/observations?bbox=${box}`);
      expect(listed.body.data).to.have.length(3);
      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByText('4 observations on this page').waitFor();
    });

    it('uploads a photograph, runs objects-coco, and draws its boxes where the job says they are', async () => {
      await page.goto(`${server.url}/console#/observations/${observations.turin}`);
      await page.getByRole('heading', { name: `Observation ${observations.turin}` }).waitFor();
      await page.getByLabel('Add an image (JPEG, PNG or WebP)').setInputFiles({
        name: 'coffee.jpg',
        mimeType: 'image/jpeg',
        buffer: fixturePhoto('coffee'),
      });
      const img = page.locator('.overlay-frame img');
      await img.waitFor();
      await page.getByLabel('Model').selectOption('objects-coco');
      await page.getByRole('button', { name: 'Run' }).click();
      const status = page.locator('.job-status[data-status="completed"]');
      await status.waitFor({ timeout: 60_000 });
      const jobId = (await status.getAttribute('data-job'))!;
      const job = await api(`/cv-jobs/${jobId}`);
      const detections = job.body.result.detections as {
        label: string;
        bbox: { x: number; y: number; width: number; height: number };
      }[];
      expect(detections.map((d) => d.label)).to.include('cup');
      const drawn = page.locator(`g.detection[data-job="${jobId}"] rect.box`);
      await drawn.first().waitFor();
      expect(await drawn.count()).to.equal(detections.length);
      const frame = (await img.boundingBox())!;
      // Each box is drawn where the job puts it on the image as shown: the same centre to a pixel, and the
      // same size give or take its outline (at least 1.5 pixels), which the browser counts in the drawn box.
      for (const [index, { bbox }] of detections.entries()) {
        const rect = (await page
          .locator(`g.detection[data-job="${jobId}"][data-index="${index}"] rect.box`)
          .boundingBox())!;
        const expected = {
          x: frame.x + bbox.x * frame.width,
          y: frame.y + bbox.y * frame.height,
          width: bbox.width * frame.width,
          height: bbox.height * frame.height,
        };
        expect(rect.x + rect.width / 2, `box ${index} centre x`).to.be.closeTo(
          expected.x + expected.width / 2,
          1,
        );
        expect(rect.y + rect.height / 2, `box ${index} centre y`).to.be.closeTo(
          expected.y + expected.height / 2,
          1,
        );
        expect(rect.width - expected.width, `box ${index} width`).to.be.within(-0.5, 2.5);
        expect(rect.height - expected.height, `box ${index} height`).to.be.within(-0.5, 2.5);
      }
      await page.getByRole('heading', { name: 'History' }).waitFor();
      await page.getByText(/Version 1: ObservationMediaAttached/).waitFor();
      await screen(page, 'observation');
      // The toggle hides that model's boxes.
      await page.getByRole('checkbox', { name: 'objects-coco' }).uncheck();
      expect(await drawn.count()).to.equal(0);
      await page.getByRole('checkbox', { name: 'objects-coco' }).check();
    });

    it('shows locations with their boundaries, and submits a visit with its observations', async () => {
      await page.goto(`${server.url}/console#/places`);
      await page
        .getByRole('region', { name: 'Locations', exact: true })
        .getByRole('cell', { name: 'Po valley plot' })
        .waitFor();
      await page.locator('path.map-boundary').waitFor();
      expect(await page.locator('path.map-boundary').count()).to.equal(1);
      await screen(page, 'locations-and-visits');
      await page.goto(`${server.url}/console#/visits/${visitId}`);
      await page.getByRole('cell', { name: 'on the visit' }).waitFor();
      await page.getByRole('button', { name: 'Submit the visit' }).click();
      await page.getByText('submitted', { exact: true }).waitFor();
      await screen(page, 'visit');
      expect((await api(`/visits/${visitId}`)).body.status).to.equal('submitted');
    });

    it('creates a subscription, shows its secret once, sends a test event and redelivers it', async () => {
      await page.goto(`${server.url}/console#/webhooks`);
      await page.getByLabel('Receiver URL').fill(ok.url);
      await page.getByLabel(/^Secret/).fill(secret);
      await page.getByRole('checkbox', { name: 'cv.job.completed' }).check();
      await page.getByRole('button', { name: 'Create subscription' }).click();
      expect(await page.locator('[data-secret]').textContent()).to.equal(secret);
      await screen(page, 'webhooks');
      await page.getByRole('button', { name: 'I have stored it' }).click();
      expect(await page.locator('[data-secret]').count()).to.equal(0);
      await page.getByRole('link', { name: ok.url }).click();
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByText(/Test observation\.created: delivered, HTTP 204/).waitFor();
      const delivery = page.locator('table.deliveries tbody tr').first();
      await delivery.locator('.badge.succeeded').waitFor();
      await screen(page, 'webhook');
      await delivery.getByRole('button').click();
      const before = ok.received.length;
      await page.getByRole('dialog').getByRole('button', { name: 'Redeliver' }).click();
      await ok.waitFor(before + 1);
      expect(ok.received.at(-1)!.verified).to.equal(true);
      await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
    });

    it('shows the retries of a failing receiver in the delivery log, with what it answered and the next retry', async () => {
      await page.goto(`${server.url}/console#/webhooks`);
      await page.getByLabel('Receiver URL').fill(failing.url);
      await page.getByLabel(/^Secret/).fill(secret);
      await page.getByRole('button', { name: 'Create subscription' }).click();
      await page.locator('[data-secret]').waitFor();
      await page.getByRole('link', { name: failing.url }).click();
      await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
      await record('late', { notes: 'after the failing subscription' });
      await failing.waitFor(2, 20_000);
      const failed = page.locator('table.deliveries td.outcome.failed');
      for (let tries = 0; ; tries += 1) {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(300);
        if ((await failed.count()) >= 2 || tries > 40) break;
      }
      expect(await failed.count()).to.be.at.least(2);
      expect(await failed.last().textContent()).to.equal(
        'HTTP 503 Service Unavailable · “down for maintenance”',
      );
      await page.locator('table.deliveries tbody tr').last().getByRole('button').click();
      const drawer = page.getByRole('dialog');
      await drawer.getByRole('region', { name: 'Attempt 1' }).waitFor();
      expect(await drawer.getByRole('region', { name: 'Attempt 1' }).textContent()).to.include('Next retry');
      await drawer.getByRole('button', { name: 'Close' }).click();
      await page.getByLabel('Status').selectOption('succeeded');
      await page.getByText('No attempts yet.').waitFor();
      await page.getByLabel('Status').selectOption('');
      await screen(page, 'webhook-retries', true);
    });

    it('shows the event history, downloads it as NDJSON, and verifies it', async () => {
      await page.goto(`${server.url}/console#/audit`);
      await page.getByRole('cell', { name: 'ObservationRecorded' }).first().waitFor();
      await page.getByLabel('Event types (comma-separated)').fill('VisitSubmitted');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      // The unfiltered page stays until the filtered one arrives: wait for the one row.
      // (page.waitForFunction would eval in the page, which its CSP refuses.)
      for (let tries = 0; (await page.locator('tbody tr').count()) !== 1 && tries < 100; tries += 1)
        await page.waitForTimeout(50);
      expect(await page.locator('tbody tr').textContent()).to.include('VisitSubmitted');
      await page.getByRole('button', { name: 'Prepare NDJSON download' }).click();
      const link = page.getByRole('link', { name: 'Download events.ndjson' });
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      const lines = readFileSync(await download.path(), 'utf8')
        .trim()
        .split('\n');
      expect(lines.map((line) => (JSON.parse(line) as { type: string }).type)).to.deep.equal([
        'VisitSubmitted',
      ]);
      await page.getByRole('button', { name: 'Verify the history' }).click();
      await page.getByText(/^Intact: \d+ events in \d+ streams/).waitFor();
      await screen(page, 'audit');
    });

    it('forgets the credential on sign-out', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
      expect(await page.evaluate('sessionStorage.length + localStorage.length')).to.equal(0);
    });
  });

  describe('signed in with a login that may only read observations', () => {
    let context: BrowserContext;
    let page: Page;
    before(async () => {
      await createUser(server, tenant, { email: 'reader@acme.test', scopes: ['observations:read'] });
      // Signing in without the tenant finds the account through the users read model.
      await eventually(
        async () => {
          const users = await request(`${server.url}/v1/tenants/${tenant.tenantId}/users`, {
            headers: { 'X-API-Key': tenant.adminKey },
          });
          return (
            users.body.data.some((user: { email: string }) => user.email === 'reader@acme.test') || undefined
          );
        },
        10_000,
        'the users read model to list the reader',
      );
      context = await newContext();
      page = await openConsole(context);
    });
    after(() => context.close());

    it('signs in with e-mail and password alone, and sees no admin screen', async () => {
      await page.getByLabel('E-mail', { exact: true }).fill('reader@acme.test');
      await page.getByLabel('Password', { exact: true }).fill(password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      const nav = page.getByRole('navigation', { name: 'Screens' });
      await nav.getByRole('link', { name: 'Observations' }).waitFor();
      expect(await nav.getByRole('link').allTextContents()).to.deep.equal(['Observations']);
      await page.goto(`${server.url}/console#/audit`);
      await page.getByRole('heading', { name: 'Not available to this credential' }).waitFor();
      await screen(page, 'not-allowed', true);
      // Bypassing the screens: the API refuses the same token.
      const refused = await page.evaluate<[number, string]>(`(async () => {
        const { accessToken } = JSON.parse(sessionStorage.getItem('obs-console-credential'));
        const answer = await fetch('/v1/tenants/${tenant.tenantId}/audit/verification', {
          headers: { Authorization: 'Bearer ' + accessToken },
        });
        return [answer.status, (await answer.json()).requiredScope];
      })()`);
      expect(refused).to.deep.equal([403, 'admin']);
    });

    it('shows the problem detail when a write is refused', async () => {
      await page.goto(`${server.url}/console#/observations/${observations.bern}`);
      await page.getByLabel('Add an image (JPEG, PNG or WebP)').setInputFiles({
        name: 'x.png',
        mimeType: 'image/png',
        buffer: await testImage({ width: 20, height: 20, format: 'png' }),
      });
      await page.getByRole('alert').filter({ hasText: '403' }).waitFor();
      expect(await page.getByRole('alert').textContent()).to.include('observations:write');
    });

    it('ends the session on the server at sign-out: its tokens stop working wherever a copy is', async () => {
      const { accessToken, refreshToken } = JSON.parse(
        (await page.evaluate<string>(`sessionStorage.getItem('obs-console-credential')`)) ?? '{}',
      ) as { accessToken: string; refreshToken: string };
      const loggedOut = page.waitForResponse('**/v1/auth/logout');
      await page.getByRole('button', { name: 'Sign out' }).click();
      expect((await loggedOut).status()).to.equal(204);
      await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
      const renewed = await request(`${server.url}/v1/auth/refresh`, {
        method: 'POST',
        body: { refreshToken },
      });
      expect(renewed.status).to.equal(401);
      const listed = () =>
        request(`${server.url}/v1/tenants/${tenant.tenantId}/observations`, {
          headers: { Authorization: `Bearer ${accessToken}` },
        });
      await eventually(async () => ((await listed()).status === 401 ? true : undefined), 2000, 'a 401');
    });
  });

  describe('signed in with a key that may only read CV jobs', () => {
    it('sees none of the screens, and the API refuses the observations', async () => {
      const context = await newContext();
      try {
        const page = await openConsole(context);
        const key = await tenant.key(['cv:read']);
        await signInWithKey(page, key);
        await page.getByText("This credential may see none of the console's screens.").waitFor();
        await page.goto(`${server.url}/console#/webhooks`);
        await page.getByRole('heading', { name: 'Not available to this credential' }).waitFor();
        const refused = await request(`${server.url}/v1/tenants/${tenant.tenantId}/webhooks`, {
          headers: { 'X-API-Key': key },
        });
        expect(refused.status).to.equal(403);
      } finally {
        await context.close();
      }
    });
  });

  /**
   * The every-screen harness: each screen at a desktop's size and at a phone's, in the one browser against
   * the one service. For each: no sideways scroll of the page, no console error, no failed request, axe,
   * and a screenshot `<screen>-<size>.png`. A new screen is one line in `screens`.
   */
  describe('every screen, at 1280×800 and at 390×844', () => {
    const sizes = {
      desktop: { width: 1280, height: 800 },
      phone: { width: 390, height: 844 },
    } as const;
    type Size = keyof typeof sizes;
    const pages = {} as Record<Size, Page>;
    /** What went wrong on a page since its last check: console errors and failed requests. */
    const troubles = {} as Record<Size, string[]>;
    const contexts: BrowserContext[] = [];
    let subscriptionId: string;

    const openEvent = async (page: Page) => {
      await page.locator('tbody button.link').first().click();
      await page.getByRole('dialog').getByText('Correlation id').waitFor();
    };
    const openAttempt = async (page: Page) => {
      await page.locator('table.deliveries tbody button.link').first().click();
      await page.getByRole('dialog').getByLabel('Headers sent, attempt 1').waitFor();
    };
    const closeEvent = async (page: Page) => {
      await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
      await page.getByRole('dialog').waitFor({ state: 'detached' });
    };

    /** Each screen: the screenshot's name, where it is, its heading once it is there, and what to do then. */
    const screens: {
      name: string;
      path: () => string;
      heading: () => string;
      open?: (page: Page) => Promise<void>;
      close?: (page: Page) => Promise<void>;
    }[] = [
      { name: 'observations', path: () => '#/observations', heading: () => 'Observations' },
      {
        name: 'observation',
        path: () => `#/observations/${observations.turin}`,
        heading: () => `Observation ${observations.turin}`,
      },
      { name: 'places', path: () => '#/places', heading: () => 'Locations and visits' },
      { name: 'location', path: () => `#/locations/${locationId}`, heading: () => 'Po valley plot' },
      { name: 'visit', path: () => `#/visits/${visitId}`, heading: () => `Visit ${visitId}` },
      { name: 'webhooks', path: () => '#/webhooks', heading: () => 'Webhooks' },
      {
        name: 'webhook',
        path: () => `#/webhooks/${subscriptionId}`,
        heading: () => `Subscription ${subscriptionId}`,
      },
      {
        name: 'webhook-drawer',
        path: () => `#/webhooks/${subscriptionId}`,
        heading: () => `Subscription ${subscriptionId}`,
        open: openAttempt,
        close: closeEvent,
      },
      { name: 'audit', path: () => '#/audit', heading: () => 'Audit' },
      {
        name: 'audit-drawer',
        path: () => '#/audit',
        heading: () => 'Audit',
        open: openEvent,
        close: closeEvent,
      },
    ];

    /** Until nothing on the page says it is loading (polled: the CSP refuses waitForFunction's eval). */
    const settled = async (page: Page) => {
      for (let tries = 0; (await page.locator('.loading').count()) > 0 && tries < 150; tries += 1)
        await page.waitForTimeout(100);
    };

    /** `overlay`: a modal covers the viewport, so the viewport is what to photograph. */
    const check = async (size: Size, name: string, overlay = false) => {
      const page = pages[size];
      await settled(page);
      const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>(
        '[document.documentElement.scrollWidth, innerWidth]',
      );
      expect(scrollWidth, `${name} at ${size} size scrolls sideways`).to.be.at.most(innerWidth);
      expect(await accessibilityViolations(page), `${name} at ${size} size`).to.deep.equal([]);
      const path = new URL(`${name}-${size}.png`, shots).pathname;
      if (overlay) await page.screenshot({ path });
      else {
        // The whole page, down to 2,400 pixels: enough to see a long list's layout, short enough to read.
        const height = Math.min(await page.evaluate<number>('document.documentElement.scrollHeight'), 2400);
        await page.screenshot({
          path,
          fullPage: true,
          clip: { x: 0, y: 0, width: sizes[size].width, height },
        });
      }
      expect(troubles[size].splice(0), `${name} at ${size} size`).to.deep.equal([]);
      cspViolations.push(...(await page.evaluate<string[]>('window.cspViolations')));
    };

    before(async () => {
      // More events than one page of the audit holds, so that it pages.
      await server.stores.eventStore.appendToStream(
        `probe-${tenant.tenantId}_paging`,
        Array.from({ length: 60 }, (_, i) => ({
          id: randomUUID(),
          type: 'Probed',
          data: { i },
          metadata: {
            tenantId: tenant.tenantId,
            actor: 'test',
            correlationId: 'paging',
            causationId: null,
            occurredAt: new Date().toISOString(),
          },
        })),
        'no_stream',
      );
      const subscription = await api('/webhooks', {
        method: 'POST',
        body: { url: ok.url, events: ['observation.created'], secret },
      });
      expect(subscription.status, JSON.stringify(subscription.body)).to.equal(201);
      subscriptionId = subscription.body.id as string;
      // One attempt in its log, for the attempt's drawer.
      expect((await api(`/webhooks/${subscriptionId}/test`, { method: 'POST' })).body.ok).to.equal(true);
      for (const size of Object.keys(sizes) as Size[]) {
        const context = await newContext(sizes[size]);
        contexts.push(context);
        const page = await openConsole(context);
        troubles[size] = [];
        page.on('console', (message) => {
          if (message.type() === 'error') troubles[size].push(`console: ${message.text()}`);
        });
        page.on('requestfailed', (r) => troubles[size].push(`failed: ${r.url()} ${r.failure()?.errorText}`));
        page.on('response', (r) => {
          if (r.status() >= 400) troubles[size].push(`HTTP ${r.status()}: ${r.url()}`);
        });
        pages[size] = page;
      }
    });
    after(async () => {
      for (const context of contexts) await context.close();
    });

    for (const size of Object.keys(sizes) as Size[]) {
      it(`shows every screen at the ${size}'s size: no sideways scroll, no error, no axe violation`, async () => {
        const page = pages[size];
        await page.getByRole('heading', { name: 'Sign in to the observation console' }).waitFor();
        await check(size, 'sign-in');
        await signInWithKey(page, tenant.adminKey);
        for (const { name, path, heading, open, close } of screens) {
          await page.goto(`${server.url}/console${path()}`);
          await page.getByRole('heading', { name: heading(), exact: true, level: 1 }).waitFor();
          await open?.(page);
          await check(size, name, open !== undefined);
          await close?.(page);
        }
      });
    }

    it('folds the header into a menu on a phone, which opens, goes to a screen, and closes', async () => {
      const page = pages.phone;
      await page.goto(`${server.url}/console#/observations`);
      await page.getByRole('heading', { name: 'Observations', level: 1 }).waitFor();
      const menu = page.getByRole('button', { name: 'Menu' });
      // The menu's state as a screen reader hears it; waited for, as a render may follow the action.
      const menuIs = (expanded: boolean) => page.getByRole('button', { name: 'Menu', expanded }).waitFor();
      const nav = page.getByRole('navigation', { name: 'Screens' });
      await menuIs(false);
      expect(await nav.isVisible()).to.equal(false);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      await menu.click();
      await menuIs(true);
      await nav.getByRole('link', { name: 'Observations' }).waitFor();
      await check('phone', 'menu');
      await page.keyboard.press('Escape');
      await menuIs(false);
      await menu.click();
      await nav.getByRole('link', { name: 'Locations and visits' }).click();
      await page.getByRole('heading', { name: 'Locations and visits', level: 1 }).waitFor();
      await menuIs(false);
      await nav.waitFor({ state: 'hidden' });
      // At a desktop's size the screens are in the header itself, with no menu button.
      expect(await pages.desktop.getByRole('button', { name: 'Menu' }).isVisible()).to.equal(false);
      expect(
        await pages.desktop.getByRole('navigation', { name: 'Screens' }).getByRole('link').count(),
      ).to.equal(4);
    });

    it('lists the audit newest first, and pages to older events and back to newer ones', async () => {
      const page = pages.desktop;
      await page.goto(`${server.url}/console#/places`);
      await page.goto(`${server.url}/console#/audit`);
      const positions = async () =>
        (await page.locator('tbody tr td:last-child').allTextContents()).map(Number);
      const newest = (await api('/events?order=desc&limit=1')).body.data[0].position as number;
      const firstRow = async (expected: (first: number) => boolean) => {
        for (let tries = 0; tries < 100; tries += 1) {
          const first = (await positions())[0];
          if (first !== undefined && expected(first)) return;
          await page.waitForTimeout(50);
        }
      };
      await firstRow((first) => first === newest);
      const first = await positions();
      expect(first[0]).to.equal(newest);
      expect(first).to.have.length(50);
      expect(first).to.deep.equal([...first].sort((a, b) => b - a));
      await page.getByRole('button', { name: 'Older events' }).click();
      await firstRow((top) => top < first.at(-1)!);
      const older = await positions();
      expect(older[0]).to.be.below(first.at(-1)!);
      expect(older).to.deep.equal([...older].sort((a, b) => b - a));
      await page.getByRole('button', { name: 'Newer events' }).click();
      await firstRow((top) => top === newest);
      expect(await positions()).to.deep.equal(first);
      expect(await page.getByRole('button', { name: 'Newer events' }).isDisabled()).to.equal(true);
      // One line for a date, with the full UTC time on hover.
      const when = page.locator('tbody tr td:first-child time').first();
      expect(await when.textContent()).to.match(/^\d{1,2} \S+ \d{2}:\d{2}:\d{2}$/);
      expect(await when.getAttribute('title')).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?Z UTC$/);
      expect(troubles.desktop.splice(0)).to.deep.equal([]);
    });

    it('opens an event in a drawer with its data and metadata, and gives the focus back when it closes', async () => {
      const page = pages.desktop;
      const recorded = (await api('/events?order=desc&type=ObservationRecorded&limit=1')).body.data[0] as {
        streamName: string;
        position: number;
        data: { notes: string };
        metadata: { actor: string; correlationId: string };
      };
      await page.getByLabel('Event types (comma-separated)').fill('ObservationRecorded');
      await page.getByRole('button', { name: 'Apply filters' }).click();
      const opener = page.locator('tbody button.link').first();
      for (let tries = 0; tries < 100; tries += 1) {
        if (
          (await page.locator('tbody tr td:last-child').first().textContent()) === String(recorded.position)
        )
          break;
        await page.waitForTimeout(50);
      }
      await opener.click();
      const drawer = page.getByRole('dialog', {
        name: `ObservationRecorded at position ${recorded.position}`,
      });
      await drawer.waitFor();
      const text = (await drawer.textContent()) ?? '';
      for (const shown of [
        recorded.streamName,
        recorded.metadata.actor,
        recorded.metadata.correlationId,
        recorded.data.notes,
      ])
        expect(text).to.include(shown);
      expect(await drawer.getByLabel(/^Data of ObservationRecorded/).textContent()).to.include(
        '"observationId"',
      );
      expect(await drawer.getByLabel(/^Metadata of ObservationRecorded/).textContent()).to.include(
        '"occurredAt"',
      );
      await page.keyboard.press('Escape');
      await drawer.waitFor({ state: 'detached' });
      expect(await page.evaluate('document.activeElement?.textContent')).to.equal('ObservationRecorded');
      expect(troubles.desktop.splice(0)).to.deep.equal([]);
    });
  });

  describe('everything the browser asked for', () => {
    it('came from the service, within its CSP, without a script error', () => {
      expect(requested.length).to.be.greaterThan(20);
      expect(
        requested.filter((url) => !url.startsWith(`${server.url}/`) && !url.startsWith('blob:')),
      ).to.deep.equal([]);
      expect(cspViolations).to.deep.equal([]);
      expect(pageErrors).to.deep.equal([]);
    });
  });
});
