import { expect } from 'chai';
import fc from 'fast-check';
import { cvTenant } from '../support/cv.js';
import { testImage } from '../support/images.js';
import {
  deref,
  documentedOperations,
  exchange,
  mediaTypeOf,
  openApiValidator,
  type OpenApiValidator,
} from '../support/openapi.js';
import { sendRaw } from '../support/raw-request.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { invalidObject, junkBody, validValue, type ArbitraryOptions } from '../support/schema-arbitrary.js';
import { request, startTestServer, withTenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/wait.js';

/**
 * Requests generated from the OpenAPI document, for every operation: path parameters naming real
 * resources or not, valid and invalid query strings, bodies and headers, real credentials or not. Whatever
 * is sent, the service never answers 5xx, and every answer is one the document declares for the operation,
 * with a body its schema accepts: problem+json for errors (RFC 6749 JSON errors at the token endpoint).
 * Bodies the document accepts are never refused for an unknown or missing field. Deterministic: a fixed seed.
 */

type Obj = Record<string, any>;

// FUZZ_RUNS and FUZZ_SEED run it longer, or differently, by hand; FUZZ_VERBOSE=1 prints the statuses seen,
// FUZZ_DEBUG=<part of a path> every exchange of the operations whose path has it.
const seed = Number(process.env.FUZZ_SEED ?? 4_2026_11);
const runsPerOperation = Number(process.env.FUZZ_RUNS ?? 25);

interface Generated {
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** Whether the body and query are ones the document accepts, field for field. */
  wellFormed: boolean;
}

const printable = (min: number, max: number) =>
  fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: min,
    maxLength: max,
  });

/** A path segment that does not name anything (but stays one segment: no `.` or `..`), percent-encoded. */
const strangeSegment = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 20 }).map(encodeURIComponent),
    fc.constantFrom('o_01', 't_other', '%25', '__proto__', 'x'.repeat(300), 'null', '%20'),
    // Not valid percent-encoding, or not UTF-8 once decoded: sent as it is.
    fc.constantFrom('%zz', '%', '%E0%A4%A', '%C0%80', '%FF', '%00', 'a%2Fb'),
  )
  .filter((s) => s !== '.' && s !== '..');

const junkContentTypes = [
  'application/json; charset="',
  'application/json; charset=utf-16',
  'application/merge-patch+json; charset=UTF-8; x=',
  ';;;',
  'text/plain',
  'application/xml',
  'application/json; charset=latin1',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'image/gif',
];

/**
 * JSON nested 1,000 and 100,000 levels deep, built as text (nothing recursive on the sending side): bare
 * arrays, objects, and a deep value in a field of an otherwise plausible body. Every answer is 400 or 413,
 * never a stack overflow: the service measures the depth before it parses (src/core/json-bounds.ts).
 */
const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const deepBodies = [1000, 100_000].flatMap((depth) => [
  { depth, body: deepArray(depth) },
  { depth, body: deepObject(depth) },
  { depth, body: `{"observedAt":"2026-05-01T09:30:00Z","attributes":${deepObject(depth)}}` },
  { depth, body: `{"name":${deepArray(depth)},"scopes":["admin"]}` },
]);

