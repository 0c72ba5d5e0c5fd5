import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { openApiDocument } from '../../src/openapi/document.js';

/**
 * docs/api.md's table of every route and what it needs (under "Scopes"), against the OpenAPI document,
 * which test/integration/openapi.test.ts holds to the router and its guards. A route added without a row,
 * a row left behind, or a scope changed on one side only fails here.
 */

const apiDoc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

/** What a route needs, in the table's words: a scope, the platform key, both, or nothing. */
type Needs = string;

const tenantPrefix = '/v1/tenants/{tenantId}';

/** The rows of the first table under the heading `### Scopes`, as [route cell, needs cell]. */
const scopeTableRows = (markdown: string): [string, string][] => {
  const section = markdown.split(/^### Scopes$/m)[1]?.split(/^#{1,3} /m)[0];
  if (section === undefined) throw new Error('docs/api.md has no "### Scopes" section');
  const table = section.split('\n').filter((line) => line.startsWith('|'));
  return table.slice(2).map((line) => {
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    if (cells.length !== 2) throw new Error(`A row of the scope table has ${cells.length} cells: ${line}`);
    return cells as [string, string];
  });
};

/** `GET .../users/{id}` → `GET /v1/tenants/{tenantId}/users/{id}`. */
const routesOf = (cell: string): string[] =>
  [...cell.matchAll(/`([A-Z]+) ([^`]+)`/g)].map(
    ([, method, path]) => `${method} ${path!.replace(/^\.\.\.(?=\/)/, tenantPrefix)}`,
  );

const needsOf = (cell: string): Needs => {
  const scope = /`([a-z:]+)`/.exec(cell)?.[1];
  const platform = /platform key/.test(cell);
  if (scope && platform) return `${scope} or the platform key`;
  if (scope) return scope;
  if (platform) return 'the platform key';
  if (cell === 'nothing') return 'nothing';
  throw new Error(`The scope table says a route needs "${cell}", which this test cannot read`);
};

interface DocumentedOperation {
  security?: unknown[];
  'x-required-scope'?: string;
  'x-platform-key'?: 'allowed' | 'required';
}

const documentNeeds = (operation: DocumentedOperation): Needs => {
  if (operation['x-platform-key'] === 'required') return 'the platform key';
  const scope = operation['x-required-scope'];
  if (scope) return operation['x-platform-key'] === 'allowed' ? `${scope} or the platform key` : scope;
  if (operation.security?.length === 0) return 'nothing';
  throw new Error('An operation names neither a scope, the platform key, nor an empty security');
};

describe("docs/api.md's route table", () => {
  const documented = new Map<string, Needs>();
  const paths = openApiDocument({ publicUrl: 'http://127.0.0.1:3000' }).paths as Record<
    string,
    Record<string, DocumentedOperation>
  >;
  for (const [path, item] of Object.entries(paths))
    for (const [method, operation] of Object.entries(item))
      documented.set(`${method.toUpperCase()} ${path}`, documentNeeds(operation));

  const tabled = new Map<string, Needs>();
  const twice: string[] = [];
  for (const [routes, needs] of scopeTableRows(apiDoc))
    for (const route of routesOf(routes)) {
      if (tabled.has(route)) twice.push(route);
      tabled.set(route, needsOf(needs));
    }

  it('lists every route of the OpenAPI document, once', () => {
    const missing = [...documented.keys()].filter((route) => !tabled.has(route));
    expect(missing, 'routes missing from the table').to.deep.equal([]);
    expect(twice, 'routes in two rows').to.deep.equal([]);
  });

  it('lists no route the service does not have', () => {
    const unknown = [...tabled.keys()].filter((route) => !documented.has(route));
    expect(unknown, 'rows for routes the document does not describe').to.deep.equal([]);
  });

  it('says of each route what its operation needs', () => {
    const wrong = [...documented]
      .filter(([route, needs]) => tabled.has(route) && tabled.get(route) !== needs)
      .map(([route, needs]) => `${route}: the table says ${tabled.get(route)}, the document ${needs}`);
    expect(wrong).to.deep.equal([]);
  });

  it('reads the table as a reader does: `...` is the tenant path, a scope and the platform key both count', () => {
    expect(routesOf('`GET .../users/{id}`, `POST /v1/tenants`')).to.deep.equal([
      'GET /v1/tenants/{tenantId}/users/{id}',
      'POST /v1/tenants',
    ]);
    expect(needsOf('`admin`, or the platform key')).to.equal('admin or the platform key');
    expect(needsOf('the platform key')).to.equal('the platform key');
    expect(() => needsOf('whoever asks')).to.throw(/cannot read/);
  });
});
