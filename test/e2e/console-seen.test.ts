import { mkdirSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  accessibilityViolations,
  launchChromium,
  pageWaitMs,
  skipWithoutChromium,
} from '../support/browser.js';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import { fixturePhoto } from '../support/photos.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';

/** Where the screenshots go: the ignored folder of console.test.ts. */
const shots = new URL('../../.screenshots/console/', import.meta.url);

/** Three dark stones on a light ground: object-proposals finds all three, under one label. */
const stones = () =>
  testImage({
    width: 640,
    height: 480,
    format: 'jpeg',
    background: 210,
    boxes: [
      { x: 100, y: 120, width: 100, height: 80, value: 30 },
      { x: 400, y: 300, width: 100, height: 80, value: 30 },
      { x: 500, y: 60, width: 80, height: 80, value: 30 },
    ],
  });

const square = (lon: number, lat: number, size: number) => ({
  type: 'Polygon',
  coordinates: [
    [
      [lon, lat],
      [lon + size, lat],
      [lon + size, lat + size],
      [lon, lat + size],
      [lon, lat],
    ],
  ],
});

/**
 * "What was seen, at a glance" (issue 27) in a real browser against the real service: the list's
 * species, location names, thumbnails, rounded positions and detections; the filters by name; the
 * observation page's detections, image quality, location and history of changes; the location and visit
 * pages. At 1280 × 800 and 390 × 844: no script error, no failed request, axe clean, no sideways scroll.
 */
