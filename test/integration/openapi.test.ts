import type Router from '@koa/router';
import { expect } from 'chai';
import fc from 'fast-check';
import { isRight } from 'fp-ts/lib/Either.js';
import { routeGuardOf } from '../../src/http/guard.js';
import { scopes } from '../../src/core/scopes.js';
import type { StrictObjectCodec } from '../../src/http/codec.js';
import { GeoPositionCodec } from '../../src/observations/codecs.js';
import { operations } from '../../src/openapi/document.js';
import { openApiPath } from '../../src/openapi/operation.js';
import { externalEventTypes } from '../../src/webhooks/external.js';
import { cvTenant } from '../support/cv.js';
import { digestNow } from '../support/digests.js';
import { testImage } from '../support/images.js';
import {
  deref,
  documentFor,
  documentedOperations,
  exchange,
  mediaTypeOf,
  openApiValidator,
  type OpenApiValidator,
} from '../support/openapi.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { invalidObject, validValue } from '../support/schema-arbitrary.js';
import { startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

type Obj = Record<string, any>;

/** The routes the app serves, as `METHOD /path/{param}`, with the guard of each. */
const servedRoutes = (server: TestServer) => {
  const dispatch = server.service.app.middleware.find(
    (middleware) => (middleware as { router?: Router }).router,
  ) as unknown as { router: Router };
  return dispatch.router.stack.flatMap((layer) =>
    layer.methods
      .filter((method) => method !== 'HEAD')
      .map((method) => ({
        key: `${method} ${openApiPath(String(layer.path))}`,
        guard: routeGuardOf(layer.stack),
      })),
  );
};

/** A query as Koa hands it to the codec: a string, or a list for a repeated parameter. */
const asQuery = (value: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(value).map(([key, v]) => [key, Array.isArray(v) ? v.map(String) : String(v)]),
  );

const seed = 20261121;

describe('the OpenAPI document', function () {
  this.timeout(60_000);
  let server: TestServer;
  let doc: Obj;
  let v: OpenApiValidator;

  before(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const response = await fetch(`${server.url}/v1/openapi.json`);
    expect(response.status).to.equal(200);
    doc = (await response.json()) as Obj;
    v = openApiValidator(doc);
  });
  after(async () => server.close());

  it('is served at GET /v1/openapi.json without credentials: OpenAPI 3.1, with the three security schemes', async () => {
    const response = await fetch(`${server.url}/v1/openapi.json`);
    expect(response.headers.get('content-type')).to.match(/^application\/json/);
    expect(doc.openapi).to.equal('3.1.0');
    expect(doc.jsonSchemaDialect).to.equal('https://json-schema.org/draft/2020-12/schema');
    expect(doc).to.deep.equal(JSON.parse(JSON.stringify(documentFor(server.url))));
    expect(doc.servers).to.deep.equal([
      { url: server.url, description: 'This service (PUBLIC_URL)', 'x-internal': false },
    ]);
    const schemes = doc.components.securitySchemes as Obj;
    expect(schemes.apiKey).to.include({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(schemes.bearer).to.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(schemes.oauth2.flows.clientCredentials.tokenUrl).to.equal(`${server.url}/v1/oauth/token`);
    expect(Object.keys(schemes.oauth2.flows.clientCredentials.scopes as Obj)).to.deep.equal([...scopes]);
    // The discovery document names the same token endpoint.
    const metadata = (await (
      await fetch(`${server.url}/.well-known/oauth-authorization-server`)
    ).json()) as Obj;
    expect(metadata.token_endpoint).to.equal(schemes.oauth2.flows.clientCredentials.tokenUrl);
  });

  it('describes every route the app serves, and no route it does not', () => {
    const served = servedRoutes(server).map((route) => route.key);
    const described = documentedOperations(doc).map(({ method, path }) => `${method} ${path}`);
    expect([...described].sort()).to.deep.equal([...served].sort());
  });

  it("names for every operation the scope its route's guard checks, in all three security schemes", () => {
    for (const { key, guard } of servedRoutes(server)) {
      const [method, path] = key.split(' ') as [string, string];
      const operation = v.operationOf(method, path);
      if (!guard) {
        expect(operation.security, key).to.deep.equal([]);
        expect(operation['x-required-scope'], key).to.equal(undefined);
      } else if (guard.scope === 'platform') {
        expect(operation.security, key).to.deep.equal([{ apiKey: [] }]);
        expect(operation['x-platform-key'], key).to.equal('required');
      } else {
        expect(operation['x-required-scope'], key).to.equal(guard.scope);
        expect(operation.security, key).to.deep.equal([
          { apiKey: [] },
          { bearer: [] },
          { oauth2: [guard.scope] },
        ]);
        expect(operation['x-platform-key'], key).to.equal(guard.allowPlatform ? 'allowed' : undefined);
      }
    }
  });

  describe('request bodies and queries, against the codecs the routes decode them with', () => {
    const withCodecs = () =>
      operations().map((built) => ({ ...built, key: `${built.method.toUpperCase()} ${built.path}` }));
    const bodySchemaOf = (method: string, path: string): Obj => {
      const content = deref(doc, v.operationOf(method, path).requestBody as Obj).content as Obj;
      return deref(doc, (Object.values(content)[0] as Obj).schema as Obj);
    };

    it('has, for every strictObject body, exactly the codec’s properties and required list', () => {
      let checked = 0;
      for (const { key, method, path, codecs } of withCodecs()) {
        if (!codecs.body) continue;
        const schema = bodySchemaOf(method, path);
        expect(Object.keys(schema.properties as Obj), key).to.deep.equal([
          ...codecs.body.props.required,
          ...codecs.body.props.optional,
        ]);
        expect(schema.required ?? [], key).to.deep.equal(codecs.body.props.required);
        expect(schema.additionalProperties, key).to.equal(false);
        checked += 1;
      }
      expect(checked).to.be.at.least(15);
      // Nested codecs too: the observation's position.
      const position = doc.components.schemas.GeoPosition as Obj;
      expect(Object.keys(position.properties as Obj)).to.deep.equal([
        ...GeoPositionCodec.props.required,
        ...GeoPositionCodec.props.optional,
      ]);
      expect(position.required).to.deep.equal(GeoPositionCodec.props.required);
    });

    it('has, for every strictObject query, exactly the codec’s parameters', () => {
      for (const { key, method, path, codecs } of withCodecs()) {
        const query = ((v.operationOf(method, path).parameters ?? []) as Obj[])
          .map((parameter) => deref(doc, parameter))
          .filter((parameter) => parameter.in === 'query');
        if (!codecs.query) {
          expect(query, key).to.deep.equal([]);
          continue;
        }
        expect(
          query.map((parameter) => parameter.name as string),
          key,
        ).to.deep.equal([...codecs.query.props.required, ...codecs.query.props.optional]);
      }
    });

    it('lets every codec accept what the document allows, and refuse what it refuses', () => {
      for (const { key, method, path, codecs } of withCodecs()) {
        const decodes = (codec: StrictObjectCodec, value: unknown) => isRight(codec.decode(value));
        if (codecs.body) {
          const schema = bodySchemaOf(method, path);
          fc.assert(
            fc.property(validValue(doc, schema), (body) => {
              const result = codecs.body!.decode(body);
              if (!isRight(result)) throw new Error(`${key} refuses ${JSON.stringify(body)}`);
            }),
            { numRuns: 60, seed },
          );
          fc.assert(
            fc.property(invalidObject(doc, schema), (body) => !decodes(codecs.body!, body)),
            { numRuns: 60, seed },
          );
        }
        if (codecs.query) {
          const parameters = ((v.operationOf(method, path).parameters ?? []) as Obj[])
            .map((parameter) => deref(doc, parameter))
            .filter((parameter) => parameter.in === 'query');
          const schema = {
            type: 'object',
            additionalProperties: false,
            required: parameters.filter((parameter) => parameter.required === true).map((p) => p.name),
            properties: Object.fromEntries(
              parameters
                // A box's coordinates must also be in range: more than a pattern says.
                .filter((parameter) => parameter.name !== 'bbox')
                .map((parameter) => [parameter.name, parameter.schema]),
            ),
          };
          fc.assert(
            fc.property(validValue(doc, schema) as fc.Arbitrary<Record<string, unknown>>, (query) => {
              if (!decodes(codecs.query!, asQuery(query)))
                throw new Error(`${key} refuses ?${JSON.stringify(asQuery(query))}`);
            }),
            { numRuns: 60, seed },
          );
          expect(decodes(codecs.query, { 'not-a-parameter': 'x' }), key).to.equal(false);
        }
      }
    });
  });

  it('is strict enough to tell: the validator refuses a response that drifted', () => {
    const observation = {
      id: 'o_01m7xq3mn18snzhf2p99rppm8q',
      tenantId: 't_acme',
      observedAt: '2026-05-01T07:30:00.000Z',
      position: null,
      locationId: null,
      visitId: null,
      notes: null,
      attributes: {},
      media: [],
      createdAt: '2026-05-01T07:30:00.000Z',
      updatedAt: '2026-05-01T07:30:00.000Z',
      version: 0,
    };
    expect(v.errorsOf(v.schema('Observation'), observation)).to.deep.equal([]);
    const { media: _media, ...withoutMedia } = observation;
    expect(v.errorsOf(v.schema('Observation'), withoutMedia)).to.have.length(1);
    expect(v.errorsOf(v.schema('Observation'), { ...observation, extra: 1 })).to.have.length(1);
    expect(v.errorsOf(v.schema('Observation'), { ...observation, createdAt: 'yesterday' })).to.have.length(1);
    // Headers too: an ETag that is not a stream version, on a resource whose ETag is one.
    const read = (etag: string) =>
      v.checkResponse({
        method: 'GET',
        path: '/v1/tenants/{tenantId}/observations/{id}',
        status: 304,
        contentType: null,
        text: '',
        headers: new Headers({ ETag: etag }),
      });
    expect(read('"3"')).to.deep.equal([]);
    expect(read('"redoc-2.5.4"')).to.have.length(1);
    const problem = { type: '/problems/not-found', title: 'Not Found', status: 404, requestId: 'r' };
    expect(v.errorsOf(v.schema('Problem'), problem)).to.deep.equal([]);
    expect(v.errorsOf(v.schema('Problem'), { ...problem, status: 200 })).to.have.length(1);
  });

  it('describes in `webhooks` the five event types, each with its envelope', () => {
    expect(Object.keys(doc.webhooks as Obj)).to.deep.equal([...externalEventTypes]);
    for (const type of externalEventTypes) {
      const schema = deref(
        doc,
        doc.webhooks[type].post.requestBody.content['application/json'].schema as Obj,
      );
      expect(schema.properties.type).to.deep.equal({ type: 'string', const: type });
      expect(schema.required).to.deep.equal(['id', 'type', 'tenantId', 'timestamp', 'data']);
    }
  });

  describe('real responses of the running service', () => {
    /** Every `METHOD path status` a check saw. */
    const seen = new Set<string>();
    let tenantId: string;
    let adminKey: string;
    let receiver: Receiver;
    const secret = 'whsec-openapi-0123456789';

    const call = async (
      method: string,
      path: string,
      {
        params = {},
        query = '',
        headers = {},
        body,
        rawBody,
        key = adminKey,
      }: {
        params?: Record<string, string>;
        query?: string;
        headers?: Record<string, string>;
        body?: unknown;
        rawBody?: string | Uint8Array;
        key?: string | null;
      } = {},
    ) => {
      const url = `${server.url}${path.replace(/\{(\w+)\}/g, (_, name: string) =>
        encodeURIComponent(name === 'tenantId' ? (params.tenantId ?? tenantId) : params[name]!),
      )}${query ? `?${query}` : ''}`;
      const response = await fetch(url, {
        method,
        headers: {
          ...(key ? { 'X-API-Key': key } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        ...(rawBody !== undefined
          ? { body: rawBody }
          : body !== undefined
            ? { body: JSON.stringify(body) }
            : {}),
      });
      const result = await exchange(method, path, response);
      expect(v.checkResponse(result), `${method} ${url}: ${result.text.slice(0, 500)}`).to.deep.equal([]);
      seen.add(`${method} ${path} ${result.status}`);
      const type = mediaTypeOf(result.contentType);
      return {
        status: result.status,
        headers: response.headers,
        body:
          (type === 'application/json' || type.endsWith('+json')) && result.text
            ? JSON.parse(result.text)
            : result.text,
      };
    };

    before(async () => {
      receiver = await startReceiver(secret);
      const tenant = await withTenant(server, 'openapi');
      tenantId = tenant.tenantId;
      adminKey = tenant.adminKey;
    });
    after(async () => receiver.close());

    it('match the document for the service routes', async () => {
      expect((await call('GET', '/health', { key: null })).status).to.equal(200);
      expect((await call('GET', '/health/ready', { key: null })).status).to.equal(200);
      expect((await call('GET', '/health/live', { key: null })).status).to.equal(200);
      expect((await call('GET', '/v1/openapi.json', { key: null })).status).to.equal(200);
      const page = await call('GET', '/docs', { key: null });
      expect(page.headers.get('content-security-policy')).to.include("script-src 'self'");
      const script = await call('GET', '/docs/redoc.standalone.js', { key: null });
      expect(script.status).to.equal(200);
      const etag = script.headers.get('etag')!;
      expect(
        (await call('GET', '/docs/redoc.standalone.js', { key: null, headers: { 'If-None-Match': etag } }))
          .status,
      ).to.equal(304);
      expect((await call('GET', '/favicon.ico', { key: null })).status).to.equal(200);
      await call('GET', '/.well-known/jwks.json', { key: null });
      await call('GET', '/.well-known/oauth-authorization-server', { key: null });
    });

    it('match the document for tenants, users, API keys, OAuth clients and tokens', async () => {
      const platform = server.platformAdminKey;
      const tenant = await call('POST', '/v1/tenants', {
        key: platform,
        body: { name: 'openapi-two', notificationEmail: 'ops@two.test' },
      });
      expect(tenant.status).to.equal(201);
      await call('GET', '/v1/tenants', { key: platform, query: 'limit=2' });
      const one = await call('GET', '/v1/tenants/{tenantId}');
      await call('GET', '/v1/tenants/{tenantId}', { headers: { 'If-None-Match': one.headers.get('etag')! } });

      const email = 'reader@openapi.test';
      const password = 'a long enough password';
      const user = await call('POST', '/v1/tenants/{tenantId}/users', {
        body: { email, password, scopes: ['observations:read'] },
      });
      expect(user.status).to.equal(201);
      await call('GET', '/v1/tenants/{tenantId}/users');
      await call('GET', '/v1/tenants/{tenantId}/users/{id}', { params: { id: user.body.id } });
      const tokens = await call('POST', '/v1/auth/token', { key: null, body: { email, password, tenantId } });
      expect(tokens.status).to.equal(200);
      const renewed = await call('POST', '/v1/auth/refresh', {
        key: null,
        body: { refreshToken: tokens.body.refreshToken },
      });
      expect(renewed.status).to.equal(200);
      const signedOut = await call('POST', '/v1/auth/logout', {
        key: null,
        body: { refreshToken: renewed.body.refreshToken },
      });
      expect(signedOut.status).to.equal(204);
      expect(
        (await call('POST', '/v1/tenants/{tenantId}/users/{id}/disable', { params: { id: user.body.id } }))
          .status,
      ).to.equal(200);

      const apiKey = await call('POST', '/v1/tenants/{tenantId}/api-keys', {
        body: { name: 'reader', scopes: ['cv:read'] },
      });
      await call('GET', '/v1/tenants/{tenantId}/api-keys');
      await call('GET', '/v1/tenants/{tenantId}/api-keys/{id}', { params: { id: apiKey.body.id } });
      await call('DELETE', '/v1/tenants/{tenantId}/api-keys/{id}', { params: { id: apiKey.body.id } });

      const client = await call('POST', '/v1/tenants/{tenantId}/oauth-clients', {
        body: { name: 'reporting', scopes: ['observations:read'] },
      });
      await call('GET', '/v1/tenants/{tenantId}/oauth-clients');
      await call('GET', '/v1/tenants/{tenantId}/oauth-clients/{id}', { params: { id: client.body.id } });
      const form = (fields: Record<string, string>) => ({
        key: null,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        rawBody: new URLSearchParams(fields).toString(),
      });
      const credentials = { client_id: client.body.clientId, client_secret: client.body.clientSecret };
      expect(
        (await call('POST', '/v1/oauth/token', form({ grant_type: 'client_credentials', ...credentials })))
          .status,
      ).to.equal(200);
      expect(
        (await call('POST', '/v1/oauth/token', form({ grant_type: 'password', ...credentials }))).status,
      ).to.equal(400);
      expect(
        (
          await call(
            'POST',
            '/v1/oauth/token',
            form({ grant_type: 'client_credentials', ...credentials, client_secret: 'wrong' }),
          )
        ).status,
      ).to.equal(401);
      await call('DELETE', '/v1/tenants/{tenantId}/oauth-clients/{id}', { params: { id: client.body.id } });
    });

    it('match the document for observations, media, locations, visits, CV jobs, webhooks and history', async () => {
      const webhook = await call('POST', '/v1/tenants/{tenantId}/webhooks', {
        body: { url: receiver.url, events: [...externalEventTypes], secret },
      });
      expect(webhook.status).to.equal(201);
      const hook = { id: webhook.body.id as string };
      await call('GET', '/v1/tenants/{tenantId}/webhooks');
      await call('GET', '/v1/tenants/{tenantId}/webhooks/{id}', { params: hook });

      const location = await call('POST', '/v1/tenants/{tenantId}/locations', {
        body: {
          name: 'Creek meadow',
          position: { lat: 45.1, lon: 7.2 },
          boundary: {
            type: 'Polygon',
            coordinates: [
              [
                [7.1, 45],
                [7.3, 45],
                [7.3, 45.2],
                [7.1, 45],
              ],
            ],
          },
          attributes: { habitat: 'wet' },
        },
      });
      expect(location.status).to.equal(201);
      const place = { id: location.body.id as string };
      await call('GET', '/v1/tenants/{tenantId}/locations', {
        query: `minPosition=${location.headers.get('x-position')}`,
      });
      await call('GET', '/v1/tenants/{tenantId}/locations/{id}', { params: place });
      await call('PATCH', '/v1/tenants/{tenantId}/locations/{id}', {
        params: place,
        body: { attributes: { habitat: null, access: 'path' } },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      const doomed = await call('POST', '/v1/tenants/{tenantId}/locations', {
        body: { name: 'Gone', position: { lat: 1, lon: 2 } },
      });
      expect(
        (await call('DELETE', '/v1/tenants/{tenantId}/locations/{id}', { params: { id: doomed.body.id } }))
          .status,
      ).to.equal(204);

      const visit = await call('POST', '/v1/tenants/{tenantId}/visits', {
        body: { locationId: place.id, startedAt: '2026-05-01T08:00:00+02:00', participants: ['Ada'] },
      });
      expect(visit.status).to.equal(201);
      const trip = { id: visit.body.id as string };

      const created = await call('POST', '/v1/tenants/{tenantId}/observations', {
        body: {
          observedAt: '2026-05-01T09:30:00+02:00',
          position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
          locationId: place.id,
          visitId: trip.id,
          notes: 'near the creek',
          attributes: { species: 'fox' },
        },
      });
      expect(created.status).to.equal(201);
      const observation = { id: created.body.id as string };
      await call('GET', '/v1/tenants/{tenantId}/observations', {
        query: `minPosition=${created.headers.get('x-position')}&sort=-updatedAt&limit=5`,
      });
      const read = await call('GET', '/v1/tenants/{tenantId}/observations/{id}', { params: observation });
      await call('GET', '/v1/tenants/{tenantId}/observations/{id}', {
        params: observation,
        headers: { 'If-None-Match': read.headers.get('etag')! },
      });
      await call('PATCH', '/v1/tenants/{tenantId}/observations/{id}', {
        params: observation,
        body: { notes: null, attributes: { count: 2 } },
        headers: { 'content-type': 'application/merge-patch+json', 'If-Match': read.headers.get('etag')! },
      });

      const image = await testImage({
        width: 64,
        height: 48,
        format: 'png',
        boxes: [{ x: 3, y: 3, width: 9, height: 9, value: 0 }],
      });
      const upload = { params: observation, rawBody: image, headers: { 'content-type': 'image/png' } };
      const media = await call('POST', '/v1/tenants/{tenantId}/observations/{id}/media', upload);
      expect(media.status).to.equal(201);
      expect((await call('POST', '/v1/tenants/{tenantId}/observations/{id}/media', upload)).status).to.equal(
        200,
      );
      const medium = { ...observation, mediaId: media.body.id as string };
      const download = await call('GET', '/v1/tenants/{tenantId}/observations/{id}/media/{mediaId}', {
        params: medium,
      });
      expect(download.headers.get('content-type')).to.equal('image/png');
      await call('GET', '/v1/tenants/{tenantId}/observations/{id}/media/{mediaId}', {
        params: medium,
        headers: { 'If-None-Match': download.headers.get('etag')! },
      });
      const thumbnail = await call(
        'GET',
        '/v1/tenants/{tenantId}/observations/{id}/media/{mediaId}/thumbnail',
        {
          params: medium,
          query: 'width=320',
        },
      );
      expect(thumbnail.headers.get('content-type')).to.equal('image/webp');
      await call('GET', '/v1/tenants/{tenantId}/observations/{id}/media/{mediaId}/thumbnail', {
        params: medium,
        query: 'width=320',
        headers: { 'If-None-Match': thumbnail.headers.get('etag')! },
      });

      await call('GET', '/v1/tenants/{tenantId}/visits', { query: `status=draft&locationId=${place.id}` });
      await call('GET', '/v1/tenants/{tenantId}/visits/{id}', { params: trip });
      await call('PATCH', '/v1/tenants/{tenantId}/visits/{id}', {
        params: trip,
        body: { endedAt: '2026-05-01T12:00:00Z', notes: 'sunny' },
      });
      const submitted = await call('POST', '/v1/tenants/{tenantId}/visits/{id}/submit', { params: trip });
      expect(submitted.body.observationIds).to.deep.equal([observation.id]);

      // CV jobs: one that completes, and one whose image bytes are gone, which fails.
      const t = cvTenant(server.url, server.stores, tenantId, adminKey);
      const job = await call('POST', '/v1/tenants/{tenantId}/cv-jobs', {
        body: { observationId: observation.id, model: 'image-quality' },
      });
      expect(job.status).to.equal(202);
      const lost = await t.attachDirectly(observation.id, Buffer.from('never stored'), { store: false });
      const failing = await call('POST', '/v1/tenants/{tenantId}/cv-jobs', {
        body: { observationId: observation.id, model: 'image-quality', mediaId: lost.id },
      });
      await t.finished(job.body.id as string);
      await t.finished(failing.body.id as string);
      await call('GET', '/v1/tenants/{tenantId}/cv-jobs/{id}', { params: { id: job.body.id } });
      await call('GET', '/v1/tenants/{tenantId}/cv-jobs/{id}', { params: { id: failing.body.id } });
      await call('GET', '/v1/tenants/{tenantId}/cv-jobs', { query: `observationId=${observation.id}` });
      await call('GET', '/v1/tenants/{tenantId}/cv-models');

      // Every delivery the receiver got is an envelope the document's `webhooks` describes.
      const types = new Set<string>();
      await eventually(
        () => {
          for (const delivery of receiver.received) types.add((delivery.body as Obj).type as string);
          return Promise.resolve(types.size === externalEventTypes.length ? true : undefined);
        },
        20_000,
        'a delivery of every event type',
      );
      for (const delivery of receiver.received) {
        const envelope = delivery.body as Obj;
        const operation = doc.webhooks[envelope.type as string].post as Obj;
        expect(
          v.errorsOf(operation.requestBody.content['application/json'].schema as Obj, envelope),
          delivery.rawBody,
        ).to.deep.equal([]);
        expect(delivery.verified).to.equal(true);
      }
      const attempts = await eventually(async () => {
        const response = await call('GET', '/v1/tenants/{tenantId}/webhooks/{id}/deliveries', {
          params: hook,
        });
        return (response.body.data as Obj[]).length > 0 ? (response.body.data as Obj[]) : undefined;
      });
      await call('GET', '/v1/tenants/{tenantId}/webhooks/{id}/deliveries', {
        params: hook,
        query: 'status=succeeded&eventType=observation.created&limit=1',
      });
      const redelivered = await call(
        'POST',
        '/v1/tenants/{tenantId}/webhooks/{id}/deliveries/{deliveryId}/redeliver',
        {
          params: { ...hook, deliveryId: attempts[0]!.deliveryId as string },
        },
      );
      expect(redelivered.status).to.equal(202);
      const details = await call('GET', '/v1/tenants/{tenantId}/webhooks/{id}/deliveries/{deliveryId}', {
        params: { ...hook, deliveryId: attempts[0]!.deliveryId as string },
      });
      expect(details.status).to.equal(200);
      const replayed = await call('POST', '/v1/tenants/{tenantId}/webhooks/{id}/replay', {
        params: hook,
        body: { since: '2026-01-01T00:00:00Z' },
      });
      expect(replayed.status).to.equal(202);
      expect(
        (await call('POST', '/v1/tenants/{tenantId}/webhooks/{id}/pause', { params: hook })).status,
      ).to.equal(200);
      expect(
        (await call('POST', '/v1/tenants/{tenantId}/webhooks/{id}/resume', { params: hook })).status,
      ).to.equal(200);
      await call('POST', '/v1/tenants/{tenantId}/webhooks/{id}/enable', {
        params: hook,
        body: { replayMissed: true },
      });
      const tested = await call('POST', '/v1/tenants/{tenantId}/webhooks/{id}/test', {
        params: hook,
        body: { type: 'visit.submitted' },
      });
      expect(tested.status).to.equal(200);
      expect(
        (await call('POST', '/v1/tenants/{tenantId}/webhooks/{id}/secret/rotate', { params: hook })).status,
      ).to.equal(200);

      await call('GET', '/v1/tenants/{tenantId}/observations/{id}/history', { params: observation });
      const verified = await call('GET', '/v1/tenants/{tenantId}/audit/verification');
      expect(verified.status).to.equal(200);
      expect(verified.body.broken).to.equal(null);
      const digest = await digestNow(server, tenantId);
      expect(
        (await call('GET', '/v1/tenants/{tenantId}/audit/digests', { query: 'limit=5' })).status,
      ).to.equal(200);
      await call('GET', '/v1/tenants/{tenantId}/audit/digests/latest');
      const [firstEvent] = (await server.stores.eventStore.readAll({ maxCount: 1, filter: { tenantId } }))
        .events;
      const included = await call('GET', '/v1/tenants/{tenantId}/audit/proofs/inclusion', {
        query: `eventId=${firstEvent!.id}`,
      });
      expect(included.status).to.equal(200);
      const consistent = await call('GET', '/v1/tenants/{tenantId}/audit/proofs/consistency', {
        query: `from=1&to=${digest.log.size}`,
      });
      expect(consistent.status).to.equal(200);
      await call('GET', '/.well-known/digest-keys.json', { key: null });
      await call('GET', '/v1/tenants/{tenantId}/events', {
        query: 'type=ObservationRecorded,ObservationUpdated&limit=3',
      });
      const ndjson = await call('GET', '/v1/tenants/{tenantId}/events', {
        query: 'limit=50',
        headers: { Accept: 'application/x-ndjson' },
      });
      expect((await call('GET', '/v1/tenants/{tenantId}/audit/verification')).body.ok).to.equal(true);
      const lines = (ndjson.body as string).trim().split('\n');
      expect(lines.length).to.be.greaterThan(5);
      for (const line of lines)
        expect(v.errorsOf(v.schema('HistoryEvent'), JSON.parse(line)), line).to.deep.equal([]);

      expect(
        (await call('DELETE', '/v1/tenants/{tenantId}/webhooks/{id}', { params: hook })).status,
      ).to.equal(204);
    });

    it('match the document for problems: 400, 401, 403, 404, 409, 412, 413, 415, 422 and 429', async () => {
      const observations = '/v1/tenants/{tenantId}/observations';
      const bad = await call('POST', observations, {
        body: { observedAt: 'soon', position: { lat: 91, lon: 0 } },
      });
      expect(bad.status).to.equal(400);
      expect(bad.body.errors).to.have.length(2);
      expect((await call('GET', observations, { key: null })).status).to.equal(401);
      const cvOnly = await call('POST', '/v1/tenants/{tenantId}/api-keys', {
        body: { name: 'cv only', scopes: ['cv:read'] },
      });
      const forbidden = await call('GET', observations, { key: cvOnly.body.key as string });
      expect(forbidden.status).to.equal(403);
      expect(forbidden.body.requiredScope).to.equal('observations:read');
      expect((await call('GET', `${observations}/{id}`, { params: { id: 'o_missing' } })).status).to.equal(
        404,
      );
      expect((await call('GET', observations, { params: { tenantId: 't_nosuchtenant' } })).status).to.equal(
        404,
      );
      const user = { email: 'twice@openapi.test', password: 'a long enough password', scopes: ['cv:read'] };
      await call('POST', '/v1/tenants/{tenantId}/users', { body: user });
      expect((await call('POST', '/v1/tenants/{tenantId}/users', { body: user })).status).to.equal(409);
      const created = await call('POST', observations, { body: { observedAt: '2026-05-01T09:30:00Z' } });
      const stale = await call('PATCH', `${observations}/{id}`, {
        params: { id: created.body.id },
        body: { notes: 'x' },
        headers: { 'If-Match': '"7"' },
      });
      expect(stale.status).to.equal(412);
      const huge = await call('POST', observations, {
        rawBody: JSON.stringify({ observedAt: '2026-05-01T09:30:00Z', notes: 'x'.repeat(1_100_000) }),
        headers: { 'content-type': 'application/json' },
      });
      expect(huge.status).to.equal(413);
      expect(
        (await call('POST', observations, { rawBody: 'hello', headers: { 'content-type': 'text/plain' } }))
          .status,
      ).to.equal(415);
      const dangling = await call('POST', observations, {
        body: { observedAt: '2026-05-01T09:30:00Z', locationId: 'l_nowhere' },
      });
      expect(dangling.status).to.equal(422);
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const failed = await call('POST', '/v1/auth/token', {
          key: null,
          body: { email: 'nobody@openapi.test', password: 'wrong password', tenantId },
        });
        expect(failed.status).to.equal(401);
      }
      const blocked = await call('POST', '/v1/auth/token', {
        key: null,
        body: { email: 'nobody@openapi.test', password: 'wrong password', tenantId },
      });
      expect(blocked.status).to.equal(429);
      expect(blocked.headers.get('retry-after')).to.match(/^\d+$/);
    });

    it('have covered every success status the document declares', () => {
      const declared = documentedOperations(doc).flatMap(({ method, path, operation }) =>
        Object.keys(operation.responses as Obj)
          .filter((status) => /^2\d\d$/.test(status))
          .map((status) => `${method} ${path} ${status}`),
      );
      expect(declared.filter((entry) => !seen.has(entry))).to.deep.equal([]);
    });
  });
});
