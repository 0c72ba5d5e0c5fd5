/** The service's own HTML pages (/docs, /console): no template engine, so every value is escaped here. */

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A page in UTF-8, sized for phones, with the head's and body's lines given (already escaped). */
export const htmlPage = (head: string[], body: string[]) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
${head.map((line) => `    ${line}`).join('\n')}
  </head>
  <body>
${body.map((line) => `    ${line}`).join('\n')}
  </body>
</html>
`;

/** The path PUBLIC_URL puts the service under (`/api` for https://host/api/), without a trailing slash. */
export const basePath = (publicUrl: string) => new URL(publicUrl).pathname.replace(/\/+$/, '');
