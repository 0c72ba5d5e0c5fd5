#!/usr/bin/env node
// `obs`, the operator's command line (src/cli/main.ts), as a command: `bin` in package.json, on PATH in
// the image. A checkout with its development dependencies runs the TypeScript source through tsx, so that
// a build left over from yesterday never runs against today's data; without them (the image, where src/
// and tsx are absent), it runs the compiled dist/src/cli/main.js with plain node.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);

/** tsx's loader, or undefined when it is not installed (`npm ci --omit=dev`). */
const tsxLoader = async () => {
  try {
    return await import('tsx/esm/api');
  } catch {
    return undefined;
  }
};

const tsx = existsSync(source) ? await tsxLoader() : undefined;
if (tsx) {
  tsx.register();
  await import(source.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  console.error(
    'obs: neither src/cli/main.ts with tsx (npm ci) nor dist/src/cli/main.js (npm run build) is here',
  );
  process.exitCode = 1;
}
