// Bundles the console (console/src) with esbuild: one script and one stylesheet, world map included, so
// that the page loads nothing from another origin. `npm run build` writes them into dist/console for the
// image (`node --import tsx console/build.ts dist/console`); src/console/serve.ts bundles in memory when run
// from source (`npm start`), so a checkout serves the console with no build step.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface ConsoleBundle {
  js: Uint8Array;
  css: Uint8Array;
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
    loader: { '.json': 'json' },
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const file = (suffix: string) => result.outputFiles.find((output) => output.path.endsWith(suffix));
  const js = file('app.js');
  const css = file('app.css');
  if (!js || !css) throw new Error('the console bundle has no app.js or app.css');
  return { js: js.contents, css: css.contents };
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outDir = process.argv[2] ?? 'dist/console';
  const bundle = await bundleConsole();
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'app.js'), bundle.js);
  writeFileSync(join(outDir, 'app.css'), bundle.css);
  console.log(`bundled the console into ${outDir} (${bundle.js.length + bundle.css.length} bytes)`);
}
