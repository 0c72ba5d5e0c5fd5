import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Middleware } from 'koa';
import { basePath, escapeHtml, htmlPage } from '../http/html.js';

/** The map's raster tiles (CONSOLE_TILE_URL, CONSOLE_TILE_ATTRIBUTION): none unless an operator sets them. */
export interface ConsoleSettings {
  tiles: { url: string; attribution: string } | null;
}

/** The origin of a tile URL template: the console fills its `{s}` (a subdomain) with `a`, always. */
const tileOrigin = (template: string) =>
  new URL(template.replaceAll('{s}', 'a').replaceAll(/\{[a-z]+\}/g, '0')).origin;

/**
 * The console's policy: everything from this origin, nothing inline; images of media are blob: URLs, and
 * the map's tiles come from the one origin an operator named in CONSOLE_TILE_URL, if any.
 */
export const consoleContentSecurityPolicy = ({ tiles }: ConsoleSettings = { tiles: null }) =>
  [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' blob:${tiles ? ` ${tileOrigin(tiles.url)}` : ''}`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

export const consolePath = '/console';

interface Bundle {
  js: Uint8Array;
  css: Uint8Array;
  /** The map's vector basemap (TopoJSON), an asset of its own so that the script stays small. */
  basemap: Uint8Array;
}

/** Where `npm run build` puts the bundle: dist/console, beside the compiled dist/src/. */
const builtDir = new URL('../../console/', import.meta.url);

/**
 * The compiled service (the image) serves what `npm run build` bundled; run from source (`npm start`,
 * tests), it bundles console/src in memory once, with esbuild, a development dependency, so that a checkout
 * needs no build step and never serves a stale bundle. The module is named at run time so that the
 * service's compilation does not take in the console's sources.
 */
const loadBundle = async (): Promise<Bundle> => {
  if (existsSync(new URL('app.js', builtDir))) {
    const [js, css, basemap] = await Promise.all(
      ['app.js', 'app.css', 'basemap.json'].map((name) => readFile(new URL(name, builtDir))),
    );
    return { js: js!, css: css!, basemap: basemap! };
  }
  const builder = new URL('build.ts', builtDir).href;
  const { bundleConsole } = (await import(builder)) as { bundleConsole: () => Promise<Bundle> };
  return bundleConsole();
};

/** What the script reads from meta tags, since the page has no inline script: the tiles, when set. */
const tileMeta = ({ tiles }: ConsoleSettings) =>
  tiles
    ? [
        `<meta name="obs-tile-url" content="${escapeHtml(tiles.url)}">`,
        `<meta name="obs-tile-attribution" content="${escapeHtml(tiles.attribution)}">`,
      ]
    : [];

/** The page: no inline script or style; the base path (and the tiles) reach the script through meta tags. */
const page = (base: string, settings: ConsoleSettings) =>
  htmlPage(
    [
      `<meta name="obs-base" content="${escapeHtml(base)}">`,
      ...tileMeta(settings),
      '<title>Observation service console</title>',
      `<link rel="icon" href="${escapeHtml(`${base}/favicon.ico`)}">`,
      `<link rel="stylesheet" href="${escapeHtml(`${base}${consolePath}/app.css`)}">`,
      `<script type="module" src="${escapeHtml(`${base}${consolePath}/app.js`)}"></script>`,
    ],
    ['<div id="console"><p>Loading the console…</p></div>'],
  );

/**
 * GET /console (the page, for every path under it, since the console routes by its hash), and its script
 * and stylesheet. A UI, not part of the API: kept out of the OpenAPI document and its router.
 */
export const consoleRoutes = ({
  publicUrl,
  settings,
}: {
  publicUrl: string;
  settings: ConsoleSettings;
}): Middleware => {
  const base = basePath(publicUrl);
  const html = page(base, settings);
  const policy = consoleContentSecurityPolicy(settings);
  let bundle: Promise<Bundle> | undefined;
  const assets = () => {
    bundle ??= loadBundle().catch((error: unknown) => {
      bundle = undefined;
      throw error;
    });
    return bundle;
  };

  return async (ctx, next) => {
    const path = ctx.path;
    const ours = path === consolePath || path.startsWith(`${consolePath}/`);
    if (!ours || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
      await next();
      return;
    }
    ctx.set('Content-Security-Policy', policy);
    if (path === `${consolePath}/basemap.json`) {
      const { basemap } = await assets();
      ctx.type = 'application/json';
      // Natural Earth changes between releases of the service, not between its requests.
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.body = Buffer.from(basemap);
      return;
    }
    if (path === `${consolePath}/app.js` || path === `${consolePath}/app.css`) {
      const { js, css } = await assets();
      const script = path.endsWith('.js');
      ctx.type = script ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = Buffer.from(script ? js : css);
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  };
};
