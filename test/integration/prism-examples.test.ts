import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { exampleEventId } from '../../src/audit/digests.openapi.js';
import { exampleIds } from '../../src/openapi/components.js';
import { digestNow } from '../support/digests.js';
import { testImage } from '../support/images.js';
import {
  deref,
  documentedOperations,
  prismViolations,
  startPrismProxy,
  type PrismViolation,
} from '../support/openapi.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTestServer, type TestServer } from '../support/server.js';

type Obj = Record<string, any>;

/** Operations whose examples create what later examples name, in the order they must run. */
const first = [
  'createTenant',
  'createUser',
  'login',
  'refreshLogin',
  'createApiKey',
  'createOAuthClient',
  'oauthToken',
  'createLocation',
  'createVisit',
  'createObservation',
  'uploadMedia',
  'createCvJob',
  'createWebhook',
  'sendWebhookTest',
];
/** Operations whose examples end what other examples use: last, in this order. */
const last = [
  'submitVisit',
  'disableUser',
  'revokeApiKey',
  'revokeOAuthClient',
  'deleteLocation',
  'deleteWebhook',
];

/**
 * Every operation's example request, sent as the document gives it, through prism's validating proxy, to a
 * real service: each must get a success status the operation documents, with no violation. The examples
 * name resources by the ids of `exampleIds`; the test puts in their place the ids of the resources the
 * examples before created (the tenant of createTenant's example, its location, …), as a client would.
 */
