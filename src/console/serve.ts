import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Middleware } from 'koa';
import { basePath, escapeHtml, htmlPage } from '../http/html.js';

/** The console's policy: everything from this origin, nothing inline; images of media are blob: URLs. */
export const consoleContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
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
    const [js, css] = await Promise.all([
      readFile(new URL('app.js', builtDir)),
      readFile(new URL('app.css', builtDir)),
    ]);
    return { js, css };
  }
  const builder = new URL('build.ts', builtDir).href;
  const { bundleConsole } = (await import(builder)) as { bundleConsole: () => Promise<Bundle> };
  return bundleConsole();
};

/** The page: no inline script or style; the base path reaches the script through a meta tag. */
const page = (base: string) =>
  htmlPage(
    [
      `<meta name="obs-base" content="${escapeHtml(base)}">`,
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
export const consoleRoutes = ({ publicUrl }: { publicUrl: string }): Middleware => {
  const base = basePath(publicUrl);
  const html = page(base);
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
    ctx.set('Content-Security-Policy', consoleContentSecurityPolicy);
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
