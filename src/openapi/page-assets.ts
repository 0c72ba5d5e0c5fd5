/**
 * What the documentation page loads besides the document: the service's icon, and Redoc's bundle made to
 * load nothing from another origin.
 */

/**
 * The service's icon, served at GET /favicon.ico: browsers ask for it on their own, and it answered 404. An
 * SVG kept here as text, so that the compiled service needs no asset copied beside it; the page names it
 * with `type="image/svg+xml"`, which also points a browser at it when the service sits under a path prefix.
 */
export const faviconPath = '/favicon.ico';

export const faviconSvg = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">
  <rect width="32" height="32" rx="6" fill="#2f6f4e"/>
  <path d="M16 5a8 8 0 0 0-8 8c0 6 8 14 8 14s8-8 8-14a8 8 0 0 0-8-8z" fill="#fff"/>
  <circle cx="16" cy="13" r="3" fill="#2f6f4e"/>
</svg>
`;

/** It changes only with a release; a browser may keep it for a week. */
export const faviconCacheControl = 'public, max-age=604800';

/**
 * Redoc's side menu shows Redocly's logo from their CDN, whatever the options: the page's policy refuses it
 * (a CSP violation in every visitor's console), and fetching it would tell a third party who reads the docs.
 * The served bundle names an empty `data:` image instead, which fails to load at once, and Redoc then
 * leaves the logo out (its `onError`), keeping the "API docs by Redocly" link.
 */
const redocLogo = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

export const withoutRemoteLogo = (bundle: Buffer): Buffer =>
  Buffer.from(bundle.toString('utf8').replaceAll(redocLogo, 'data:,'), 'utf8');