describe('every operation’s example, sent as it is through prism', function () {
  this.timeout(120_000);
  let server: TestServer;
  let prism: Awaited<ReturnType<typeof startPrismProxy>>;
  let receiver: Receiver;
  let dir: string;
  let doc: Obj;

  before(async () => {
    server = await startTestServer({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    receiver = await startReceiver('not-used-by-this-test');
    dir = mkdtempSync(join(tmpdir(), 'prism-examples-'));
    const text = await (await fetch(`${server.url}/v1/openapi.json`)).text();
    doc = JSON.parse(text) as Obj;
    const file = join(dir, 'openapi.json');
    writeFileSync(file, text);
    prism = await startPrismProxy(file, server.url);
  });

  after(async () => {
    await prism?.stop();
    await receiver?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gives every request body an example', () => {
    const missing = documentedOperations(doc).flatMap(({ method, path, operation }) =>
      Object.entries(((operation.requestBody as Obj | undefined)?.content ?? {}) as Obj)
        // Bytes (an image upload) have no example to write in JSON: the test below sends a real image.
        .filter(
          ([, media]) =>
            (media as Obj).schema &&
            (media as Obj).schema.format !== 'binary' &&
            (media as Obj).example === undefined,
        )
        .map(([type]) => `${method} ${path} ${type}`),
    );
    expect(missing).to.deep.equal([]);
  });

  it('gets a documented success for every example, with no violation', async () => {
    const operations = documentedOperations(doc);
    const byId = new Map(operations.map((op) => [op.operation.operationId as string, op]));
    const middle = operations
      .map((op) => op.operation.operationId as string)
      .filter((id) => !first.includes(id) && !last.includes(id));
    const order = [...first, ...middle, ...last];
    expect([...order].sort()).to.deep.equal([...byId.keys()].sort());

    /** Example values -> the real ones of this run. */
    const real = new Map<string, string>();
    const oauthExample = doc.paths['/v1/oauth/token'].post.requestBody.content[
      'application/x-www-form-urlencoded'
    ].example as Obj;
    const refreshExample = deref(doc, doc.paths['/v1/auth/refresh'].post.requestBody as Obj).content[
      'application/json'
    ].example as Obj;
    real.set('https://example.com/hooks', receiver.url);
    const substitute = <T>(value: T): T => {
      let text = JSON.stringify(value);
      // Longest first: a refresh token or client id holds the tenant's id, whose turn comes after.
      const pairs = [...real].sort(([a], [b]) => b.length - a.length);
      for (const [example, actual] of pairs) text = text.split(example).join(actual);
      return JSON.parse(text) as T;
    };
    /** The id of the kind `id` names (by its prefix), as the examples write it. */
    const exampleIdOf = (id: string) =>
      Object.values(exampleIds).find((example) => example.slice(0, 2) === id.slice(0, 2));
    let adminKey = '';
    const violations: PrismViolation[] = [];
    const failures: string[] = [];

    const send = async (operationId: string) => {
      const { method, path, operation } = byId.get(operationId)!;
      const parameters = ((operation.parameters ?? []) as Obj[]).map((parameter) => deref(doc, parameter));
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const parameter = parameters.find((p) => p.in === 'path' && p.name === name);
        if (parameter?.example === undefined) throw new Error(`${operationId}: {${name}} has no example`);
        return encodeURIComponent(substitute(parameter.example as string));
      });
      const query = new URLSearchParams();
      for (const parameter of parameters.filter((p) => p.in === 'query' && p.example !== undefined)) {
        const values = Array.isArray(parameter.example)
          ? (parameter.example as unknown[])
          : [parameter.example];
        for (const value of values) query.append(parameter.name as string, String(substitute(value)));
      }
      const headers: Record<string, string> = {};
      if (operation['x-platform-key'] === 'required') headers['X-API-Key'] = server.platformAdminKey;
      else if ((operation.security as unknown[]).length > 0) headers['X-API-Key'] = adminKey;
      let body: string | Buffer | undefined;
      const content = deref(doc, (operation.requestBody as Obj | undefined) ?? {}).content as Obj | undefined;
      if (operationId === 'uploadMedia') {
        // An image: no example to send, and prism garbles bytes (see prism-proxy.test.ts), so it goes to
        // the service directly.
        const response = await fetch(`${server.url}${url}`, {
          method,
          headers: { ...headers, 'content-type': 'image/png' },
          body: await testImage({ width: 32, height: 24, format: 'png' }),
        });
        const medium = (await response.json()) as Obj;
        expect(response.status, JSON.stringify(medium)).to.equal(201);
        real.set(exampleIds.media, medium.id as string);
        return;
      }
      if (content) {
        const [type, media] = Object.entries(content)[0] as [string, Obj];
        const example = substitute(media.example as Obj);
        headers['content-type'] = type;
        body =
          type === 'application/x-www-form-urlencoded'
            ? new URLSearchParams(example as Record<string, string>).toString()
            : JSON.stringify(example);
      }
      const target = `${url}${query.size > 0 ? `?${query.toString()}` : ''}`;
      const response = await fetch(`${prism.url}${target}`, { method, headers, ...(body ? { body } : {}) });
      const text = await response.text();
      violations.push(
        ...prismViolations(`${operationId} ${method} ${target} ${response.status}`, {
          headers: response.headers,
          contentType: response.headers.get('content-type'),
          text,
        }),
      );
      const documented = Object.keys(operation.responses as Obj).filter((status) => /^2\d\d$/.test(status));
      if (!documented.includes(String(response.status)))
        failures.push(`${operationId} ${method} ${target}: ${response.status} ${text.slice(0, 300)}`);
      const answer =
        /json/.test(response.headers.get('content-type') ?? '') &&
        !/ndjson/.test(response.headers.get('content-type') ?? '')
          ? (JSON.parse(text) as Obj)
          : undefined;
      if (!answer || response.status >= 300) return;
      // What the next examples name: the resources this one created, and the credentials it handed out.
      if ((response.status === 201 || response.status === 202) && typeof answer.id === 'string') {
        const example = exampleIdOf(answer.id);
        if (example) real.set(example, answer.id);
      }
      if (typeof answer.adminApiKey === 'string') adminKey = answer.adminApiKey;
      if (typeof answer.clientSecret === 'string')
        real.set(oauthExample.client_secret as string, answer.clientSecret);
      if (typeof answer.refreshToken === 'string')
        real.set(refreshExample.refreshToken as string, answer.refreshToken);
      if (operationId === 'sendWebhookTest') real.set(exampleIds.delivery, answer.deliveryId as string);
    };

    for (const operationId of order) {
      // The audit examples need a signed digest, and an event of the tenant for the inclusion proof.
      if (operationId === middle[0]) {
        const tenantId = real.get(exampleIds.tenant)!;
        await digestNow(server, tenantId);
        const [event] = (await server.stores.eventStore.readAll({ maxCount: 1, filter: { tenantId } }))
          .events;
        real.set(exampleEventId, event!.id);
      }
      await send(operationId);
    }
    expect(failures).to.deep.equal([]);
    expect(violations.map((v) => `${v.exchange}: ${v.violation}`)).to.deep.equal([]);
  });
});
