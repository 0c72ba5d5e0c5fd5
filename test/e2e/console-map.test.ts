import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import {
  accessibilityViolations,
  launchChromium,
  pageWaitMs,
  skipWithoutChromium,
} from '../support/browser.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { boundsOf, pixelOf, zoomOf, type Bounds } from '../support/map.js';
import { eventually } from '../support/wait.js';

/** Where the screenshots go: the ignored folder of console.test.ts. */
const shots = new URL('../../.screenshots/console/', import.meta.url);

/** 30 points within 2° of each other around Turin, spread on a spiral so that none is on another. */
const nearTurin = Array.from({ length: 30 }, (_, i) => ({
  lat: 45 + Math.sin(i * 2.4) * (0.1 + i * 0.06),
  lon: 7.6 + Math.cos(i * 2.4) * (0.1 + i * 0.06),
}));
/** A few far away, but on the same continent: the view that fits them all is Europe, not the world. */
const farAway = [
  { lat: 59.91, lon: 10.75, notes: 'elk near Oslo' },
  { lat: 40.42, lon: -3.7, notes: 'kite over Madrid' },
  { lat: 37.98, lon: 23.73, notes: 'owl in Athens' },
];
const allPoints = [...nearTurin, ...farAway];

const square = (west: number, south: number, east: number, north: number) => ({
  type: 'Polygon',
  coordinates: [
    [
      [west, south],
      [east, south],
      [east, north],
      [west, north],
      [west, south],
    ],
  ],
});

/** A tile server on another loopback port: a 1×1 PNG for every path, each path recorded. */
const startTileServer = async () => {
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
    'base64',
  );
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'image/png' }).end(png);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, paths, close: () => new Promise((resolve) => server.close(resolve)) };
};

/**
 * The console's map in a real browser against the real service: it fits the data, zooms and pans,
 * clusters, draws boundaries, filters the list by a drawn box and opens a point's observation, all from
 * the service's own origin; with CONSOLE_TILE_URL, raster tiles from the one origin the CSP then admits.
 */
