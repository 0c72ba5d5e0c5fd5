import type Router from '@koa/router';
import { expect } from 'chai';
import { scopes } from '../../src/core/scopes.js';
import {
  basicAuth,
  bearer,
  clientToken,
  createOAuthClient,
  createUser,
  expectForbidden,
  expectUnauthorized,
  loggedIn,
  oauthToken,
} from '../support/auth.js';
import { testImage } from '../support/images.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';

/**
 * The 401/403 matrix, route by route. Each row names the scope a route needs and what a request with it
 * answers; every row is tried without credentials, with each kind of credential lacking the scope, and
 * with each kind holding exactly the scope. Every POST is then tried again with the Idempotency-Key of a
 * permitted request by every narrower credential, which must get the same 401/403 as without the key. A
 * last test checks the table against the app's own routes, so a route added without a row fails here.
 */
type Requirement = { scope: (typeof scopes)[number] } | { platformOnly: true };

interface Row {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** `:tenantId` and `:id` are filled in from the fixtures. */
  path: string;
  requires: Requirement;
  /** Whether the platform key may call it (tenant routes where it bootstraps a tenant). */
  platform: boolean;
  /** The status of a permitted request. */
  ok: number;
  /** Scopes the body needs besides the route's: subscribing to observation.created needs observations:read. */
  alsoHolding?: readonly string[];
  /** Which fixture `:id` names. */
  id?:
    | 'user'
    | 'apiKey'
    | 'oauthClient'
    | 'observation'
    | 'webhook'
    | 'freshWebhook'
    | 'location'
    | 'freshLocation'
    | 'visit'
    | 'freshVisit'
    | 'cvJob';
  body?: (n: number) => unknown;
  contentType?: string;
  /** A raw body instead of JSON (image uploads), sent with `contentType`. */
  rawBody?: (n: number) => Promise<Uint8Array>;
}

const tenantRoutes = '/v1/tenants/:tenantId';
/** Nothing listens on the discard port: deliveries fail at once, which the matrix does not look at. */
const receiver = 'http://127.0.0.1:9/hooks';
const webhookBody = () => ({
  url: receiver,
  events: ['observation.created'],
  secret: 'a-secret-of-16-chars-or-more',
});
const observation = { observedAt: '2026-05-01T09:30:00Z', notes: 'matrix' };
/** A different small image for every call: the same bytes again would attach nothing and answer 200. */
const matrixImage = (n: number) =>
  testImage({
    width: 64,
    height: 48,
    format: 'png',
    boxes: [{ x: n % 64, y: Math.floor(n / 64) % 48, width: 1, height: 1, value: 0 }],
  });

