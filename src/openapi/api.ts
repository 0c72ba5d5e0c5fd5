import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import Router from '@koa/router';
import { contentSecurityPolicy } from '../http/security-headers.js';
import { openApiDocument } from './document.js';
import { docsAssetPath, docsPath, documentPath } from './service.js';

export interface OpenApiApiDeps {
  /** PUBLIC_URL (the token issuer): the document's server and token URL, and the page's base path. */
  publicUrl: string;
}

const require = createRequire(import.meta.url);
/** Redoc's standalone bundle, from the installed package: the page loads nothing from elsewhere. */
const redocBundle = require.resolve('redoc/bundles/redoc.standalone.js');
const redocVersion = (require('redoc/package.json') as { version: string }).version;

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

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const page = (base: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Observation service API</title>
  </head>
  <body>
    <redoc spec-url="${escapeHtml(`${base}${documentPath}`)}" expand-responses="200,201,202" path-in-middle-panel></redoc>
    <script src="${escapeHtml(`${base}${docsAssetPath}`)}"></script>
  </body>
</html>
`;

/** GET /v1/openapi.json, the document; GET /docs, the page that renders it; and the page's script. */
export const openApiApi = (deps: OpenApiApiDeps): Router => {
  const router = new Router();
  const document = JSON.stringify(openApiDocument({ publicUrl: deps.publicUrl }));
  // Behind a path prefix (PUBLIC_URL https://host/api), the page names its script and document under it.
  const base = new URL(deps.publicUrl).pathname.replace(/\/+$/, '');
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
    bundle ??= readFile(redocBundle);
    const etag = `"redoc-${redocVersion}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'public, max-age=86400');
    if (ctx.get('If-None-Match') === etag) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = await bundle;
  });

  return router;
};
