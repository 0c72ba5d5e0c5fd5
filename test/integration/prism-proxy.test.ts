import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { externalEventTypes } from '../../src/webhooks/external.js';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import {
  exchange,
  openApiValidator,
  prismViolations,
  startPrismProxy,
  type OpenApiValidator,
  type PrismViolation,
} from '../support/openapi.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

type Obj = Record<string, any>;

/**
 * The service as prism's validating proxy sees it (`prism proxy --errors`, from @stoplight/prism-cli): a
 * realistic scenario sent through the proxy, which checks every request and every response against the
 * document the service serves. Any violation, in a request or in a response, fails the test with the list.
 */
describe('the service through prism’s validating proxy', function () {
  this.timeout(120_000);
  let server: TestServer;
  let prism: Awaited<ReturnType<typeof startPrismProxy>>;
  let dir: string;
  let receiver: Receiver;
  let validator: OpenApiValidator;
  const violations: PrismViolation[] = [];
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

  before(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    receiver = await startReceiver(secret);
    dir = mkdtempSync(join(tmpdir(), 'prism-'));
    const file = join(dir, 'openapi.json');
    const document = await (await fetch(`${server.url}/v1/openapi.json`)).text();
    writeFileSync(file, document);
    validator = openApiValidator(JSON.parse(document) as Obj);
    prism = await startPrismProxy(file, server.url);
  });

  after(async () => {
    await prism?.stop();
    await receiver?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** One request through the proxy; its violations are collected, its answer returned. */
  const call = async (
    method: string,
    path: string,
    {
      key,
      headers = {},
      body,
      rawBody,
      contentType,
    }: {
      key?: string;
      headers?: Record<string, string>;
      body?: unknown;
      rawBody?: string | Uint8Array;
      contentType?: string;
    } = {},
  ) => {
    const response = await fetch(`${prism.url}${path}`, {
      method,
      headers: {
        ...(key ? { 'X-API-Key': key } : {}),
        ...(body !== undefined ? { 'content-type': contentType ?? 'application/json' } : {}),
        ...(rawBody !== undefined && contentType ? { 'content-type': contentType } : {}),
        ...headers,
      },
      ...(rawBody !== undefined
        ? { body: rawBody }
        : body !== undefined
          ? { body: JSON.stringify(body) }
          : {}),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString('utf8');
    const type = response.headers.get('content-type');
    violations.push(
      ...prismViolations(`${method} ${path} ${response.status}`, {
        headers: response.headers,
        contentType: type,
        text,
      }),
    );
    const json =
      /^application\/([a-z.+-]+\+)?json\b/.test(type ?? '') && text !== ''
        ? (JSON.parse(text) as Obj)
        : undefined;
    return { status: response.status, headers: response.headers, body: json as Obj, text, bytes };
  };

  /** Fails listing every violation prism found; a failed check of the scenario shows them too. */
  const noViolations = () => expect(violations.map((v) => `${v.exchange}: ${v.violation}`)).to.deep.equal([]);

  it('runs a realistic scenario with no violation', async () => {
    try {
      await scenario();
    } finally {
      noViolations();
    }
  });

  const scenario = async () => {
    // The service's own routes, the documentation and its script (with its ETag).
    expect((await call('GET', '/health')).status).to.equal(200);
    expect((await call('GET', '/health/live')).status).to.equal(200);
    expect((await call('GET', '/v1/openapi.json')).status).to.equal(200);
    expect((await call('GET', '/docs')).status).to.equal(200);
    const script = await call('GET', '/docs/redoc.standalone.js');
    expect(script.status).to.equal(200);
    const scriptTag = script.headers.get('etag')!;
    expect(
      (await call('GET', '/docs/redoc.standalone.js', { headers: { 'If-None-Match': scriptTag } })).status,
    ).to.equal(304);
    expect((await call('GET', '/favicon.ico')).status).to.equal(200);
    expect((await call('GET', '/.well-known/jwks.json')).status).to.equal(200);
    expect((await call('GET', '/.well-known/oauth-authorization-server')).status).to.equal(200);

    // A tenant, with keys, a user and an OAuth client.
    const platform = server.platformAdminKey;
    const created = await call('POST', '/v1/tenants', {
      key: platform,
      body: { name: 'Prism field team', notificationEmail: 'ops@prism.test' },
    });
    expect(created.status).to.equal(201);
    const tenantId = created.body.id as string;
    const admin = created.body.adminApiKey as string;
    const t = `/v1/tenants/${tenantId}`;
    expect((await call('GET', '/v1/tenants?limit=5', { key: platform })).status).to.equal(200);
    expect((await call('GET', t, { key: admin })).status).to.equal(200);
    const writerKey = await call('POST', `${t}/api-keys`, {
      key: admin,
      body: { name: 'field app', scopes: ['observations:read', 'observations:write', 'locations:write'] },
    });
    expect(writerKey.status).to.equal(201);
    const writer = writerKey.body.key as string;
    const cvOnly = (
      await call('POST', `${t}/api-keys`, { key: admin, body: { name: 'cv', scopes: ['cv:read'] } })
    ).body.key as string;
    expect((await call('GET', `${t}/api-keys`, { key: admin })).status).to.equal(200);
    expect(
      (await call('GET', `${t}/api-keys/${writerKey.body.id as string}`, { key: admin })).status,
    ).to.equal(200);

    const email = 'ada@prism.test';
    const password = 'correct horse battery staple';
    const user = await call('POST', `${t}/users`, {
      key: admin,
      body: { email, password, scopes: ['observations:read'] },
    });
    expect(user.status).to.equal(201);
    expect((await call('GET', `${t}/users`, { key: admin })).status).to.equal(200);
    expect((await call('GET', `${t}/users/${user.body.id as string}`, { key: admin })).status).to.equal(200);
    const login = await call('POST', '/v1/auth/token', { body: { email, password, tenantId } });
    expect(login.status).to.equal(200);
    const bearer = { Authorization: `Bearer ${login.body.accessToken as string}` };
    expect((await call('GET', `${t}/observations`, { headers: bearer })).status).to.equal(200);
    const refreshed = await call('POST', '/v1/auth/refresh', {
      body: { refreshToken: login.body.refreshToken },
    });
    expect(refreshed.status).to.equal(200);

    const client = await call('POST', `${t}/oauth-clients`, {
      key: admin,
      body: { name: 'reporting', scopes: ['observations:read', 'cv:read'] },
    });
    expect(client.status).to.equal(201);
    expect((await call('GET', `${t}/oauth-clients`, { key: admin })).status).to.equal(200);
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.body.clientId as string,
      client_secret: client.body.clientSecret as string,
      scope: 'observations:read',
    }).toString();
    const token = await call('POST', '/v1/oauth/token', {
      rawBody: form,
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(token.status).to.equal(200);
    const clientBearer = { Authorization: `Bearer ${token.body.access_token as string}` };
    expect((await call('GET', `${t}/visits`, { headers: clientBearer })).status).to.equal(200);

    // A webhook subscription with a receiver on loopback.
    const webhook = await call('POST', `${t}/webhooks`, {
      key: admin,
      body: { url: receiver.url, events: [...externalEventTypes], secret },
    });
    expect(webhook.status).to.equal(201);
    const hook = `${t}/webhooks/${webhook.body.id as string}`;
    expect((await call('GET', `${t}/webhooks`, { key: admin })).status).to.equal(200);
    expect((await call('GET', hook, { key: admin })).status).to.equal(200);

    // A location, a visit to it, an observation on the visit, and an image of it.
    const location = await call('POST', `${t}/locations`, {
      key: writer,
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
        attributes: { habitat: 'wet meadow' },
      },
    });
    expect(location.status).to.equal(201);
    const place = `${t}/locations/${location.body.id as string}`;
    expect(
      (
        await call('GET', `${t}/locations?limit=10&minPosition=${location.headers.get('x-position')!}`, {
          key: admin,
        })
      ).status,
    ).to.equal(200);
    const placeRead = await call('GET', place, { key: admin });
    expect(placeRead.status).to.equal(200);
    expect(
      (await call('GET', place, { key: admin, headers: { 'If-None-Match': placeRead.headers.get('etag')! } }))
        .status,
    ).to.equal(304);
    expect(
      (
        await call('PATCH', place, {
          key: writer,
          body: { attributes: { access: 'footpath' } },
          contentType: 'application/merge-patch+json',
          headers: { 'If-Match': placeRead.headers.get('etag')! },
        })
      ).status,
    ).to.equal(200);

    const visit = await call('POST', `${t}/visits`, {
      key: writer,
      body: {
        locationId: location.body.id,
        startedAt: '2026-05-01T08:00:00+02:00',
        participants: ['Ada', 'Grace'],
      },
    });
    expect(visit.status).to.equal(201);
    const trip = `${t}/visits/${visit.body.id as string}`;

    const observation = await call('POST', `${t}/observations`, {
      key: writer,
      headers: { 'Idempotency-Key': 'prism-observation-1' },
      body: {
        observedAt: '2026-05-01T09:30:00+02:00',
        position: { lat: 45.1, lon: 7.2, accuracyM: 5 },
        locationId: location.body.id,
        visitId: visit.body.id,
        notes: 'near the creek',
        attributes: { species: 'Vulpes vulpes', count: 1 },
      },
    });
    expect(observation.status).to.equal(201);
    const seen = `${t}/observations/${observation.body.id as string}`;
    expect(
      (
        await call(
          'GET',
          `${t}/observations?limit=5&sort=-updatedAt&minPosition=${observation.headers.get('x-position')!}`,
          { key: writer },
        )
      ).status,
    ).to.equal(200);
    const read = await call('GET', seen, { key: writer });
    expect(read.status).to.equal(200);
    expect(
      (await call('GET', seen, { key: writer, headers: { 'If-None-Match': read.headers.get('etag')! } }))
        .status,
    ).to.equal(304);
    expect(
      (
        await call('PATCH', seen, {
          key: writer,
          body: { notes: null, attributes: { count: 2 } },
          contentType: 'application/merge-patch+json',
          headers: { 'If-Match': read.headers.get('etag')! },
        })
      ).status,
    ).to.equal(200);

    const image = await testImage({
      width: 64,
      height: 48,
      format: 'png',
      boxes: [{ x: 3, y: 3, width: 9, height: 9, value: 0 }],
    });
    // Prism reads a request body as text, which garbles image bytes (stoplightio/prism#1321, #2475): the
    // upload goes to the service directly, and its answers are checked against the document here.
    const uploadDirectly = async () => {
      const response = await fetch(`${server.url}${seen}/media`, {
        method: 'POST',
        headers: { 'X-API-Key': writer, 'content-type': 'image/png' },
        body: image,
      });
      const result = await exchange('POST', '/v1/tenants/{tenantId}/observations/{id}/media', response);
      expect(validator.checkResponse(result)).to.deep.equal([]);
      return { status: result.status, body: JSON.parse(result.text) as Obj };
    };
    const upload = await uploadDirectly();
    expect(upload.status, JSON.stringify(upload.body)).to.equal(201);
    expect((await uploadDirectly()).status).to.equal(200);
    const medium = `${seen}/media/${upload.body.id as string}`;
    const download = await call('GET', medium, { key: writer });
    expect(download.status).to.equal(200);
    // Its status and headers are prism's to check; it passes the bytes on as text, so they are not compared
    // here (test/integration/media-api.test.ts does).
    expect(download.headers.get('etag')).to.equal(`"${upload.body.sha256 as string}"`);
    expect(
      (
        await call('GET', medium, {
          key: writer,
          headers: { 'If-None-Match': download.headers.get('etag')! },
        })
      ).status,
    ).to.equal(304);
    expect((await call('GET', `${seen}/history`, { key: writer })).status).to.equal(200);

    expect(
      (
        await call('GET', `${t}/visits?status=draft&locationId=${location.body.id as string}`, {
          key: writer,
        })
      ).status,
    ).to.equal(200);
    expect(
      (
        await call('PATCH', trip, {
          key: writer,
          body: { endedAt: '2026-05-01T12:00:00Z', notes: 'sunny' },
          contentType: 'application/merge-patch+json',
        })
      ).status,
    ).to.equal(200);
    const submitted = await call('POST', `${trip}/submit`, { key: writer });
    expect(submitted.status).to.equal(200);
    expect(submitted.body.observationIds).to.deep.equal([observation.body.id]);

    // A CV job over the image.
    const job = await call('POST', `${t}/cv-jobs`, {
      key: admin,
      body: { observationId: observation.body.id, model: 'image-quality' },
    });
    expect(job.status).to.equal(202);
    await cvTenant(server.url, server.stores, tenantId, admin).finished(job.body.id as string);
    expect((await call('GET', `${t}/cv-jobs/${job.body.id as string}`, { key: admin })).status).to.equal(200);
    expect(
      (await call('GET', `${t}/cv-jobs?observationId=${observation.body.id as string}`, { key: cvOnly }))
        .status,
    ).to.equal(200);
    expect((await call('GET', `${t}/cv-models`, { key: cvOnly })).status).to.equal(200);

    // The deliveries, a test event, a redelivery, a rotated secret.
    // Every type but cv.job.failed, which this scenario has no failing job for.
    const expected = externalEventTypes.filter((type) => type !== 'cv.job.failed');
    await eventually(
      () => {
        const types = new Set(receiver.received.map((delivery) => (delivery.body as Obj).type as string));
        return Promise.resolve(expected.every((type) => types.has(type)) ? true : undefined);
      },
      20_000,
      'a delivery of every event type the scenario causes',
    );
    const attempts = await eventually(async () => {
      const response = await call('GET', `${hook}/deliveries?limit=50`, { key: admin });
      return (response.body.data as Obj[]).length >= expected.length
        ? (response.body.data as Obj[])
        : undefined;
    });
    expect(
      (await call('GET', `${hook}/deliveries?status=succeeded&eventType=observation.created`, { key: admin }))
        .status,
    ).to.equal(200);
    expect(
      (
        await call('POST', `${hook}/deliveries/${attempts[0]!.deliveryId as string}/redeliver`, {
          key: admin,
        })
      ).status,
    ).to.equal(202);
    expect(
      (await call('POST', `${hook}/test`, { key: admin, body: { type: 'observation.created' } })).status,
    ).to.equal(200);
    expect((await call('POST', `${hook}/secret/rotate`, { key: admin })).status).to.equal(200);
    expect(
      (await call('POST', `${hook}/enable`, { key: admin, body: { replayMissed: false } })).status,
    ).to.equal(200);

    // The event history, with the comma form of `type` that docs/api.md shows, and as NDJSON.
    const events = await call('GET', `${t}/events?type=ObservationRecorded,ObservationUpdated&limit=10`, {
      key: admin,
    });
    expect(events.status).to.equal(200);
    expect(events.body.data.map((event: Obj) => event.type as string)).to.include.members([
      'ObservationRecorded',
      'ObservationUpdated',
    ]);
    expect(
      (await call('GET', `${t}/events?type=VisitSubmitted&type=LocationCreated`, { key: admin })).status,
    ).to.equal(200);
    const ndjson = await call('GET', `${t}/events?limit=20`, {
      key: admin,
      headers: { Accept: 'application/x-ndjson' },
    });
    expect(ndjson.status).to.equal(200);
    const audit = await call('GET', `${t}/audit/verification`, { key: admin });
    expect(audit.status).to.equal(200);
    expect(audit.body.broken).to.equal(null);

    // Problems the service answers itself (prism passes these requests on: they match the document).
    expect(
      (await call('GET', `${t}/observations/o_01m7xq3mn18snzhf2p99rppm8q`, { key: writer })).status,
    ).to.equal(404);
    expect(
      (
        await call('POST', `${t}/observations`, {
          key: writer,
          body: { observedAt: '2026-05-01T09:30:00Z', locationId: 'l_01m7xr44nde6cpe35md841agpz' },
        })
      ).status,
    ).to.equal(422);
    expect((await call('GET', `${t}/observations`, { key: 'obs_not-a-real-key' })).status).to.equal(401);
    const forbidden = await call('GET', `${t}/observations`, { key: cvOnly });
    expect(forbidden.status).to.equal(403);
    expect(forbidden.headers.get('www-authenticate')).to.include('insufficient_scope');
    expect(
      (
        await call('PATCH', place, {
          key: writer,
          body: { name: 'Stale' },
          contentType: 'application/merge-patch+json',
          headers: { 'If-Match': '"0"' },
        })
      ).status,
    ).to.equal(412);
    expect((await call('POST', `${trip}/submit`, { key: writer })).status).to.equal(409);

    // Endings: a user disabled, credentials revoked, a location and the subscription deleted.
    expect(
      (await call('POST', `${t}/users/${user.body.id as string}/disable`, { key: admin })).status,
    ).to.equal(200);
    expect(
      (await call('DELETE', `${t}/oauth-clients/${client.body.id as string}`, { key: admin })).status,
    ).to.equal(204);
    expect(
      (await call('DELETE', `${t}/api-keys/${writerKey.body.id as string}`, { key: admin })).status,
    ).to.equal(204);
    const doomed = await call('POST', `${t}/locations`, {
      key: admin,
      body: { name: 'Gone', position: { lat: 1, lon: 2 } },
    });
    expect(
      (await call('DELETE', `${t}/locations/${doomed.body.id as string}`, { key: admin })).status,
    ).to.equal(204);
    expect((await call('DELETE', hook, { key: admin })).status).to.equal(204);
  };
});
