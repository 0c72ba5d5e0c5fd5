import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium (`apt-get install -y chromium`, which .ci/run does when it is missing). */
const executablePath = '/usr/bin/chromium';

/**
 * How long a page's waits may take (`page.setDefaultTimeout`): what a user sees in well under a second can
 * take over 15 s when `npm test` runs with both cores busy (chromium, the service and PostgreSQL starved by
 * other work), and a wait that never ends still fails.
 */
export const pageWaitMs = 45_000;

/** In a suite's `before`: skips the suite, saying so, on a machine without Debian's chromium. */
export const skipWithoutChromium = (context: Mocha.Context): void => {
  if (existsSync(executablePath)) return;
  console.log(`    skipped: ${executablePath} is not installed (apt-get install -y chromium)`);
  context.skip();
};

/**
 * Headless chromium as this machine allows it: as root (no sandbox), without a GPU, and without the
 * background connections that a machine with no network would refuse, many at a time.
 */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
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

/**
 * axe-core's source, evaluated in the page through the DevTools protocol: page.addScriptTag would add an
 * inline script, which the console's CSP refuses, as it should.
 */
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Serious or critical axe-core violations on the page as it is now: none is allowed on any screen. */
export const accessibilityViolations = async (page: Page) => {
  if (!(await page.evaluate('typeof axe !== "undefined"'))) await page.evaluate(axeSource);
  const violations = await page.evaluate<string[]>(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`,
  );
  return violations;
};