describe('the console map in a browser', function () {
  this.timeout(120_000);
  let browser: Browser;

  before(async function () {
    skipWithoutChromium(this);
    mkdirSync(shots, { recursive: true });
    browser = await launchChromium();
  });
  after(() => browser?.close());

  /** A page of a fresh context, recording what should never happen: errors, failures, other origins. */
  const openPage = async (server: TestServer, viewport = { width: 1280, height: 800 }) => {
    const context = await browser.newContext({ viewport });
    const problems: string[] = [];
    const requested: string[] = [];
    context.on('request', (r) => requested.push(r.url()));
    context.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
    context.on('response', (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
    });
    await context.addInitScript(`
      document.addEventListener('securitypolicyviolation', (event) =>
        console.error('CSP: ' + event.violatedDirective + ' ' + event.blockedURI));
    `);
    const page = await context.newPage();
    page.setDefaultTimeout(pageWaitMs);
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    const answer = await page.goto(`${server.url}/console`);
    return { context, page, problems, requested, csp: answer?.headers()['content-security-policy'] ?? '' };
  };

  const signIn = async (page: Page, key: string) => {
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  };

  /** The view once it holds still (the map starts on the world, then flies to the data). */
  const settledView = async (map: Locator, what = 'the map to settle') => {
    let last = '';
    return eventually(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const now = `${await map.getAttribute('data-bounds')} ${await map.getAttribute('data-zoom')}`;
        const still = now === last && (await zoomOf(map)) >= 3;
        last = now;
        return still ? boundsOf(map) : undefined;
      },
      10_000,
      what,
    );
  };

  const drag = async (page: Page, from: { x: number; y: number }, to: { x: number; y: number }) => {
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(to.x, to.y, { steps: 8 });
    await page.mouse.up();
  };

  /** The markers' counts: a cluster's number, or 1 for a point. */
  const shownCounts = async (page: Page) => [
    ...(await page.locator('.map-cluster').allTextContents()).map(Number),
    ...(await page.locator('.map-point').all()).map(() => 1),
  ];

  describe('offline, with no tile URL', () => {
    let server: TestServer;
    let tenantId: string;
    let adminKey: string;
    const ids: string[] = [];
    let context: BrowserContext;
    let page: Page;
    let problems: string[];
    let requested: string[];
    let map: Locator;

    const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
      request(`${server.url}/v1/tenants/${tenantId}${path}`, {
        ...init,
        headers: { 'X-API-Key': adminKey, ...init.headers },
      });

    /** The observations screen mounted anew, so that its map fits the data again. */
    const showObservationsAfresh = async () => {
      await page.goto(`${server.url}/console#/`);
      await page.goto(`${server.url}/console#/observations`);
      await page.getByText(`${allPoints.length} observations on this page`).waitFor();
      await settledView(map);
      await eventually(async () => ((await page.locator('.map-cluster').count()) > 0 ? true : undefined));
    };

    before(async () => {
      server = await startTestServer();
      ({ tenantId, adminKey } = await withTenant(server));
      for (const [index, point] of allPoints.entries()) {
        const created = await api('/observations', {
          method: 'POST',
          body: {
            observedAt: `2026-05-01T09:${String(index).padStart(2, '0')}:00Z`,
            position: { lat: point.lat, lon: point.lon },
            notes: 'notes' in point ? point.notes : `sighting ${index}`,
          },
        });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        ids.push(created.body.id as string);
      }
      for (const [name, position, boundary] of [
        ['Po valley plot', { lat: 45, lon: 7.75 }, square(7, 44.5, 8.5, 45.5)],
        ['Alpine meadow', { lat: 45.9, lon: 6.6 }, square(6.2, 45.6, 7, 46.2)],
      ] as const) {
        const created = await api('/locations', {
          method: 'POST',
          body: { name, position, boundary },
        });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
      }
      ({ context, page, problems, requested } = await openPage(server));
      await signIn(page, adminKey);
      await page.goto(`${server.url}/console#/observations`);
      await page.getByText(`${allPoints.length} observations on this page`).waitFor();
      map = page.getByRole('region', { name: 'Map of the observations on this page' });
    });
    after(async () => {
      await context?.close();
      await server?.close();
    });

    it('fits the view to the data: every point inside, and not the whole world', async () => {
      const bounds = await settledView(map, 'the map to fit the data');
      for (const p of allPoints) {
        expect(p.lon).to.be.within(bounds.west, bounds.east);
        expect(p.lat).to.be.within(bounds.south, bounds.north);
      }
      expect(await zoomOf(map)).to.be.within(3, 9);
      // Less than half the world either way: the data's region.
      expect(bounds.east - bounds.west).to.be.below(180);
      expect(bounds.north - bounds.south).to.be.below(45);
      // The basemap is drawn: Natural Earth's land and borders on a canvas, from the service itself.
      await page.locator('.leaflet-basemap-pane canvas').waitFor();
      expect(requested.filter((url) => url.endsWith('/console/basemap.json'))).to.have.length(1);
      expect(await accessibilityViolations(page)).to.deep.equal([]);
      await page.screenshot({ path: new URL('observations-map.png', shots).pathname });
    });

    it('clusters the points near each other, showing how many each holds', async () => {
      const counts = await eventually(async () => {
        const shown = await shownCounts(page);
        return shown.reduce((a, b) => a + b, 0) === allPoints.length ? shown : undefined;
      });
      expect(Math.max(...counts)).to.be.at.least(10);
      expect(await page.locator('.map-cluster').first().getAttribute('role')).to.equal('button');
    });

    it('zooms in and out with its buttons, and pans with a drag and with the keys', async () => {
      const before = await zoomOf(map);
      await page.getByRole('button', { name: 'Zoom in', exact: true }).click();
      await eventually(async () => ((await zoomOf(map)) === before + 1 ? true : undefined));
      await page.getByRole('button', { name: 'Zoom out', exact: true }).click();
      await eventually(async () => ((await zoomOf(map)) === before ? true : undefined));
      const start = await boundsOf(map);
      const box = (await map.boundingBox())!;
      const centre = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
      await drag(page, centre, { x: centre.x - 200, y: centre.y });
      const dragged = await eventually(async () => {
        const b = await boundsOf(map);
        return b.west > start.west + 1 ? b : undefined;
      });
      expect(dragged.north).to.be.closeTo(start.north, 0.5);
      await map.focus();
      await page.keyboard.press('ArrowLeft');
      await eventually(async () => ((await boundsOf(map)).west < dragged.west ? true : undefined));
    });

    it('opens a cluster when it is clicked, zooming in until its points come apart', async () => {
      await showObservationsAfresh();
      const largest = async () =>
        Math.max(...(await page.locator('.map-cluster').allTextContents()).map(Number));
      const biggest = await eventually(async () => {
        const n = await largest();
        return n >= 10 ? n : undefined;
      });
      const zoom = await zoomOf(map);
      await page
        .locator('.map-cluster', { hasText: String(biggest) })
        .first()
        .click();
      await eventually(async () => ((await zoomOf(map)) > zoom ? true : undefined));
      await eventually(
        async () => {
          const shown = await shownCounts(page);
          return shown.length > 1 && Math.max(...shown) < biggest ? true : undefined;
        },
        10_000,
        'the cluster to come apart',
      );
      // From the keyboard too: a cluster is a button that Enter opens.
      await settledView(map);
      const zoomed = await zoomOf(map);
      const next = page.locator('.map-cluster').first();
      expect(await next.count(), 'a cluster left to open').to.equal(1);
      await next.focus();
      await page.keyboard.press('Enter');
      await eventually(async () => ((await zoomOf(map)) > zoomed ? true : undefined));
    });

    it('filters the list by a box drawn on the map, and Shift and drag draws one too', async () => {
      await showObservationsAfresh();
      const inBox = (b: Bounds) =>
        allPoints.filter((p) => p.lon >= b.west && p.lon <= b.east && p.lat >= b.south && p.lat <= b.north);
      const box = { west: 6, south: 44, east: 11, north: 61 };
      const expected = inBox(box).length;
      expect(expected).to.be.within(2, allPoints.length - 2);
      const listRequests = () => requested.filter((url) => url.includes('/observations?')).length;
      const before = listRequests();
      await page.getByRole('button', { name: 'Draw a box' }).click();
      expect(await page.getByRole('button', { name: /Drawing a box/ }).getAttribute('aria-pressed')).to.equal(
        'true',
      );
      await drag(page, await pixelOf(map, box.west, box.north), await pixelOf(map, box.east, box.south));
      await page.getByText(`${expected} observations on this page`).waitFor();
      const filtered = requested.slice(-(listRequests() - before + 5)).filter((url) => url.includes('bbox='));
      expect(filtered, 'the list was asked for the box').to.not.be.empty;
      const drawn = (await page.getByLabel('Box (minLon,minLat,maxLon,maxLat)').inputValue())
        .split(',')
        .map(Number);
      expect(drawn[0]).to.be.closeTo(box.west, 0.3);
      expect(drawn[1]).to.be.closeTo(box.south, 0.3);
      expect(drawn[2]).to.be.closeTo(box.east, 0.3);
      expect(drawn[3]).to.be.closeTo(box.north, 0.3);
      expect(await page.locator('table tbody tr').count()).to.equal(expected);
      expect(await page.locator('table').textContent()).not.to.include('kite over Madrid');
      // The drawn box stays on the map, and the toggle is off again.
      await page.locator('path.map-bbox').waitFor();
      await page.getByRole('button', { name: 'Draw a box' }).waitFor();

      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByText(`${allPoints.length} observations on this page`).waitFor();
      await eventually(async () => ((await page.locator('path.map-bbox').count()) === 0 ? true : undefined));
      await settledView(map);
      const south = { west: -10, south: 35, east: 30, north: 42 };
      await page.keyboard.down('Shift');
      await drag(
        page,
        await pixelOf(map, south.west, south.north),
        await pixelOf(map, south.east, south.south),
      );
      await page.keyboard.up('Shift');
      await page.getByText(`${inBox(south).length} observations on this page`).waitFor();
      expect(inBox(south).length).to.equal(2);
      await page.getByRole('button', { name: 'Clear' }).click();
      await page.getByText(`${allPoints.length} observations on this page`).waitFor();
    });

    it('opens the observation of a point that is clicked', async () => {
      const oslo = ids[nearTurin.length]!;
      await page.getByRole('button', { name: 'Observation: elk near Oslo' }).click();
      await page.getByRole('heading', { name: `Observation ${oslo}` }).waitFor();
      expect(new URL(page.url()).hash).to.equal(`#/observations/${oslo}`);
      // Its own map is the region around it, not the world.
      const own = page.getByRole('region', { name: 'Where it was observed' });
      const b = await eventually(async () => {
        const bounds = await boundsOf(own);
        // Zoom 7 on a map 1,080 px wide spans about 12°: a region, where the world is 360°.
        return bounds.east - bounds.west < 15 ? bounds : undefined;
      });
      expect(10.75).to.be.within(b.west, b.east);
      expect(59.91).to.be.within(b.south, b.north);
    });

    it('draws the locations with their boundaries, each named on hover', async () => {
      await page.goto(`${server.url}/console#/places`);
      const places = page.getByRole('region', { name: 'Map of the locations and their boundaries' });
      await places.waitFor();
      const outlines = page.locator('path.map-boundary');
      await eventually(async () => ((await outlines.count()) === 2 ? true : undefined));
      // Inside an outline, near its edge, where no marker is.
      const outline = (await outlines.first().boundingBox())!;
      await page.mouse.move(outline.x + 6, outline.y + outline.height / 2);
      await page
        .getByRole('tooltip', { name: /^(Po valley plot|Alpine meadow)$/ })
        .first()
        .waitFor();
      expect(await accessibilityViolations(page)).to.deep.equal([]);
    });

    it('fits a phone: no sideways scroll at 390 × 844, and no axe violation', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await showObservationsAfresh();
      expect((await map.boundingBox())!.width).to.be.at.most(390);
      expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(390);
      expect(await accessibilityViolations(page)).to.deep.equal([]);
      await page.screenshot({ path: new URL('observations-map-phone.png', shots).pathname });
      await page.goto(`${server.url}/console#/observations/${ids[0]}`);
      await page.getByRole('region', { name: 'Where it was observed' }).waitFor();
      await page.locator('.map-point').waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(390);
      expect(await accessibilityViolations(page)).to.deep.equal([]);
      await page.setViewportSize({ width: 1280, height: 800 });
    });

    it('asked nothing of another origin, failed no request and logged no error', () => {
      const origin = new URL(server.url).origin;
      expect(requested.filter((url) => new URL(url).origin !== origin)).to.deep.equal([]);
      expect(problems).to.deep.equal([]);
      expect(
        requested.filter((url) => /\/\d+\/\d+\/\d+\.png/.test(url)),
        'no tile',
      ).to.deep.equal([]);
    });
  });

  describe('with CONSOLE_TILE_URL set', () => {
    let server: TestServer;
    let tiles: Awaited<ReturnType<typeof startTileServer>>;
    before(async () => {
      tiles = await startTileServer();
      server = await startTestServer({
        CONSOLE_TILE_URL: `${tiles.origin}/tiles/{z}/{x}/{y}.png`,
        CONSOLE_TILE_ATTRIBUTION: '© Test tiles <b>not bold</b>',
      });
    });
    after(async () => {
      await server?.close();
      await tiles?.close();
    });

    it('adds the tiles under the basemap, from the one origin the CSP admits', async () => {
      const { tenantId, adminKey } = await withTenant(server);
      const created = await request(`${server.url}/v1/tenants/${tenantId}/observations`, {
        method: 'POST',
        headers: { 'X-API-Key': adminKey },
        body: { observedAt: '2026-05-01T09:30:00Z', position: { lat: 45.07, lon: 7.69 } },
      });
      expect(created.status).to.equal(201);
      const { context, page, problems, csp } = await openPage(server);
      expect(csp).to.include(`img-src 'self' blob: ${tiles.origin};`);
      await signIn(page, adminKey);
      await page.goto(`${server.url}/console#/observations`);
      await page.getByText('1 observation on this page').waitFor();
      await eventually(() =>
        Promise.resolve(tiles.paths.some((path) => /^\/tiles\/\d+\/\d+\/\d+\.png$/.test(path)) || undefined),
      );
      await page.locator('.leaflet-tile-loaded').first().waitFor();
      // The operator's credit is shown as text.
      await page
        .locator('.leaflet-control-attribution', { hasText: '© Test tiles <b>not bold</b>' })
        .waitFor();
      expect(problems).to.deep.equal([]);
      await context.close();
    });
  });
});