const table: Row[] = [
  {
    method: 'POST',
    path: '/v1/tenants',
    requires: { platformOnly: true },
    platform: true,
    ok: 201,
    body: (n) => ({ name: `matrix-${n}`, notificationEmail: 'ops@matrix.test' }),
  },
  { method: 'GET', path: '/v1/tenants', requires: { platformOnly: true }, platform: true, ok: 200 },
  { method: 'GET', path: tenantRoutes, requires: { scope: 'admin' }, platform: true, ok: 200 },
  {
    method: 'POST',
    path: `${tenantRoutes}/users`,
    requires: { scope: 'admin' },
    platform: true,
    ok: 201,
    body: (n) => ({
      email: `matrix-${n}@example.test`,
      password: 'a long enough password',
      scopes: ['cv:read'],
    }),
  },
  { method: 'GET', path: `${tenantRoutes}/users`, requires: { scope: 'admin' }, platform: false, ok: 200 },
  {
    method: 'GET',
    path: `${tenantRoutes}/users/:id`,
    id: 'user',
    requires: { scope: 'admin' },
    platform: false,
    ok: 200,
  },
  {
    method: 'POST',
    path: `${tenantRoutes}/users/:id/disable`,
    id: 'user',
    requires: { scope: 'admin' },
    platform: false,
    ok: 200,
  },
  ...(['api-keys', 'oauth-clients'] as const).flatMap((kind): Row[] => {
    const id = kind === 'api-keys' ? 'apiKey' : 'oauthClient';
    return [
      {
        method: 'POST',
        path: `${tenantRoutes}/${kind}`,
        requires: { scope: 'admin' },
        platform: true,
        ok: 201,
        body: (n) => ({ name: `matrix ${n}`, scopes: ['cv:read'] }),
      },
      {
        method: 'GET',
        path: `${tenantRoutes}/${kind}`,
        requires: { scope: 'admin' },
        platform: false,
        ok: 200,
      },
      {
        method: 'GET',
        path: `${tenantRoutes}/${kind}/:id`,
        id,
        requires: { scope: 'admin' },
        platform: false,
        ok: 200,
      },
      {
        method: 'DELETE',
        path: `${tenantRoutes}/${kind}/:id`,
        id,
        requires: { scope: 'admin' },
        platform: false,
        ok: 204,
      },
    ];
  }),
  {
    method: 'POST',
    path: `${tenantRoutes}/observations`,
    requires: { scope: 'observations:write' },
    platform: false,
    ok: 201,
    body: () => observation,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/observations`,
    requires: { scope: 'observations:read' },
    platform: false,
    ok: 200,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/observations/:id`,
    id: 'observation',
    requires: { scope: 'observations:read' },
    platform: false,
    ok: 200,
  },
  {
    method: 'PATCH',
    path: `${tenantRoutes}/observations/:id`,
    id: 'observation',
    requires: { scope: 'observations:write' },
    platform: false,
    ok: 200,
    body: () => ({ notes: 'patched by the matrix' }),
    contentType: 'application/merge-patch+json',
  },
  {
    method: 'POST',
    path: `${tenantRoutes}/observations/:id/media`,
    id: 'observation',
    requires: { scope: 'observations:write' },
    platform: false,
    ok: 201,
    rawBody: (n) => matrixImage(n),
    contentType: 'image/png',
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/observations/:id/media/:mediaId`,
    id: 'observation',
    requires: { scope: 'observations:read' },
    platform: false,
    ok: 200,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/observations/:id/media/:mediaId/thumbnail`,
    id: 'observation',
    requires: { scope: 'observations:read' },
    platform: false,
    ok: 200,
  },
  {
    method: 'POST',
    path: `${tenantRoutes}/webhooks/:id/replay`,
    id: 'webhook',
    requires: { scope: 'webhooks:manage' },
    platform: false,
    ok: 202,
    body: () => ({ since: '2020-01-01T00:00:00Z' }),
  },
  ...(
    [
      ['POST', '/webhooks', undefined, 201, webhookBody],
      ['GET', '/webhooks', undefined, 200],
      ['GET', '/webhooks/:id', 'webhook', 200],
      ['DELETE', '/webhooks/:id', 'freshWebhook', 204],
      ['POST', '/webhooks/:id/enable', 'webhook', 200],
      ['POST', '/webhooks/:id/secret/rotate', 'webhook', 200],
      ['POST', '/webhooks/:id/test', 'webhook', 200],
      // A fresh one: a paused subscription refuses redeliveries, which the rows below send.
      ['POST', '/webhooks/:id/pause', 'freshWebhook', 200],
      ['POST', '/webhooks/:id/resume', 'webhook', 200],
      ['GET', '/webhooks/:id/deliveries', 'webhook', 200],
      ['GET', '/webhooks/:id/deliveries/:deliveryId', 'webhook', 200],
      ['POST', '/webhooks/:id/deliveries/:deliveryId/redeliver', 'webhook', 202],
    ] as const
  ).map(([method, path, id, ok, body]): Row => ({
    method,
    path: `${tenantRoutes}${path}`,
    ...(id ? { id } : {}),
    requires: { scope: 'webhooks:manage' },
    platform: false,
    ok,
    ...(body ? { body, alsoHolding: ['observations:read'] } : {}),
  })),
];

