import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (`apt-get install -y chromium`, which .ci/run does when it is missing). */
const executablePath = '/usr/bin/chromium';

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
