// Bundles the console (console/src) with esbuild: one script and one stylesheet (Leaflet's included), and
// beside them the map's basemap, world-atlas's 50m countries and land as TopoJSON, so that the page loads
// nothing from another origin. `npm run build` writes them into dist/console for the
// image (`node --import tsx console/build.ts dist/console`); src/console/serve.ts bundles in memory when run
// from source (`npm start`), so a checkout serves the console with no build step.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface ConsoleBundle {
  js: Uint8Array;
  css: Uint8Array;
  basemap: Uint8Array;
}

const here = fileURLToPath(new URL('.', import.meta.url));

export const bundleConsole = async (): Promise<ConsoleBundle> => {
  const result = await build({
    entryPoints: [join(here, 'src/main.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: 'out',
    entryNames: 'app',
    loader: { '.json': 'json', '.png': 'empty' },
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const file = (suffix: string) => result.outputFiles.find((output) => output.path.endsWith(suffix));
  const js = file('app.js');
  const css = file('app.css');
  if (!js || !css) throw new Error('the console bundle has no app.js or app.css');
  return { js: js.contents, css: css.contents, basemap: basemapTopology() };
};

/**
 * Natural Earth at 1:50m through world-atlas: its countries file holds the land too, so one file gives the
 * land, the water around it and the borders. Served as it is (756 kB, cached), not in the script.
 */
const basemapTopology = (): Uint8Array =>
  readFileSync(createRequire(import.meta.url).resolve('world-atlas/countries-50m.json'));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outDir = process.argv[2] ?? 'dist/console';
  const bundle = await bundleConsole();
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'app.js'), bundle.js);
  writeFileSync(join(outDir, 'app.css'), bundle.css);
  writeFileSync(join(outDir, 'basemap.json'), bundle.basemap);
  console.log(
    `bundled the console into ${outDir}: app.js ${bundle.js.length}, app.css ${bundle.css.length}, basemap.json ${bundle.basemap.length} bytes`,
  );
}