const locationBody = () => ({ name: 'Matrix meadow', position: { lat: 45, lon: 7 } });

/** Rows of one resource whose routes all need one of two scopes. */
const resourceRows = (
  path: string,
  readScope: Row['requires'],
  writeScope: Row['requires'],
  rows: readonly (readonly [
    Row['method'],
    string,
    Row['id'] | undefined,
    number,
    'read' | 'write',
    ((n: number) => unknown)?,
    string?,
  ])[],
): Row[] =>
  rows.map(([method, suffix, id, ok, access, body, contentType]) => ({
    method,
    path: `${tenantRoutes}${path}${suffix}`,
    ...(id ? { id } : {}),
    requires: access === 'read' ? readScope : writeScope,
    platform: false,
    ok,
    ...(body ? { body } : {}),
    ...(contentType ? { contentType } : {}),
  }));

table.push(
  ...resourceRows('/locations', { scope: 'locations:read' }, { scope: 'locations:write' }, [
    ['POST', '', undefined, 201, 'write', locationBody],
    ['GET', '', undefined, 200, 'read'],
    ['GET', '/:id', 'location', 200, 'read'],
    [
      'PATCH',
      '/:id',
      'location',
      200,
      'write',
      (n) => ({ name: `Meadow ${n}` }),
      'application/merge-patch+json',
    ],
    ['DELETE', '/:id', 'freshLocation', 204, 'write'],
  ]),
  ...resourceRows('/visits', { scope: 'observations:read' }, { scope: 'observations:write' }, [
    [
      'POST',
      '',
      undefined,
      201,
      'write',
      () => ({ locationId: fixtureLocation, startedAt: '2026-05-01T08:00:00Z' }),
    ],
    ['GET', '', undefined, 200, 'read'],
    ['GET', '/:id', 'visit', 200, 'read'],
    [
      'PATCH',
      '/:id',
      'visit',
      200,
      'write',
      (n) => ({ notes: `visit ${n}` }),
      'application/merge-patch+json',
    ],
    ['POST', '/:id/submit', 'freshVisit', 200, 'write'],
  ]),
);

/** Set in `before`: the location that visits created by the matrix point at. */
let fixtureLocation = '';

/** Set in `before`: an observation with media, which CV jobs created by the matrix analyse. */
let fixtureObservation = '';

table.push(
  {
    method: 'POST',
    path: `${tenantRoutes}/cv-jobs`,
    requires: { scope: 'cv:write' },
    platform: false,
    ok: 202,
    body: () => ({ observationId: fixtureObservation, model: 'image-quality' }),
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/cv-jobs`,
    requires: { scope: 'cv:read' },
    platform: false,
    ok: 200,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/cv-jobs/:id`,
    id: 'cvJob',
    requires: { scope: 'cv:read' },
    platform: false,
    ok: 200,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/cv-models`,
    requires: { scope: 'cv:read' },
    platform: false,
    ok: 200,
  },
);

/**
 * History: the tenant's whole event log and its tamper check are for admins; an observation's versions for
 * its readers.
 */
table.push(
  { method: 'GET', path: `${tenantRoutes}/events`, requires: { scope: 'admin' }, platform: false, ok: 200 },
  {
    method: 'GET',
    path: `${tenantRoutes}/audit/verification`,
    requires: { scope: 'admin' },
    platform: false,
    ok: 200,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/audit/digests`,
    requires: { scope: 'admin' },
    platform: false,
    ok: 200,
  },
  // No digest is recorded here: a permitted request learns there is none (404), or what it left out (400).
  {
    method: 'GET',
    path: `${tenantRoutes}/audit/digests/latest`,
    requires: { scope: 'admin' },
    platform: false,
    ok: 404,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/audit/proofs/inclusion`,
    requires: { scope: 'admin' },
    platform: false,
    ok: 400,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/audit/proofs/consistency`,
    requires: { scope: 'admin' },
    platform: false,
    ok: 400,
  },
  {
    method: 'GET',
    path: `${tenantRoutes}/observations/:id/history`,
    id: 'observation',
    requires: { scope: 'observations:read' },
    platform: false,
    ok: 200,
  },
);

