// Part of `npm run build`: copies Redoc's standalone bundle (the /docs page's only script) into
// dist/assets, with its licence and version, so that the compiled service serves it without redoc, a
// development dependency, installed. src/openapi/api.ts reads it from there.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const outDir = process.argv[2] ?? 'dist';
const assets = join(outDir, 'assets');
const bundle = require.resolve('redoc/bundles/redoc.standalone.js');
const { version } = /** @type {{ version: string }} */ (require('redoc/package.json'));

mkdirSync(assets, { recursive: true });
copyFileSync(bundle, join(assets, 'redoc.standalone.js'));
copyFileSync(
  join(dirname(bundle), 'redoc.standalone.js.LICENSE.txt'),
  join(assets, 'redoc.standalone.js.LICENSE.txt'),
);
writeFileSync(join(assets, 'redoc.json'), `${JSON.stringify({ version }, null, 2)}\n`);
console.log(`copied redoc ${version}'s standalone bundle into ${assets}`);
