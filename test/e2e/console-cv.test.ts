import { mkdirSync } from 'node:fs';
import { expect } from 'chai';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import {
  accessibilityViolations,
  launchChromium,
  pageWaitMs,
  skipWithoutChromium,
} from '../support/browser.js';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import { inferReply, startInferenceServer, type InferenceServer } from '../support/inference-server.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';

/** Where the screenshots go: the ignored folder of console.test.ts. */
const shots = new URL('../../.screenshots/console/', import.meta.url);

type Box = { x: number; y: number; width: number; height: number };

/** What the object detector on loopback finds: a COCO detector's answer, boxes where the scene has them. */
const found: { label: string; confidence: number; bbox: Box }[] = [
  { label: 'horse', confidence: 0.91, bbox: { x: 0.1, y: 0.45, width: 0.2, height: 0.25 } },
  { label: 'horse', confidence: 0.67, bbox: { x: 0.43, y: 0.41, width: 0.17, height: 0.27 } },
  // At the right edge: its label must stay on the image.
  { label: 'horse', confidence: 0.45, bbox: { x: 0.8, y: 0.5, width: 0.19, height: 0.24 } },
  // At the top, on the bright sky: its label goes inside the box.
  { label: 'person', confidence: 0.38, bbox: { x: 0.33, y: 0.01, width: 0.06, height: 0.3 } },
];
const detectorSummary = {
  counts: { horse: 3, person: 1 },
  image: { width: 773, height: 512 },
  model: { name: 'centernet-mobilenetv3-coco', version: '2024.05' },
  inferenceMs: 150,
  parameters: { minConfidence: 0.3, maxDetections: 100 },
};

