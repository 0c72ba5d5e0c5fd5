import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import Router from '@koa/router';
import { basePath, escapeHtml, htmlPage } from '../http/html.js';
import { contentSecurityPolicy } from '../http/security-headers.js';
import { faviconCacheControl, faviconPath, faviconSvg, withoutRemoteLogo } from './page-assets.js';
import { docsAssetPath, docsPath, documentPath } from './service.js';

export interface OpenApiApiDeps {
  /** PUBLIC_URL (the token issuer): the page's base path. */
  publicUrl: string;
  /** The document (built for the same PUBLIC_URL), which the app also reads each route's parameters from. */
  document: object;
}

/** Where `npm run build` (scripts/copy-redoc.js) puts Redoc's bundle, beside the compiled dist/src/. */
const builtAssets = new URL('../../assets/', import.meta.url);

/**
 * Redoc's standalone bundle, served by the service itself: the page loads nothing from elsewhere. The
 * compiled service (the image) reads the copy the build made, since redoc is a development dependency;
 * the source run through tsx (`npm start`) reads the installed package.
 */
const locateRedoc = (): { file: string; version: string } => {
  const manifest = new URL('redoc.json', builtAssets);
  if (existsSync(manifest)) {
    const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
    return { file: fileURLToPath(new URL('redoc.standalone.js', builtAssets)), version };
  }
  const require = createRequire(import.meta.url);
  return {
    file: require.resolve('redoc/bundles/redoc.standalone.js'),
    version: (require('redoc/package.json') as { version: string }).version,
  };
};
const redoc = locateRedoc();

/**
 * The page's own policy: its script and the document from this origin, Redoc's inline styles, and the
 * search worker Redoc starts from a blob. Nothing from any other origin.
 */
export const docsContentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const page = (base: string) =>
  htmlPage(
    [
      '<title>Observation service API</title>',
      `<link rel="icon" type="image/svg+xml" href="${escapeHtml(`${base}${faviconPath}`)}">`,
    ],
    [
      `<redoc spec-url="${escapeHtml(`${base}${documentPath}`)}" expand-responses="200,201,202" path-in-middle-panel></redoc>`,
      `<script src="${escapeHtml(`${base}${docsAssetPath}`)}"></script>`,
    ],
  );

/** GET /v1/openapi.json, the document; GET /docs, the page that renders it; and the page's script. */
export const openApiApi = (deps: OpenApiApiDeps): Router => {
  const router = new Router();
  const document = JSON.stringify(deps.document);
  // Behind a path prefix (PUBLIC_URL https://host/api), the page names its script and document under it.
  const base = basePath(deps.publicUrl);
  const html = page(base);
  let bundle: Promise<Buffer> | undefined;

  router.get(documentPath, (ctx) => {
    ctx.type = 'application/json';
    ctx.body = document;
  });

  router.get(docsPath, contentSecurityPolicy(docsContentSecurityPolicy), (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  });

  router.get(docsAssetPath, async (ctx) => {
    bundle ??= readFile(redoc.file).then(withoutRemoteLogo);
    const etag = `"redoc-${redoc.version}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'public, max-age=86400');
    if (ctx.get('If-None-Match') === etag) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = await bundle;
  });

  router.get(faviconPath, (ctx) => {
    ctx.set('Cache-Control', faviconCacheControl);
    ctx.type = 'image/svg+xml';
    ctx.body = faviconSvg;
  });

  return router;
};
