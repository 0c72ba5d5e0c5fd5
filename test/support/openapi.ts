import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument, type OpenApiDocument } from '../../src/openapi/document.js';
import { freePort } from './process.js';

/**
 * Validating HTTP exchanges against the OpenAPI document with Ajv (JSON Schema 2020-12, as OpenAPI 3.1
 * uses it) and ajv-formats. The document's `#/components/schemas/X` references are rewritten to one schema
 * resource holding them all, so each operation's schemas compile on their own.
 */

// CommonJS modules: their `module.exports` is the class (the plugin), and `.default` the same again.
const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = Record<string, any>;

const componentsId = 'https://observation-service.test/components.json';
const rewrite = <T>(value: T): T =>
  JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', `"${componentsId}#/$defs/`)) as T;

/** A `#/components/...` reference, resolved; anything else as it is. */
export const deref = (doc: Obj, value: Obj): Obj => {
  const pointer = typeof value.$ref === 'string' ? value.$ref : undefined;
  if (!pointer?.startsWith('#/')) return value;
  return pointer
    .slice(2)
    .split('/')
    .reduce((node: Obj, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
};

export const mediaTypeOf = (contentType: string | null | undefined) =>
  (contentType ?? '').split(';')[0]!.trim().toLowerCase();

export interface Exchange {
  method: string;
  /** The document's path template (`/v1/tenants/{tenantId}/observations/{id}`). */
  path: string;
  status: number;
  contentType: string | null;
  /** The body as text. */
  text: string;
  /** The response's headers, when there is a response to check them on. */
  headers?: Headers;
}

export const openApiValidator = (doc: Obj) => {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  // A GeoJSON ring closes: its last position repeats the first (src/locations/openapi.ts).
  ajv.addKeyword({
    keyword: 'x-closed-ring',
    type: 'array',
    schemaType: 'boolean',
    validate: (closed: boolean, ring: unknown[]) =>
      !closed || ring.length === 0 || JSON.stringify(ring[0]) === JSON.stringify(ring.at(-1)),
  });
  ajv.addSchema({ $id: componentsId, $defs: rewrite(doc.components.schemas) });
  const compiled = new Map<string, ValidateFunction>();

  const compile = (schema: Obj): ValidateFunction => {
    const key = JSON.stringify(schema);
    const known = compiled.get(key);
    if (known) return known;
    const validate = ajv.compile(rewrite(schema));
    compiled.set(key, validate);
    return validate;
  };

  /** Errors of a value against a schema of the document; empty when it is valid. */
  const errorsOf = (schema: Obj, value: unknown): string[] => {
    const validate = compile(schema);
    return validate(value)
      ? []
      : (validate.errors ?? []).map(
          (e) => `${e.instancePath || '(body)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
        );
  };

  const operationOf = (method: string, path: string): Obj => {
    const operation = doc.paths[path]?.[method.toLowerCase()] as Obj | undefined;
    if (!operation) throw new Error(`The document has no operation ${method} ${path}`);
    return operation;
  };

  /** The response object the document declares for the status (or `default`), resolved. */
  const responseOf = (method: string, path: string, status: number): Obj | undefined => {
    const responses = operationOf(method, path).responses as Obj;
    const declared = (responses[String(status)] ?? responses[`${String(status)[0]}XX`]) as Obj | undefined;
    return declared ? deref(doc, declared) : undefined;
  };

  /** Every declared header the response sends that does not match its schema (an ETag's pattern, say). */
  const headerErrors = ({ method, path, status, headers }: Exchange, response: Obj): string[] =>
    Object.entries((response.headers ?? {}) as Obj).flatMap(([name, declared]) => {
      const header = deref(doc, declared as Obj);
      const value = headers?.get(name);
      if (value === null || value === undefined) return [];
      return errorsOf(header.schema as Obj, value).map(
        (error) => `${method} ${path} ${status} header ${name} ${JSON.stringify(value)}: ${error}`,
      );
    });

  /**
   * Everything wrong with a response: a status the operation does not declare, a media type it does not
   * declare for that status, a declared header that does not match its schema, or a body that does not
   * match the schema. Empty when it conforms.
   */
  const checkResponse = (exchanged: Exchange): string[] => {
    const { method, path, status } = exchanged;
    const response = responseOf(method, path, status);
    if (!response) return [`${method} ${path} does not declare the status ${status}`];
    const wrongHeaders = headerErrors(exchanged, response);
    return [...wrongHeaders, ...checkBody(exchanged, response)];
  };

  const checkBody = ({ method, path, status, contentType, text }: Exchange, response: Obj): string[] => {
    const content = response.content as Obj | undefined;
    if (!content) {
      return text === ''
        ? []
        : [`${method} ${path} ${status} declares no body, but one was sent: ${text.slice(0, 200)}`];
    }
    const type = mediaTypeOf(contentType);
    const media = content[type] as Obj | undefined;
    if (!media) return [`${method} ${path} ${status} does not declare the media type ${type || '(none)'}`];
    if (!media.schema) return [];
    if (type === 'application/json' || type.endsWith('+json')) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return [`${method} ${path} ${status}: the body is not JSON: ${text.slice(0, 200)}`];
      }
      return errorsOf(media.schema as Obj, body).map((error) => `${method} ${path} ${status}: ${error}`);
    }
    return errorsOf(media.schema as Obj, text).map((error) => `${method} ${path} ${status}: ${error}`);
  };

  return {
    errorsOf,
    operationOf,
    responseOf,
    checkResponse,
    schema: (name: string) => ({ $ref: `#/components/schemas/${name}` }),
  };
};

export type OpenApiValidator = ReturnType<typeof openApiValidator>;

/** The document as a test server serves it. */
export const documentFor = (publicUrl: string): OpenApiDocument => openApiDocument({ publicUrl });

/** Every (method, path template) the document describes. */
export const documentedOperations = (doc: Obj): { method: string; path: string; operation: Obj }[] =>
  Object.entries(doc.paths as Obj).flatMap(([path, item]) =>
    Object.entries(item as Obj)
      .filter(([method]) => ['get', 'put', 'post', 'patch', 'delete'].includes(method))
      .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation: operation as Obj })),
  );