/** Routes that take no credentials at all. */
const publicRoutes = [
  'GET /health',
  'GET /health/live',
  'GET /health/ready',
  'POST /v1/oauth/token',
  'GET /.well-known/jwks.json',
  'GET /.well-known/digest-keys.json',
  'GET /.well-known/oauth-authorization-server',
  'POST /v1/auth/token',
  'POST /v1/auth/refresh',
  'POST /v1/auth/logout',
  // The OpenAPI document and the page that renders it (src/openapi/api.ts).
  'GET /v1/openapi.json',
  'GET /docs',
  'GET /docs/redoc.standalone.js',
  // The service's icon, which browsers ask for (src/openapi/page-assets.ts).
  'GET /favicon.ico',
];

const kinds = ['API key', 'user token', 'client token'] as const;
const article = (kind: Kind) => (kind === 'API key' ? 'an' : 'a');
type Kind = (typeof kinds)[number];

describe('the 401/403 matrix, route by route', () => {
  let server: TestServer;
  let tenantId: string;
  let ids: Record<NonNullable<Row['id']>, string>;
  /** Credentials by kind and by the scopes they hold, made once. */
  const credentials = new Map<string, Record<string, string>>();
  let counter = 0;
  let deliveryId: string;
  /** A medium of the `observation` fixture, for `:mediaId`. */
  let mediaId: string;
  let newWebhook: () => Promise<string>;
  let newLocation: () => Promise<string>;
  let newVisit: () => Promise<string>;
  /** Tokens of one OAuth client holding every scope, by the scopes asked for: one identity, many scope sets. */
  let sameClient: (held: readonly string[]) => Promise<Record<string, string>>;

  const credential = (kind: Kind, held: readonly string[]) => {
    const headers = credentials.get(`${kind} ${[...held].sort().join(' ')}`);
    if (!headers) throw new Error(`no ${kind} with ${held.join(' ')}`);
    return headers;
  };
  /** Every scope except the one the route needs, and except admin, which would imply it. */
  const allBut = (scope: string) => scopes.filter((s) => s !== scope && s !== 'admin');

  before(async function () {
    // Hundreds of credentials, each user's with a scrypt hash: well over 20 s on a loaded machine.
    this.timeout(120_000);
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const tenant = await withTenant(server, 'matrix');
    tenantId = tenant.tenantId;
    const scopeSets = new Set(
      table
        .flatMap((row) =>
          'scope' in row.requires
            ? [[row.requires.scope, ...(row.alsoHolding ?? [])], allBut(row.requires.scope)]
            : [],
        )
        .map((set) => set.sort().join(' ')),
    );
    scopeSets.add(['admin'].join(' '));
    for (const set of scopeSets) {
      const held = set.split(' ');
      credentials.set(`API key ${set}`, { 'X-API-Key': await tenant.key(held) });
      credentials.set(`user token ${set}`, bearer((await loggedIn(server, tenant, held)).accessToken));
      credentials.set(`client token ${set}`, bearer((await clientToken(server, tenant, held)).accessToken));
    }
    const everything = await createOAuthClient(server, tenant, [...scopes]);
    const tokens = new Map<string, Record<string, string>>();
    sameClient = async (held) => {
      const scope = [...held].sort().join(' ');
      let headers = tokens.get(scope);
      if (!headers) {
        const response = await oauthToken(
          server,
          { grant_type: 'client_credentials', scope },
          basicAuth(everything.clientId, everything.clientSecret),
        );
        expect(response.status, JSON.stringify(response.body)).to.equal(200);
        headers = bearer(response.body.access_token as string);
        tokens.set(scope, headers);
      }
      return headers;
    };
    const webhook = await request(`${server.url}/v1/tenants/${tenantId}/webhooks`, {
      method: 'POST',
      body: webhookBody(),
      headers: { 'X-API-Key': tenant.adminKey },
    });
    newWebhook = async () =>
      (
        await request(`${server.url}/v1/tenants/${tenantId}/webhooks`, {
          method: 'POST',
          body: webhookBody(),
          headers: { 'X-API-Key': tenant.adminKey },
        })
      ).body.id as string;
    const make = async (path: string, body: unknown) =>
      (
        await request(`${server.url}/v1/tenants/${tenantId}${path}`, {
          method: 'POST',
          body,
          headers: { 'X-API-Key': tenant.adminKey },
        })
      ).body.id as string;
    newLocation = () => make('/locations', locationBody());
    newVisit = () => make('/visits', { locationId: fixtureLocation, startedAt: '2026-05-01T08:00:00Z' });
    // The targets of the routes with an id; DELETE and disable only ever touch these.
    const created = await request(`${server.url}/v1/tenants/${tenantId}/observations`, {
      method: 'POST',
      body: observation,
      headers: credential('API key', ['admin']),
    });
    const key = await request(`${server.url}/v1/tenants/${tenantId}/api-keys`, {
      method: 'POST',
      body: { name: 'victim', scopes: ['cv:read'] },
      headers: { 'X-API-Key': tenant.adminKey },
    });
    ids = {
      user: (await createUser(server, tenant, { email: 'victim@example.test', scopes: ['cv:read'] })).id,
      apiKey: key.body.id as string,
      oauthClient: (await createOAuthClient(server, tenant, ['cv:read'])).id,
      observation: created.body.id as string,
      webhook: webhook.body.id as string,
      freshWebhook: '',
      location: await newLocation(),
      freshLocation: '',
      visit: '',
      freshVisit: '',
      cvJob: '',
    };
    fixtureLocation = ids.location;
    ids.visit = await newVisit();
    // The observation was created after the webhook: it has a delivery to redeliver.
    const scheduled = await server.stores.eventStore.readAll({
      filter: { tenantId, eventTypes: ['DeliveryScheduled'] },
    });
    deliveryId = (scheduled.events[0]?.data as { deliveryId: string }).deliveryId;
    const media = await request(
      `${server.url}/v1/tenants/${tenantId}/observations/${ids.observation}/media`,
      {
        method: 'POST',
        rawBody: await matrixImage(-1),
        headers: { 'content-type': 'image/png', 'X-API-Key': tenant.adminKey },
      },
    );
    mediaId = media.body.id as string;
    fixtureObservation = ids.observation;
    const cvJob = await request(`${server.url}/v1/tenants/${tenantId}/cv-jobs`, {
      method: 'POST',
      body: { observationId: ids.observation, model: 'image-quality' },
      headers: { 'X-API-Key': tenant.adminKey },
    });
    ids.cvJob = cvJob.body.id as string;
  });
  after(async () => server.close());

  /** One request of the row, with its ids and body filled in: sent once or, with a key, several times. */
  const prepare = async (row: Row) => {
    counter += 1;
    const fresh = { freshWebhook: newWebhook, freshLocation: newLocation, freshVisit: newVisit } as const;
    const id =
      row.id && row.id in fresh ? await fresh[row.id as keyof typeof fresh]() : row.id ? ids[row.id] : '';
    const url = `${server.url}${row.path.replace(':tenantId', tenantId).replace(':id', id).replace(':deliveryId', deliveryId).replace(':mediaId', mediaId)}`;
    const body = row.body ? { body: row.body(counter) } : {};
    const rawBody = row.rawBody ? { rawBody: await row.rawBody(counter) } : {};
    return (headers: Record<string, string>) =>
      request(url, {
        method: row.method,
        ...body,
        ...rawBody,
        headers: { ...(row.contentType ? { 'content-type': row.contentType } : {}), ...headers },
      });
  };
  const call = async (row: Row, headers: Record<string, string>) => (await prepare(row))(headers);

  for (const row of table) {
    const name = `${row.method} ${row.path}`;
    describe(name, () => {
      it('answers 401 with WWW-Authenticate without credentials', async () => {
        expectUnauthorized(await call(row, {}), name);
      });

      if ('scope' in row.requires) {
        const scope = row.requires.scope;
        for (const kind of kinds) {
          it(`answers 403 naming ${scope} to ${article(kind)} ${kind} with every other scope but admin`, async () => {
            expectForbidden(await call(row, credential(kind, allBut(scope))), scope, `${name} ${kind}`);
          });
          it(`answers ${row.ok} to ${article(kind)} ${kind} holding only ${scope}`, async () => {
            const response = await call(row, credential(kind, [scope, ...(row.alsoHolding ?? [])]));
            expect(response.status, `${name} ${kind} ${JSON.stringify(response.body)}`).to.equal(row.ok);
          });
        }
      } else {
        for (const kind of kinds) {
          it(`answers 403 to a tenant admin's ${kind}`, async () => {
            expectForbidden(await call(row, credential(kind, ['admin'])), undefined, `${name} ${kind}`);
          });
        }
      }

      if (row.platform) {
        it(`answers ${row.ok} to the platform key`, async () => {
          const response = await call(row, { 'X-API-Key': server.platformAdminKey });
          expect(response.status, JSON.stringify(response.body)).to.equal(row.ok);
        });
      } else {
        it('answers 403 to the platform key', async () => {
          const response = await call(row, { 'X-API-Key': server.platformAdminKey });
          expectForbidden(response, 'scope' in row.requires ? row.requires.scope : undefined, name);
        });
      }

      if (row.method === 'POST') {
        it('answers every narrower credential with its own 401/403, never the answer kept for a permitted request with the same Idempotency-Key', async () => {
          const scope = 'scope' in row.requires ? row.requires.scope : undefined;
          const permitted = scope
            ? await sameClient([scope, ...(row.alsoHolding ?? [])])
            : { 'X-API-Key': server.platformAdminKey };
          const narrower: [string, Record<string, string>][] = [['no credentials', {}]];
          if (scope) {
            for (const kind of kinds) narrower.push([kind, credential(kind, allBut(scope))]);
            narrower.push(['a token of the same client without the scope', await sameClient(allBut(scope))]);
            if (!row.platform) narrower.push(['the platform key', { 'X-API-Key': server.platformAdminKey }]);
          } else {
            for (const kind of kinds)
              narrower.push([`a tenant admin's ${kind}`, credential(kind, ['admin'])]);
          }
          const send = await prepare(row);
          const key = { 'Idempotency-Key': `matrix ${name}` };
          const first = await send({ ...permitted, ...key });
          expect(first.status, `${name} ${JSON.stringify(first.body)}`).to.equal(row.ok);
          for (const [who, headers] of narrower) {
            const without = await send(headers);
            const withKey = await send({ ...headers, ...key });
            const message = `${name} by ${who}: ${JSON.stringify(withKey.body)}`;
            expect(without.status, message).to.be.oneOf([401, 403]);
            expect(withKey.status, message).to.equal(without.status);
            expect(withKey.body.type, message).to.equal(without.body.type);
            expect(withKey.headers.get('idempotency-replayed'), message).to.equal(null);
          }
          // The permitted credential itself still gets the kept answer.
          const replayed = await send({ ...permitted, ...key });
          expect(replayed.status, name).to.equal(row.ok);
          expect(replayed.headers.get('idempotency-replayed'), name).to.equal('true');
        });
      }
    });
  }

  it('has a row for every route the app serves, and no row for a route it does not', () => {
    const dispatch = server.service.app.middleware.find(
      (middleware) => (middleware as { router?: Router }).router,
    ) as unknown as { router: Router };
    const served = dispatch.router.stack.flatMap((layer) =>
      layer.methods.filter((method) => method !== 'HEAD').map((method) => `${method} ${layer.path}`),
    );
    const listed = [...table.map((row) => `${row.method} ${row.path}`), ...publicRoutes];
    expect([...served].sort()).to.deep.equal([...listed].sort());
  });
});