/** A photograph of sorts: bright sky, dark meadow, dark horses and a person where `found` says. */
const scene = (width: number, height: number) => {
  const at = ({ x, y, width: w, height: h }: Box) => ({
    x: x * width,
    y: y * height,
    w: w * width,
    h: h * height,
  });
  const horse = (box: Box) => {
    const { x, y, w, h } = at(box);
    const legs = [0.15, 0.3, 0.65, 0.8]
      .map((f) => `<rect x="${x + f * w}" y="${y + h * 0.55}" width="${w * 0.06}" height="${h * 0.45}"/>`)
      .join('');
    return `<g fill="#3b2414"><ellipse cx="${x + w * 0.5}" cy="${y + h * 0.45}" rx="${w * 0.4}" ry="${h * 0.2}"/>
      <rect x="${x + w * 0.78}" y="${y}" width="${w * 0.12}" height="${h * 0.45}"/>${legs}</g>`;
  };
  const person = (box: Box) => {
    const { x, y, w, h } = at(box);
    return `<g fill="#1d2a4a"><circle cx="${x + w / 2}" cy="${y + h * 0.12}" r="${w * 0.3}"/>
      <rect x="${x + w * 0.2}" y="${y + h * 0.25}" width="${w * 0.6}" height="${h * 0.75}"/></g>`;
  };
  const [a, b, c, d] = found.map((f) => f.bbox) as [Box, Box, Box, Box];
  return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#f4f8fc"/><stop offset="1" stop-color="#c9dcee"/></linearGradient></defs>
    <rect width="${width}" height="${height * 0.5}" fill="url(#sky)"/>
    <rect y="${height * 0.5}" width="${width}" height="${height * 0.5}" fill="#4d6b2f"/>
    ${horse(a)}${horse(b)}${horse(c)}${person(d)}
  </svg>`);
};

/**
 * The observation page's account of CV jobs, in a real browser against the real service: a COCO-like
 * detector behind the Open Inference Protocol on loopback (CV_REMOTE_MODELS), the built-in
 * object-proposals and image-quality, and what the page says and draws of each.
 */
describe('the console says what CV jobs saw', function () {
  this.timeout(120_000);
  let server: TestServer;
  let inference: InferenceServer;
  let browser: Browser;
  let page: Page;
  let cv: ReturnType<typeof cvTenant>;
  let adminKey: string;
  let observationId: string;
  let photoId: string;
  let darkId: string;
  const pageErrors: string[] = [];

  before(async function () {
    skipWithoutChromium(this);
    mkdirSync(shots, { recursive: true });
    inference = await startInferenceServer((call) =>
      call.model === 'objects-test'
        ? { body: inferReply(found, detectorSummary) }
        : { body: inferReply([], { ...detectorSummary, counts: {} }) },
    );
    server = await startTestServer({
      CV_REMOTE_MODELS: JSON.stringify([
        { name: 'objects-test', url: inference.url, timeout: '10s' },
        { name: 'nothing-test', url: inference.url, timeout: '10s' },
      ]),
    });
    const tenant = await withTenant(server);
    adminKey = tenant.adminKey;
    cv = cvTenant(server.url, server.stores, tenant.tenantId, adminKey);
    observationId = await cv.observe('horses in the paddock');
    photoId = (await cv.upload(observationId, await sharp(scene(773, 512)).jpeg({ quality: 90 }).toBuffer()))
      .id;
    darkId = (
      await cv.upload(
        observationId,
        await testImage({ width: 200, height: 150, format: 'png', background: 25, blur: 4 }),
      )
    ).id;
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(`
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) =>
        window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI));
    `);
    page = await context.newPage();
    page.setDefaultTimeout(pageWaitMs);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${server.url}/console`);
    await page.getByLabel('API key', { exact: true }).fill(adminKey);
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await inference?.close();
  });

  const job = (id: string) => page.locator(`.seen-job[data-job="${id}"]`);
  const completed = async (model: string, mediaId: string) => {
    const submitted = await cv.submit({ observationId, model, mediaId });
    const done = await cv.finished(submitted.id);
    expect(done.status, JSON.stringify(done.error)).to.equal('completed');
    return done as { id: string; result: { detections: { label: string }[]; summary: any } };
  };

  it('runs the detector from the form, without parameters, and draws its labelled boxes', async () => {
    await page.goto(`${server.url}/console#/observations/${observationId}`);
    await page.getByRole('heading', { name: `Observation ${observationId}` }).waitFor();
    await page.getByLabel('Model').selectOption('objects-test');
    await page.getByRole('combobox', { name: /^Image/ }).selectOption(photoId);
    const [sent] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/cv-jobs')),
      page.getByRole('button', { name: 'Run' }).click(),
    ]);
    expect(sent.postDataJSON()).to.deep.equal({ observationId, model: 'objects-test', mediaId: photoId });
    const status = page.locator('.job-status[data-status="completed"]');
    await status.waitFor({ timeout: 30_000 });
    const jobId = (await status.getAttribute('data-job'))!;
    const groups = page.locator(`g.detection[data-job="${jobId}"]`);
    await groups.first().waitFor();
    // Drawn least confident first, so that the most confident label is on top where labels overlap.
    expect(await groups.locator('text').allTextContents()).to.deep.equal([
      'person 38\u00a0%',
      'horse 45\u00a0%',
      'horse 67\u00a0%',
      'horse 91\u00a0%',
    ]);
    const img = (await page.locator(`[data-media="${photoId}"] .overlay-frame img`).boundingBox())!;
    for (const [index, { bbox }] of found.entries()) {
      const group = page.locator(`g.detection[data-job="${jobId}"][data-index="${index}"]`);
      const box = (await group.locator('rect.box').boundingBox())!;
      expect(box.x + box.width / 2, `box ${index}`).to.be.closeTo(
        img.x + (bbox.x + bbox.width / 2) * img.width,
        1,
      );
      expect(box.y + box.height / 2, `box ${index}`).to.be.closeTo(
        img.y + (bbox.y + bbox.height / 2) * img.height,
        1,
      );
      // The label sits on its tag, the tag on the image, and the text is 2.5 % of the image's larger side.
      const tag = (await group.locator('rect.tag').boundingBox())!;
      const text = (await group.locator('text').boundingBox())!;
      expect(text.x, `label ${index}`).to.be.at.least(tag.x - 0.5);
      expect(text.x + text.width, `label ${index}`).to.be.at.most(tag.x + tag.width + 0.5);
      expect(tag.x, `tag ${index}`).to.be.at.least(img.x - 0.5);
      expect(tag.x + tag.width, `tag ${index}`).to.be.at.most(img.x + img.width + 0.5);
      expect(tag.y, `tag ${index}`).to.be.at.least(img.y - 0.5);
      const fontSize = Number(await group.locator('text').getAttribute('font-size'));
      expect(fontSize).to.be.closeTo(0.025 * 773, 0.01);
    }
  });

  it('says what each job saw: counts, the model and its run, and the image quality in words', async () => {
    const proposals = await completed('object-proposals', photoId);
    const nothing = await completed('nothing-test', photoId);
    const photoQuality = await completed('image-quality', photoId);
    const darkQuality = await completed('image-quality', darkId);
    await page.reload();
    const detector = page.locator(`[data-media="${photoId}"] .seen-job[data-model="objects-test"]`);
    await detector.waitFor();
    expect(await detector.locator('.counts').textContent()).to.equal('horse ×3, person');
    const run = await detector.locator('.run').textContent();
    expect(run).to.match(
      /^centernet-mobilenetv3-coco 2024\.05 · 150 ms · confidence ≥ 30\s% · up to 100 detections · finished/,
    );

    // object-proposals gives no counts: the page counts its detections by label.
    const byLabel = new Map<string, number>();
    for (const { label } of proposals.result.detections) byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
    expect(byLabel.size).to.be.greaterThan(0);
    const counts = (await job(proposals.id).locator('.counts').textContent())!.split(', ');
    expect(counts.sort()).to.deep.equal(
      [...byLabel].map(([label, n]) => (n > 1 ? `${label} ×${n}` : label)).sort(),
    );

    expect(await job(nothing.id).locator('.counts').textContent()).to.equal('Nothing found above 30\u00a0%');

    // The dark, blurred, small image: every reason, in words.
    const dark = job(darkQuality.id);
    expect(await dark.locator('.verdict').textContent()).to.equal(
      'Not usable: blurry, underexposed, low resolution',
    );
    const facts = async (locator: typeof dark) =>
      Object.fromEntries(
        await Promise.all(
          (await locator.locator('dt').all()).map(async (dt) => [
            await dt.textContent(),
            await dt.locator('xpath=following-sibling::dd[1]').textContent(),
          ]),
        ),
      ) as Record<string, string>;
    const darkFacts = await facts(dark);
    expect(darkFacts.Resolution).to.equal('200 × 150, 0.03 MP');
    expect(darkFacts['Mean luminance']).to.equal('25 of 255');
    expect(darkFacts.Clipping).to.equal('none');
    expect(Number(darkFacts.Sharpness)).to.be.closeTo(darkQuality.result.summary.sharpness as number, 0.05);

    const photo = job(photoQuality.id);
    const summary = photoQuality.result.summary as { usable: boolean; meanLuminance: number };
    expect(summary.usable).to.equal(true);
    expect(await photo.locator('.verdict').textContent()).to.equal('Usable');
    const photoFacts = await facts(photo);
    expect(photoFacts.Resolution).to.equal('773 × 512, 0.4 MP');
    expect(photoFacts['Mean luminance']).to.equal(`${Math.round(summary.meanLuminance)} of 255`);
    expect(await photo.textContent()).not.to.include('{');

    // Each model's boxes in a colour of its own, the same as its swatch.
    // (A string, evaluated through the DevTools protocol: the tests are compiled without the DOM's types.)
    const style = (selector: string, property: string) =>
      page.evaluate<string>(
        `getComputedStyle(document.querySelector('[data-media="${photoId}"] ${selector}')).${property}`,
      );
    const stroke = (model: string) => style(`g.detection[data-model="${model}"] rect.box`, 'stroke');
    const swatch = (model: string) => style(`.seen-job[data-model="${model}"] .swatch`, 'backgroundColor');
    expect(await stroke('objects-test')).not.to.equal(await stroke('object-proposals'));
    expect(await stroke('objects-test')).to.equal(await swatch('objects-test'));
    expect(await accessibilityViolations(page)).to.deep.equal([]);
    await page.screenshot({ path: new URL('observation-cv.png', shots).pathname, fullPage: true });
  });

  it('keeps the results, the boxes and the form within a phone’s width', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.locator('.seen-job').first().waitFor();
    const tooWide: string[] = [];
    for (const selector of ['.media figure', '.seen', 'form[aria-label="Run a CV job"]'])
      for (const element of await page.locator(selector).all()) {
        const box = (await element.boundingBox())!;
        if (box.x < 0 || box.x + box.width > 390) tooWide.push(`${selector}: ${box.x}+${box.width}`);
      }
    expect(tooWide).to.deep.equal([]);
    expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(390);
    // Shown much reduced, the labels keep a legible size on screen.
    const label = (await page.locator(`[data-media="${photoId}"] g.detection text`).first().boundingBox())!;
    expect(label.height).to.be.at.least(11);
    await page.screenshot({ path: new URL('observation-cv-phone.png', shots).pathname, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('sends the minimum confidence and the maximum detections only when they are set', async () => {
    await page.getByLabel('Minimum confidence (%)').fill('50');
    await page.getByLabel('Maximum detections').fill('10');
    await page.getByLabel('Model').selectOption('objects-test');
    const [sent] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/cv-jobs')),
      page.getByRole('button', { name: 'Run' }).click(),
    ]);
    expect((sent.postDataJSON() as { parameters: unknown }).parameters).to.deep.equal({
      minConfidence: 0.5,
      maxDetections: 10,
    });
    await page.getByLabel('Maximum detections').fill('');
    await page.getByLabel('Minimum confidence (%)').fill('');
  });

  it('broke no CSP rule and threw no script error', async () => {
    expect(await page.evaluate<string[]>('window.cspViolations')).to.deep.equal([]);
    expect(pageErrors).to.deep.equal([]);
  });
});