describe('fuzzing every operation of the OpenAPI document', function () {
  this.timeout(Math.max(120_000, runsPerOperation * 4000));
  let server: TestServer;
  let doc: Obj;
  let v: OpenApiValidator;
  let receiver: Receiver;
  let adminKey: string;
  let tenantId: string;
  const ids: Record<string, string> = {};
  const dictionary: Record<string, string[]> = {};
  let images: Uint8Array[] = [];
  const statuses = new Map<string, Map<number, number>>();

  before(async () => {
    server = await startTestServer({
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      RATE_LIMIT: 'off',
      CONSISTENCY_TIMEOUT: '200ms',
      BODY_LIMIT: '64kb',
      MEDIA_MAX_BYTES: '256kb',
    });
    doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as Obj;
    v = openApiValidator(doc);
    receiver = await startReceiver('whsec-fuzz-0123456789abcdef');
    const tenant = await withTenant(server, 'fuzz');
    tenantId = tenant.tenantId;
    adminKey = tenant.adminKey;
    const api = async (path: string, init: Parameters<typeof request>[1] = {}) => {
      const response = await request(`${server.url}/v1/tenants/${tenantId}${path}`, {
        ...init,
        headers: { 'X-API-Key': adminKey, ...init.headers },
      });
      if (response.status >= 300)
        throw new Error(`${path}: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body as Obj;
    };
    images = [
      await testImage({ width: 32, height: 24, format: 'png' }),
      await testImage({ width: 40, height: 30, format: 'jpeg', background: 40 }),
      await testImage({ width: 16, height: 16, format: 'webp', background: 200 }),
    ];
    const email = 'fuzz@fuzz.test';
    const password = 'a long enough password';
    ids.user = (await api('/users', { method: 'POST', body: { email, password, scopes: ['admin'] } })).id;
    ids.apiKey = (await api('/api-keys', { method: 'POST', body: { name: 'fuzz', scopes: ['cv:read'] } })).id;
    const client = await api('/oauth-clients', { method: 'POST', body: { name: 'fuzz', scopes: ['admin'] } });
    ids.oauthClient = client.id;
    ids.webhook = (
      await api('/webhooks', {
        method: 'POST',
        body: { url: receiver.url, events: ['observation.created'], secret: 'whsec-fuzz-0123456789abcdef' },
      })
    ).id;
    ids.location = (
      await api('/locations', { method: 'POST', body: { name: 'Fuzz field', position: { lat: 1, lon: 2 } } })
    ).id;
    ids.visit = (
      await api('/visits', {
        method: 'POST',
        body: { locationId: ids.location, startedAt: '2026-05-01T08:00:00Z' },
      })
    ).id;
    ids.observation = (
      await api('/observations', { method: 'POST', body: { observedAt: '2026-05-01T09:30:00Z' } })
    ).id;
    const t = cvTenant(server.url, server.stores, tenantId, adminKey);
    ids.media = (await t.upload(ids.observation!, Buffer.from(images[0]!))).id;
    ids.cvJob = (
      await api('/cv-jobs', {
        method: 'POST',
        body: { observationId: ids.observation, model: 'image-quality' },
      })
    ).id;
    const attempts = await eventually(async () => {
      const page = await api(`/webhooks/${ids.webhook}/deliveries`);
      return (page.data as Obj[]).length > 0 ? (page.data as Obj[]) : undefined;
    });
    ids.delivery = attempts[0]!.deliveryId as string;
    const tokens = (
      await request(`${server.url}/v1/auth/token`, { method: 'POST', body: { email, password, tenantId } })
    ).body as Obj;
    Object.assign(dictionary, {
      observationId: [ids.observation],
      locationId: [ids.location],
      visitId: [ids.visit],
      mediaId: [ids.media],
      model: ['image-quality', 'object-proposals'],
      email: [email],
      password: [password],
      refreshToken: [tokens.refreshToken as string],
      client_id: [client.clientId as string],
      client_secret: [client.clientSecret as string],
      grant_type: ['client_credentials'],
      url: [receiver.url],
      // Positions the store has reached: a list waits for nothing.
      minPosition: [0, 1],
      after: [0],
    });
  });
  after(async () => {
    if (process.env.FUZZ_VERBOSE) {
      for (const [operation, counts] of statuses)
        console.log(`${operation}: ${JSON.stringify(Object.fromEntries(counts))}`);
    }
    await receiver?.close();
    await server?.close();
  });

  /** The real resource a path parameter names. */
  const fixtureFor = (path: string, name: string): string => {
    if (name === 'tenantId') return tenantId;
    if (name === 'mediaId') return ids.media!;
    if (name === 'deliveryId') return ids.delivery!;
    const resource = path.split('/{id}')[0]!.split('/').at(-1)!;
    const byResource: Record<string, string> = {
      users: 'user',
      'api-keys': 'apiKey',
      'oauth-clients': 'oauthClient',
      observations: 'observation',
      webhooks: 'webhook',
      locations: 'location',
      visits: 'visit',
      'cv-jobs': 'cvJob',
    };
    const id = ids[byResource[resource] ?? ''];
    if (!id) throw new Error(`no fixture for {${name}} in ${path}`);
    return id;
  };

  const options = (): ArbitraryOptions => ({
    dictionary,
    // Webhook receivers: the fuzz receiver, or a port where nothing listens. Never a random host.
    formats: { uri: fc.constantFrom(receiver.url, 'http://127.0.0.1:9/hooks') },
  });

  /**
   * Requests for one operation, of two kinds: clean ones (real credentials and resources, bodies and queries
   * the document accepts, the declared content type), which mostly succeed and so check the 2xx answers;
   * and chaotic ones, where any part may be wrong.
   */
  const requestFor = (path: string, operation: Obj): fc.Arbitrary<Generated> =>
    fc.oneof(
      { weight: 2, arbitrary: requestsFor(path, operation, true) },
      { weight: 1, arbitrary: requestsFor(path, operation, false) },
    );

  const requestsFor = (path: string, operation: Obj, clean: boolean): fc.Arbitrary<Generated> => {
    const parameters = ((operation.parameters ?? []) as Obj[]).map((p) => deref(doc, p));
    const pathParameters = parameters.filter((p) => p.in === 'path');
    // A made-up cursor is never valid: only chaotic requests send one.
    const queryParameters = parameters.filter((p) => p.in === 'query' && (!clean || p.name !== 'cursor'));

    const pathArbitrary = fc
      .tuple(
        ...pathParameters.map((p) =>
          clean
            ? fc.constant(encodeURIComponent(fixtureFor(path, p.name as string)))
            : fc.oneof(
                { weight: 3, arbitrary: fc.constant(encodeURIComponent(fixtureFor(path, p.name as string))) },
                { weight: 2, arbitrary: strangeSegment },
                ...(p.name === 'tenantId'
                  ? [
                      {
                        weight: 1,
                        arbitrary: fc.constantFrom('t_0000000000000000000000000', 'T_UPPER', 't_'),
                      },
                    ]
                  : []),
              ),
        ),
      )
      .map((values) =>
        pathParameters.reduce(
          (filled, p, index) => filled.replace(`{${p.name as string}}`, values[index]!),
          path,
        ),
      );

    const queryArbitrary = fc
      .tuple(
        fc.tuple(
          ...queryParameters.map((p) => {
            const known = dictionary[p.name as string];
            const valid = validValue(doc, p.schema as Obj, options()).map((value) => ({ value, ok: true }));
            const value = known
              ? fc.oneof(
                  valid,
                  fc.constantFrom(...known).map((value) => ({ value, ok: true })),
                )
              : valid;
            return fc.oneof(
              { weight: 3, arbitrary: fc.constant(null) },
              { weight: 2, arbitrary: value },
              ...(clean
                ? []
                : [
                    {
                      weight: 1,
                      arbitrary: fc.string({ maxLength: 12 }).map((value) => ({ value, ok: false })),
                    },
                  ]),
            );
          }),
        ),
        clean
          ? fc.constant(null)
          : fc.option(fc.constantFrom('unknown=1', 'limit=1&limit=2', 'cursor=', '%zz=1'), { freq: 4 }),
      )
      .map(([values, extra]) => {
        const search = new URLSearchParams();
        let ok = extra === null;
        values.forEach((entry, index) => {
          // A required parameter left out (an inclusion proof's eventId) is a query the document refuses.
          if (entry === null) {
            if (queryParameters[index]!.required === true) ok = false;
            return;
          }
          ok &&= entry.ok;
          const name = queryParameters[index]!.name as string;
          for (const item of Array.isArray(entry.value) ? entry.value : [entry.value])
            search.append(name, String(item));
        });
        return { query: [search.toString(), extra].filter(Boolean).join('&'), ok };
      });

    const platformOnly = operation['x-platform-key'] === 'required';
    const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
    const credential: Record<string, string> = isPublic
      ? {}
      : { 'X-API-Key': platformOnly ? server.platformAdminKey : adminKey };
    const credentialArbitrary = clean
      ? fc.constant(credential)
      : fc.oneof(
          { weight: 3, arbitrary: fc.constant<Record<string, string>>(credential) },
          { weight: 1, arbitrary: fc.constant<Record<string, string>>({}) },
          {
            weight: 2,
            arbitrary: fc.constantFrom<Record<string, string>>(
              { 'X-API-Key': `obs_${tenantId}.k_nothing.secret` },
              { Authorization: 'Bearer abc.def.ghi' },
              { Authorization: 'Basic Zm9vOmJhcg==' },
              {
                Authorization: `Basic ${Buffer.from(`${dictionary.client_id![0]}:${dictionary.client_secret![0]}`).toString('base64')}`,
              },
              { 'X-API-Key': server.platformAdminKey },
              { 'X-API-Key': adminKey, Authorization: 'Bearer abc' },
              { 'X-API-Key': 'x'.repeat(5000) },
            ),
          },
        );

    const headerArbitrary = fc
      .record({
        'If-Match': fc.option(
          fc.oneof(fc.constantFrom('"0"', '"1"', '*', 'W/"0"', '"999"'), printable(1, 12)),
          { freq: 2 },
        ),
        'If-None-Match': fc.option(fc.oneof(fc.constantFrom('"0"', '*'), printable(1, 12)), { freq: 2 }),
        'Idempotency-Key': fc.option(fc.oneof(printable(1, 24), printable(256, 300)), { freq: 2 }),
        Accept: fc.option(fc.constantFrom('application/json', 'application/x-ndjson', '*/*', 'text/html'), {
          freq: 2,
        }),
        'X-Request-Id': fc.option(printable(1, 80), { freq: 3 }),
        'Content-Encoding': fc.option(fc.constantFrom('gzip', 'identity', 'br'), { freq: 4 }),
      })
      .map((headers) =>
        Object.fromEntries(
          Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== null),
        ),
      );

    const content = operation.requestBody
      ? (deref(doc, operation.requestBody as Obj).content as Obj)
      : undefined;
    const bodyArbitrary: fc.Arbitrary<{ body?: string | Uint8Array; contentType?: string; ok: boolean }> =
      (() => {
        if (!content) return fc.constant({ ok: true });
        const types = Object.keys(content);
        const typeArbitrary = clean
          ? fc.constantFrom(...types)
          : fc.oneof(
              { weight: 3, arbitrary: fc.constantFrom(...types) },
              { weight: 1, arbitrary: fc.constantFrom(...junkContentTypes) },
            );
        const schema = (content[types[0]!] as Obj).schema as Obj | undefined;
        if (!schema) {
          // Raw bytes: images, or anything else.
          const bytes = clean
            ? fc.constantFrom(...images)
            : fc.oneof(
                fc.constantFrom(...images),
                fc.uint8Array({ maxLength: 300 }),
                // An image cut short, or with bytes changed: the decoder must refuse it, not fail.
                fc
                  .tuple(
                    fc.constantFrom(...images),
                    fc.nat(),
                    fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 })), { maxLength: 4 }),
                  )
                  .map(([image, cut, flips]) => {
                    const bytes = Uint8Array.from(image.subarray(0, Math.max(1, cut % (image.length + 1))));
                    for (const [at, value] of flips) if (bytes.length > 0) bytes[at % bytes.length] = value;
                    return bytes;
                  }),
                fc.constant(new Uint8Array(300 * 1024)),
              );
          return fc.record({ body: bytes, contentType: typeArbitrary, ok: fc.constant(true) });
        }
        const form = types.includes('application/x-www-form-urlencoded');
        const encode = (value: unknown) =>
          form && typeof value === 'object' && value !== null && !Array.isArray(value)
            ? new URLSearchParams(
                Object.entries(value).map(([k, x]): [string, string] => [k, String(x)]),
              ).toString()
            : JSON.stringify(value);
        const valid = validValue(doc, schema, options()).map((value) => ({ body: encode(value), ok: true }));
        const payload = clean
          ? valid
          : fc.oneof(
              { weight: 2, arbitrary: valid },
              {
                weight: 2,
                arbitrary: invalidObject(doc, schema, options()).map((value) => ({
                  body: encode(value),
                  ok: false,
                })),
              },
              { weight: 1, arbitrary: junkBody().map((body) => ({ body, ok: false })) },
              ...(form
                ? []
                : [
                    {
                      weight: 1,
                      arbitrary: fc
                        .constantFrom(...deepBodies.filter(({ depth }) => depth === 1000))
                        .map(({ body }) => ({ body, ok: false })),
                    },
                  ]),
              {
                weight: 1,
                arbitrary: fc.constant({ body: `{"notes":"${'x'.repeat(70 * 1024)}"}`, ok: false }),
              },
            );
        return fc.tuple(typeArbitrary, payload).map(([contentType, value]) => ({
          ...value,
          contentType,
          ok: value.ok && types.includes(contentType),
        }));
      })();

    return fc
      .record({
        path: pathArbitrary,
        query: queryArbitrary,
        credential: credentialArbitrary,
        headers: clean ? fc.constant<Record<string, string>>({}) : headerArbitrary,
        body: bodyArbitrary,
      })
      .map(({ path: filled, query, credential: chosen, headers, body }) => ({
        path: filled,
        query: query.query,
        headers: { ...chosen, ...headers, ...(body.contentType ? { 'content-type': body.contentType } : {}) },
        ...(body.body !== undefined ? { body: body.body } : {}),
        wellFormed: query.ok && body.ok && !headers['Content-Encoding'],
      }));
  };

  const check = async (method: string, path: string, generated: Generated) => {
    const url = `${server.url}${generated.path}${generated.query ? `?${generated.query}` : ''}`;
    const response = await fetch(url, {
      method,
      headers: generated.headers,
      ...(generated.body !== undefined ? { body: generated.body } : {}),
    });
    const result = await exchange(method, path, response);
    const counts = statuses.get(`${method} ${path}`) ?? new Map<number, number>();
    counts.set(result.status, (counts.get(result.status) ?? 0) + 1);
    statuses.set(`${method} ${path}`, counts);
    const sent = `${method} ${url} ${JSON.stringify(generated.headers)} ${
      typeof generated.body === 'string'
        ? generated.body.slice(0, 300)
        : `<${generated.body?.length ?? 0} bytes>`
    }`;
    const answer = `${result.status} ${result.contentType} ${result.text.slice(0, 500)}`;
    if (process.env.FUZZ_DEBUG && path.includes(process.env.FUZZ_DEBUG)) console.log(sent, '\n→', answer);
    // No server error. A 503 is no failure but the documented "not caught up yet" of a list waiting for a
    // `minPosition` the store has not reached (here: made-up positions), and it says when to retry.
    if (result.status === 503 && v.responseOf(method, path, 503)) {
      expect(response.headers.get('retry-after'), `${sent}\n→ ${answer}`).to.match(/^\d+$/);
    } else {
      expect(result.status, `${sent}\n→ ${answer}`).to.be.below(500);
    }
    expect(v.checkResponse(result), `${sent}\n→ ${answer}`).to.deep.equal([]);
    if (result.status >= 400 && path !== '/v1/oauth/token') {
      expect(mediaTypeOf(result.contentType), `${sent}\n→ ${answer}`).to.equal('application/problem+json');
    }
    if (
      generated.wellFormed &&
      result.status === 400 &&
      mediaTypeOf(result.contentType) === 'application/problem+json'
    ) {
      const errors = ((JSON.parse(result.text) as Obj).errors ?? []) as { path: string; message: string }[];
      const structural = errors.filter(
        (e) => e.message === 'is not a known field' || e.message === 'is required',
      );
      expect(
        structural,
        `a body or query the document accepts was refused: ${sent}\n→ ${answer}`,
      ).to.deep.equal([]);
    }
  };

  it('answers JSON nested 1,000 and 100,000 levels deep with 400 or 413 on every operation that takes JSON', async () => {
    const contentOf = (operation: Obj) =>
      operation.requestBody ? Object.keys(deref(doc, operation.requestBody as Obj).content as Obj) : [];
    const withJson = all().filter(({ operation }) =>
      contentOf(operation).some((type) => type.includes('json')),
    );
    expect(withJson.length).to.be.greaterThan(10);
    for (const { method, path, operation } of withJson) {
      const content = contentOf(operation);
      const platformOnly = operation['x-platform-key'] === 'required';
      const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
      const filled = path.replace(/\{(\w+)\}/g, (_, name: string) =>
        encodeURIComponent(fixtureFor(path, name)),
      );
      for (const contentType of content.filter((type) => type.includes('json'))) {
        for (const { depth, body } of deepBodies) {
          const headers: Record<string, string> = {
            'content-type': contentType,
            ...(isPublic ? {} : { 'X-API-Key': platformOnly ? server.platformAdminKey : adminKey }),
          };
          const result = {
            method,
            path,
            ...(await sendRaw(`${server.url}${filled}`, method, headers, body)),
          };
          const what = `${method} ${path} as ${contentType}, ${depth} deep: ${result.status} ${result.text.slice(0, 300)}`;
          expect([400, 413], what).to.include(result.status);
          expect(v.checkResponse(result), what).to.deep.equal([]);
        }
      }
    }
  });

  /**
   * Ids named like properties of Object.prototype: each path parameter of each operation in turn, the others
   * naming real resources, with a credential that may call it. A lookup on a plain object would find
   * something there (a phantom `WebhookDeleted`, a 500); they name nothing, and nothing is written.
   */
  it('answers 404 to prototype names as ids in every path parameter, and writes nothing', async () => {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
    const head = await server.stores.eventStore.headPosition();
    let tried = 0;
    for (const { method, path, operation } of all()) {
      const parameters = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
      const platformOnly = operation['x-platform-key'] === 'required';
      for (const parameter of parameters) {
        for (const name of names) {
          const filled = path.replace(/\{(\w+)\}/g, (_, other: string) =>
            encodeURIComponent(other === parameter ? name : fixtureFor(path, other)),
          );
          const response = await fetch(`${server.url}${filled}`, {
            method,
            headers: { 'X-API-Key': platformOnly ? server.platformAdminKey : adminKey },
          });
          const result = await exchange(method, path, response);
          const what = `${method} ${filled}: ${result.status} ${result.text.slice(0, 300)}`;
          // Bodiless: a route that needs a body may refuse it first (400, 415); never a success or a 5xx.
          if (method === 'GET' || method === 'DELETE') expect(result.status, what).to.equal(404);
          else expect([400, 404, 415], what).to.include(result.status);
          expect(v.checkResponse(result), what).to.deep.equal([]);
          tried += 1;
        }
      }
    }
    expect(tried).to.be.greaterThan(50);
    // Only the background work of the fixtures (deliveries, CV jobs) may have written since.
    const written = (
      await server.stores.eventStore.readAll({ after: head, maxCount: 10_000, filter: { tenantId } })
    ).events.filter((event) => !/^(delivery|cvjob)-/.test(event.streamName));
    expect(written.map((event) => `${event.type} ${event.streamName}`)).to.deep.equal([]);
  });

  /**
   * Dates that are not in the calendar, in every date-time query parameter and top-level body field of every
   * operation: February 30, April 31, February 29 of a common year. Each is refused with 400 naming it.
   */
  it('refuses dates like February 30 in every date-time parameter and field with 400 naming it', async () => {
    const impossible = ['2026-02-30T10:00:00Z', '2026-04-31T10:00:00Z', '2025-02-29T00:00:00+02:00'];
    const isDateTime = (schema: Obj | undefined): boolean => {
      if (!schema) return false;
      const resolved = deref(doc, schema);
      if (resolved.format === 'date-time') return true;
      const branches = (resolved.oneOf ?? resolved.anyOf ?? []) as Obj[];
      return branches.some((branch) => isDateTime(branch));
    };
    let tried = 0;
    for (const { method, path, operation } of all()) {
      if (destructive(method, path)) continue;
      const platformOnly = operation['x-platform-key'] === 'required';
      const headers: Record<string, string> = {
        'X-API-Key': platformOnly ? server.platformAdminKey : adminKey,
      };
      const filled = path.replace(/\{(\w+)\}/g, (_, name: string) =>
        encodeURIComponent(fixtureFor(path, name)),
      );
      const parameters = ((operation.parameters ?? []) as Obj[]).map((p) => deref(doc, p));
      for (const parameter of parameters.filter((p) => p.in === 'query' && isDateTime(p.schema as Obj))) {
        for (const date of impossible) {
          const url = `${server.url}${filled}?${parameter.name as string}=${encodeURIComponent(date)}`;
          const result = await exchange(method, path, await fetch(url, { method, headers }));
          const what = `${method} ${url}: ${result.status} ${result.text.slice(0, 300)}`;
          expect(result.status, what).to.equal(400);
          const errors = (JSON.parse(result.text) as Obj).errors as { path: string }[];
          expect(
            errors.map((error) => error.path),
            what,
          ).to.include(parameter.name);
          tried += 1;
        }
      }
      const content = operation.requestBody
        ? (deref(doc, operation.requestBody as Obj).content as Obj)
        : undefined;
      const schema = content?.['application/json']?.schema as Obj | undefined;
      const properties = schema ? ((deref(doc, schema).properties ?? {}) as Obj) : {};
      for (const [field, fieldSchema] of Object.entries(properties)) {
        if (!isDateTime(fieldSchema as Obj)) continue;
        const [valid] = fc.sample(validValue(doc, schema!, options()), { numRuns: 1, seed });
        for (const date of impossible) {
          const body = JSON.stringify({ ...(valid as Obj), [field]: date });
          const result = await exchange(
            method,
            path,
            await fetch(`${server.url}${filled}`, {
              method,
              headers: { ...headers, 'content-type': 'application/json' },
              body,
            }),
          );
          const what = `${method} ${filled} ${body}: ${result.status} ${result.text.slice(0, 300)}`;
          expect(result.status, what).to.equal(400);
          const errors = (JSON.parse(result.text) as Obj).errors as { path: string }[];
          expect(
            errors.map((error) => error.path),
            what,
          ).to.include(field);
          expect(v.checkResponse(result), what).to.deep.equal([]);
          tried += 1;
        }
      }
    }
    expect(tried).to.be.greaterThan(10);
  });

  // Destructive operations last, so the others keep finding their resources.
  const destructive = (method: string, path: string) => method === 'DELETE' || path.endsWith('/disable');
  const all = () => documentedOperations(doc);

  it('never answers 5xx, and answers only what the document declares, for every operation', async () => {
    const ordered = [...all()].sort(
      (a, b) => Number(destructive(a.method, a.path)) - Number(destructive(b.method, b.path)),
    );
    let index = 0;
    for (const { method, path, operation } of ordered) {
      index += 1;
      await fc.assert(
        fc.asyncProperty(requestFor(path, operation), (generated) => check(method, path, generated)),
        { numRuns: runsPerOperation, seed: seed + index, endOnFailure: true },
      );
    }
    expect(statuses.size).to.equal(all().length);
  });
});