describe('the console says what was seen, and where', function () {
  this.timeout(180_000);
  let server: TestServer;
  let browser: Browser;
  let t: ReturnType<typeof cvTenant>;
  let adminKey: string;
  const ids = { ridge: '', marsh: '', ridgeVisit: '', marshVisit: '', fox: '', heron: '', deer: '' };
  const jobs = { proposals: '', quality: '' };
  const pageErrors: string[] = [];
  const failedRequests: string[] = [];

  const created = async (path: string, body: Record<string, unknown>) => {
    const response = await t.api(path, { method: 'POST', body });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    return response.body.id as string;
  };

  before(async function () {
    skipWithoutChromium(this);
    mkdirSync(shots, { recursive: true });
    server = await startTestServer({ CONSISTENCY_TIMEOUT: '5s' });
    const tenant = await withTenant(server, 'seenconsole');
    adminKey = tenant.adminKey;
    t = cvTenant(server.url, server.stores, tenant.tenantId, adminKey);
    ids.ridge = await created('/locations', {
      name: 'Ridge meadow',
      position: { lat: 44.23, lon: 7.12 },
      boundary: square(7.1, 44.2, 0.05),
    });
    ids.marsh = await created('/locations', { name: 'Reed marsh', position: { lat: 45.31, lon: 8.42 } });
    ids.ridgeVisit = await created('/visits', {
      locationId: ids.ridge,
      startedAt: '2026-05-01T06:00:00Z',
      participants: ['Ada Lovelace', 'Mary Anning'],
    });
    ids.marshVisit = await created('/visits', {
      locationId: ids.marsh,
      startedAt: '2026-05-02T06:00:00Z',
      participants: ['Charles Darwin'],
    });
    ids.fox = await created('/observations', {
      observedAt: '2026-05-01T07:30:00Z',
      position: { lat: 44.230000000000004, lon: 7.120000000000001 },
      locationId: ids.ridge,
      visitId: ids.ridgeVisit,
      notes: 'by the stones',
      attributes: { species: 'Vulpes vulpes', count: 1 },
    });
    ids.heron = await created('/observations', {
      observedAt: '2026-05-02T08:00:00Z',
      position: { lat: 45.3123456, lon: 8.4198765 },
      locationId: ids.marsh,
      visitId: ids.marshVisit,
      attributes: { species: 'Ardea cinerea' },
    });
    ids.deer = await created('/observations', {
      observedAt: '2026-05-01T09:00:00Z',
      position: { lat: 44.24, lon: 7.13 },
      locationId: ids.ridge,
      attributes: { taxon: 'Capreolus capreolus' },
    });
    await t.upload(ids.fox, await stones());
    await t.upload(ids.heron, fixturePhoto('chelsea'));
    jobs.proposals = (await t.submit({ observationId: ids.fox, model: 'object-proposals' })).id;
    jobs.quality = (await t.submit({ observationId: ids.fox, model: 'image-quality' })).id;
    for (const job of Object.values(jobs)) expect((await t.finished(job)).status).to.equal('completed');
    // A change the history must say in words.
    const patched = await t.api(`/observations/${ids.fox}`, {
      method: 'PATCH',
      body: { notes: 'by the three stones', attributes: { count: 2 } },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(patched.status).to.equal(200);
    // The list is read from the projection: wait for the last write.
    await t.api(`/observations?minPosition=${patched.headers.get('x-position')}&limit=1`);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  for (const viewport of [
    { width: 1280, height: 800, name: 'wide' },
    { width: 390, height: 844, name: 'phone' },
  ]) {
    describe(`at ${viewport.width} × ${viewport.height}`, () => {
      let context: BrowserContext;
      let page: Page;

      /** Axe, no sideways scroll, and a screenshot, for each screen once it shows what it should. */
      const screen = async (name: string) => {
        expect(await accessibilityViolations(page), name).to.deep.equal([]);
        const overflow = await page.evaluate<number>(
          'document.documentElement.scrollWidth - document.documentElement.clientWidth',
        );
        expect(overflow, `${name}: sideways scroll`).to.be.at.most(0);
        await page.screenshot({
          path: new URL(`${name}-${viewport.name}.png`, shots).pathname,
          fullPage: true,
        });
      };

      before(async () => {
        context = await browser.newContext({ viewport });
        page = await context.newPage();
        page.setDefaultTimeout(pageWaitMs);
        page.on('pageerror', (error) => pageErrors.push(error.message));
        page.on('console', (message) => {
          if (message.type() === 'error') pageErrors.push(message.text());
        });
        page.on('requestfailed', (request) => failedRequests.push(`${request.method()} ${request.url()}`));
        page.on('response', (response) => {
          if (response.status() >= 400) failedRequests.push(`${response.status()} ${response.url()}`);
        });
        await page.goto(`${server.url}/console`);
        await page.getByLabel('API key', { exact: true }).fill(adminKey);
        await page.getByRole('button', { name: 'Sign in with the key' }).click();
        await page.getByRole('button', { name: 'Sign out' }).waitFor();
      });
      after(() => context.close());

      it('lists each observation with its species, place name, thumbnail, rounded position and detections', async () => {
        await page.goto(`${server.url}/console#/observations`);
        const fox = page.locator(`tr[data-id="${ids.fox}"]`);
        await fox.getByRole('link', { name: 'Vulpes vulpes' }).waitFor();
        expect(await fox.getByRole('link', { name: 'Ridge meadow' }).getAttribute('href')).to.equal(
          `#/locations/${ids.ridge}`,
        );
        expect(await fox.locator('.coordinates').textContent()).to.equal('44.2300, 7.1200');
        await fox.locator('.detections-cell').getByText(/×3$/).waitFor();
        const heron = page.locator(`tr[data-id="${ids.heron}"]`);
        expect(await heron.locator('.coordinates').textContent()).to.equal('45.3123, 8.4199');
        expect(await heron.getByRole('link', { name: 'Reed marsh' }).count()).to.equal(1);
        expect(
          await page
            .locator(`tr[data-id="${ids.deer}"]`)
            .getByRole('link', { name: 'Capreolus capreolus' })
            .count(),
        ).to.equal(1);
        // The thumbnail is a blob: URL that loaded, 160 pixels wide, fetched once its row is near the screen.
        await fox.scrollIntoViewIfNeeded();
        const thumbnail = fox.locator('.thumbnail img');
        await thumbnail.waitFor();
        expect(await thumbnail.getAttribute('src')).to.match(/^blob:/);
        await page.waitForFunction(
          `(() => { const img = document.querySelector('tr[data-id="${ids.fox}"] .thumbnail img');
            return img !== null && img.complete && img.naturalWidth === 160; })()`,
        );
        expect(await thumbnail.getAttribute('alt')).to.equal('Image of Vulpes vulpes');
        await screen('seen-observations');
      });

      it('filters by location and by visit, picked by name', async () => {
        await page.goto(`${server.url}/console#/observations`);
        await page.locator(`tr[data-id="${ids.heron}"]`).waitFor();
        await page.getByRole('combobox', { name: 'Location' }).selectOption({ label: 'Ridge meadow' });
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page.getByText('2 observations on this page').waitFor();
        expect(await page.locator(`tr[data-id="${ids.heron}"]`).count()).to.equal(0);
        await page.getByRole('button', { name: 'Clear' }).click();
        await page.getByText('3 observations on this page').waitFor();
        const visit = page.getByRole('combobox', { name: 'Visit' });
        const marsh = await visit.locator('option', { hasText: 'Reed marsh' }).getAttribute('value');
        expect(marsh).to.equal(ids.marshVisit);
        await visit.selectOption(marsh);
        await page.getByRole('button', { name: 'Apply filters' }).click();
        await page.getByText('1 observation on this page').waitFor();
        await page.locator(`tr[data-id="${ids.heron}"]`).waitFor();
        await page.getByRole('button', { name: 'Clear' }).click();
      });

      it('shows an observation’s detections with counts, its image quality, its location and what each version changed', async () => {
        await page.goto(`${server.url}/console#/observations/${ids.fox}`);
        await page.getByRole('heading', { name: /Vulpes vulpes/ }).waitFor();
        const seen = page.getByRole('region', { name: 'What was seen' });
        const proposals = seen.locator('[data-latest-model="object-proposals"]');
        await proposals.locator('.counts').getByText(/×3$/).waitFor();
        const quality = seen.locator('[data-latest-model="image-quality"]');
        expect(await quality.locator(':scope > dt').textContent()).to.equal('Image quality (image-quality)');
        expect(await quality.locator('.verdict').textContent()).to.match(/^(Usable|Not usable: .+)$/);
        expect(await quality.getByText('Sharpness').count()).to.equal(1);
        const place = page
          .getByRole('region', { name: 'Details' })
          .getByRole('link', { name: 'Ridge meadow' });
        expect(await place.getAttribute('href')).to.equal(`#/locations/${ids.ridge}`);
        expect(await page.locator('dd.coordinates').textContent()).to.equal('44.2300, 7.1200');
        // The attributes as a list of names and values, not as JSON.
        const attributes = page.locator('dl.attributes');
        expect(await attributes.locator('dt').allTextContents()).to.deep.equal(['count', 'species']);
        expect(await attributes.locator('dd').allTextContents()).to.deep.equal(['2', 'Vulpes vulpes']);
        const history = page.locator('ol.history');
        await history.getByText("notes: 'by the stones' → 'by the three stones'").waitFor();
        expect(await history.getByText('attributes.count: 1 → 2').count()).to.equal(1);
        expect(await history.getByText(/^image m_[0-9a-f]{26} added \(640 × 480\)$/).count()).to.equal(1);
        expect(
          await history.locator('li[data-version="0"]').getByText('recorded', { exact: true }).count(),
        ).to.equal(1);
        await screen('seen-observation');
      });

      it('shows a location page with its boundary, observations and visits', async () => {
        await page.goto(`${server.url}/console#/observations/${ids.fox}`);
        await page
          .getByRole('region', { name: 'Details' })
          .getByRole('link', { name: 'Ridge meadow' })
          .click();
        await page.getByRole('heading', { name: 'Ridge meadow', level: 1 }).waitFor();
        const observations = page.getByRole('region', { name: 'Its observations' });
        await observations.locator(`tr[data-id="${ids.deer}"]`).waitFor();
        expect(await observations.locator('tbody tr').count()).to.equal(2);
        const visits = page.getByRole('region', { name: 'Its visits' });
        await visits
          .locator(`tr[data-id="${ids.ridgeVisit}"]`)
          .getByText('Ada Lovelace, Mary Anning')
          .waitFor();
        expect(await visits.locator('tbody tr').count()).to.equal(1);
        await page.locator('path.map-boundary').first().waitFor();
        await screen('seen-location');
      });

      it('shows a visit page with its location, participants and observations', async () => {
        await page.goto(`${server.url}/console#/locations/${ids.ridge}`);
        await page
          .getByRole('region', { name: 'Its visits' })
          .locator(`tr[data-id="${ids.ridgeVisit}"] a`)
          .first()
          .click();
        await page.getByRole('heading', { name: `Visit ${ids.ridgeVisit}` }).waitFor();
        expect(await page.getByRole('link', { name: 'Ridge meadow' }).first().getAttribute('href')).to.equal(
          `#/locations/${ids.ridge}`,
        );
        await page.getByText('Ada Lovelace, Mary Anning').waitFor();
        const observations = page.getByRole('region', { name: 'Its observations' });
        await observations
          .locator(`tr[data-id="${ids.fox}"]`)
          .getByRole('link', { name: 'Vulpes vulpes' })
          .waitFor();
        await screen('seen-visit');
      });
    });
  }

  it('threw no script error and had no request fail', () => {
    expect(pageErrors).to.deep.equal([]);
    expect(failedRequests).to.deep.equal([]);
  });
});