/** A real response, read as text, for `checkResponse`. */
export const exchange = async (method: string, path: string, response: Response): Promise<Exchange> => ({
  method,
  path,
  status: response.status,
  contentType: response.headers.get('content-type'),
  text: Buffer.from(await response.arrayBuffer()).toString('utf8'),
  headers: response.headers,
});

/** One thing prism found wrong with an exchange: where, and what. */
export interface PrismViolation {
  exchange: string;
  violation: string;
}

/** Prism's own answers (a request it refused, a response it found wrong) are problems of this type family. */
const prismErrorType = 'https://stoplight.io/prism/errors#';

/**
 * What prism's validating proxy says about one exchange: its `sl-violations` header, and, with `--errors`,
 * the error it answered in the service's place (a request or response that breaks the document).
 */
export const prismViolations = (
  exchangeName: string,
  response: { headers: Headers; contentType: string | null; text: string },
): PrismViolation[] => {
  const found: PrismViolation[] = [];
  const header = response.headers.get('sl-violations');
  if (header) {
    for (const violation of JSON.parse(header) as Obj[])
      found.push({ exchange: exchangeName, violation: JSON.stringify(violation) });
  }
  // With `--errors` the same violations come back as prism's error body too: counted once.
  if (!header && response.text.includes(prismErrorType)) {
    let body: Obj | undefined;
    try {
      body = JSON.parse(response.text) as Obj;
    } catch {
      body = undefined;
    }
    if (typeof body?.type === 'string' && body.type.startsWith(prismErrorType)) {
      const details = (body.validation as Obj[] | undefined) ?? [{ detail: body.detail }];
      for (const detail of details)
        found.push({
          exchange: exchangeName,
          violation: `${body.type}: ${JSON.stringify(detail)}`,
        });
    }
  }
  return found;
};

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `prism proxy --errors` (@stoplight/prism-cli) in front of a service on loopback: it forwards each request
 * to `upstream` and checks the request and the response against the document in `documentFile`. It listens
 * on 127.0.0.1, and is given no HTTP proxy, so it reaches nothing but the upstream. `stop` kills it by PID.
 */
export const startPrismProxy = async (documentFile: string, upstream: string) => {
  const port = await freePort();
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(https?|all|no)_proxy$/i.test(name)),
  );
  const child = spawn(
    join(root, 'node_modules', '.bin', 'prism'),
    [
      'proxy',
      '--errors',
      '--cors=false',
      documentFile,
      upstream,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
    ],
    { env: { ...env, NO_PROXY: '*' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (!output.includes('Prism is listening')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      throw new Error(`prism did not start: ${output.slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
      await exited;
    },
  };
};
